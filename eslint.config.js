// Lint: floating promises are errors everywhere; no import cycles; workflow code (every module
// bundled into workflows, found from the bundle's entry points) may not import Node built-ins or
// I/O modules (it must stay deterministic and replayable).
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');
const importX = require('eslint-plugin-import-x');
const ts = require('typescript');
const fs = require('node:fs');
const { builtinModules } = require('node:module');
const path = require('node:path');

/** What the workflow bundler starts from (scripts/bundle-workflows.ts). */
const WORKFLOW_ENTRIES = ['workflows/index.ts', 'src/temporal/failure-converter-sealed.ts'];

/** The specifiers a file imports as values: type-only imports never reach the bundle. */
function valueImports(file) {
  const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  const allTypes = (named) => named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
  const out = [];
  for (const st of sf.statements) {
    if (ts.isImportDeclaration(st)) {
      const c = st.importClause;
      const typeOnly = c && (c.isTypeOnly || (!c.name && c.namedBindings && ts.isNamedImports(c.namedBindings) && allTypes(c.namedBindings)));
      if (!typeOnly) out.push(st.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(st) && st.moduleSpecifier) {
      const typeOnly = st.isTypeOnly || (st.exportClause && ts.isNamedExports(st.exportClause) && allTypes(st.exportClause));
      if (!typeOnly) out.push(st.moduleSpecifier.text);
    }
  }
  return out;
}

/** This project's files the workflow bundle holds, relative to here: the entries and what they import. */
function workflowModules() {
  const seen = new Set();
  const todo = WORKFLOW_ENTRIES.map((f) => path.join(__dirname, f));
  while (todo.length) {
    const file = todo.pop();
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of valueImports(file)) {
      if (!spec.startsWith('.')) continue; // packages: the banned list below
      const base = path.resolve(path.dirname(file), spec);
      const hit = [`${base}.ts`, path.join(base, 'index.ts')].find((f) => fs.existsSync(f));
      if (hit) todo.push(hit);
    }
  }
  return [...seen].map((f) => path.relative(__dirname, f));
}

// Every Node built-in (fs/promises, util, stream, tls… included) and the I/O packages we depend on.
const builtins = builtinModules.filter((m) => !m.startsWith('_'));
const banned = [...builtins, ...builtins.map((m) => `node:${m}`), 'pg', 'pino', 'pino-pretty', 'proper-lockfile', 'commander', '@electric-sql/pglite', '@electric-sql/pglite-socket', '@temporalio/activity', '@temporalio/client', '@temporalio/worker'];

module.exports = tseslint.config(
  { ignores: ['lib/**', 'node_modules/**', '.venv/**', '**/*.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: __dirname } },
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [importX.createNodeResolver({ extensions: ['.ts', '.js', '.json'] })],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-require-imports': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-empty': ['error', { allowEmptyCatch: true }],
      // Layers import downwards only (cli → agent → client → job…); type-only imports are exempt.
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  {
    files: ['workflows/**/*.ts', ...workflowModules()],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { paths: banned.map((name) => ({ name, allowTypeImports: true, message: 'workflow code must be deterministic: do I/O in activities' })) }],
    },
  },
);
