/** The Grafana dashboard's PromQL (deploy/grafana/telastic.json), for the tests that check it. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './agents';

export const DASHBOARD = path.join(ROOT, 'deploy', 'grafana', 'telastic.json');

interface Panel { targets?: { expr?: string }[]; panels?: Panel[] }

/** Every query of the dashboard: its panels' expressions and its variables' label_values(). */
export function dashboardQueries(file = DASHBOARD): string[] {
  const d = JSON.parse(readFileSync(file, 'utf8')) as { panels: Panel[]; templating: { list: { type: string; query?: { query?: string } }[] } };
  const walk = (ps: Panel[]): string[] => ps.flatMap((p) => [...(p.targets ?? []).map((t) => t.expr ?? ''), ...walk(p.panels ?? [])]);
  const vars = d.templating.list.filter((v) => v.type === 'query').map((v) => v.query?.query ?? '');
  return [...walk(d.panels), ...vars];
}

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset']);

/**
 * The metric names an expression reads: identifiers left once strings, label matchers, ranges
 * and grouping clauses are taken out, less functions (followed by `(`) and keywords. A typo in
 * a name stays a name here, so a check against the registry catches it.
 */
export function metricsOf(expr: string): string[] {
  const lv = /^label_values\(\s*([a-zA-Z_:][\w:]*)\s*,/.exec(expr);
  if (lv) return [lv[1]];
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/[a-zA-Z_:][\w:]*(\s*\()?/g)) {
    if (m[1] || KEYWORDS.has(m[0])) continue;
    names.add(m[0]);
  }
  return [...names];
}

/** A histogram's series name to its family name (telastic_x_bucket → telastic_x). */
export function familyOf(name: string, histograms: ReadonlySet<string>): string {
  const base = name.replace(/_(bucket|count|sum)$/, '');
  return histograms.has(base) ? base : name;
}

/** The expression with Grafana's variables filled in, for a real Prometheus to evaluate. */
export function withVariables(expr: string): string {
  return expr.replace(/\$__rate_interval|\$__range|\$__interval/g, '1m').replace(/\$\{?\w+\}?/g, '.*');
}
