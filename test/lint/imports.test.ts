/**
 * What eslint.config.js promises about imports, checked against the code itself: no cycles,
 * even through type-only imports (import-x/no-cycle skips those); inner layers never import the
 * CLI, tests never import the benchmarks; and every project file the workflow bundle holds is
 * under the workflow-determinism rule.
 */
import { bundleWorkflowCode } from '@temporalio/worker';
import { ESLint, type Linter } from 'eslint';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { ROOT } from '../../test-support/agents';

const DIRS = ['src', 'activities', 'workflows', 'scripts', 'bench', 'test-support', 'test'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'fixtures' ? [] : sources(p);
    return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
  });
}

/** Each file's project imports, type-only ones included, as absolute paths. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of DIRS.flatMap((d) => sources(path.join(ROOT, d)))) {
    const deps = ts.preProcessFile(readFileSync(file, 'utf8'), true, false).importedFiles.flatMap(({ fileName }) => {
      if (!fileName.startsWith('.')) return [];
      const base = path.resolve(path.dirname(file), fileName);
      return [`${base}.ts`, path.join(base, 'index.ts')].filter((f) => existsSync(f)).slice(0, 1);
    });
    graph.set(file, deps);
  }
  return graph;
}

/** Strongly connected components of more than one file (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      component.push(path.relative(ROOT, w));
    } while (w !== v);
    if (component.length > 1) out.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

const rel = (f: string) => path.relative(ROOT, f);

describe('imports', () => {
  const graph = importGraph();

  test('the graph is read (a broken walk would find no cycles either)', () => {
    expect(graph.get(path.join(ROOT, 'src/cli/run.ts'))).toContain(path.join(ROOT, 'src/agent/runtime.ts'));
    expect(cycles(new Map([['a', ['b']], ['b', ['a']], ['c', ['a']]]))).toEqual([['a', 'b']]);
  });

  test('no import cycles, type-only imports included', () => {
    expect(cycles(graph)).toEqual([]);
  });

  test('only the CLI imports src/cli, and no test imports bench/', () => {
    const wrong = [...graph].flatMap(([file, deps]) =>
      deps
        .filter((d) => (rel(d).startsWith('src/cli/') && !rel(file).startsWith('src/cli/') && !rel(file).startsWith('test/')) || (rel(d).startsWith('bench/') && !rel(file).startsWith('bench/')))
        .map((d) => `${rel(file)} → ${rel(d)}`),
    );
    expect(wrong).toEqual([]);
  });
});

describe('workflow lint coverage', () => {
  test('every project file in the workflow bundle is under the determinism rule', async () => {
    const bundled = new Set<string>();
    // The bundler's own module list, so that nothing the walk in eslint.config.js misses slips by.
    await bundleWorkflowCode({
      workflowsPath: path.join(ROOT, 'workflows'),
      failureConverterPath: path.join(ROOT, 'src/temporal/failure-converter-sealed.ts'),
      logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
      webpackConfigHook: (config) => ({
        ...config,
        plugins: [
          ...(config.plugins ?? []),
          {
            apply(compiler) {
              compiler.hooks.afterCompile.tap('record-modules', (compilation) => {
                for (const m of compilation.modules) {
                  const file = (m as { resource?: string }).resource;
                  if (file?.endsWith('.ts') && !file.includes(`${path.sep}node_modules${path.sep}`) && file.startsWith(ROOT)) bundled.add(file);
                }
              });
            },
          },
        ],
      }),
    });
    expect([...bundled].map(rel)).toEqual(expect.arrayContaining(['workflows/index.ts', 'src/job/decide.ts', 'src/pool/decide.ts', 'src/ledger/derive.ts']));
    // The config given rather than found: ESLint loads a found one with import(), which jest's sandbox lacks.
    const eslint = new ESLint({ cwd: ROOT, overrideConfigFile: true, overrideConfig: require(path.join(ROOT, 'eslint.config.js')) as Linter.Config[] });
    const uncovered: string[] = [];
    for (const file of bundled) {
      const config = (await eslint.calculateConfigForFile(file)) as { rules?: Record<string, unknown> };
      const rule = config.rules?.['@typescript-eslint/no-restricted-imports'] as [unknown, { paths: { name: string }[] }] | undefined;
      const names = rule?.[1]?.paths.map((p) => p.name) ?? [];
      if (!['node:fs', 'fs/promises', 'util', 'stream', 'tls'].every((n) => names.includes(n))) uncovered.push(rel(file));
    }
    expect(uncovered).toEqual([]);
  }, 120_000);
});
