/**
 * Every query of the Grafana dashboard (deploy/grafana/telastic.json) reads metrics the code
 * registers. Its temporal_* names are checked against a real scrape of the SDK's exporter, and
 * every expression is evaluated by a real Prometheus, in test/e2e/metrics-prometheus.test.ts.
 */
import { createMetrics, metricNames } from '../../src/metrics/registry';
import { dashboardQueries, familyOf, metricsOf } from '../../test-support/dashboard';

test('the dashboard reads only metric names the registry exports (telastic_*), the SDK\'s (temporal_*) or Prometheus\'s up', async () => {
  const m = createMetrics();
  const registered = new Set(await metricNames(m));
  const histograms = new Set((await m.registry.getMetricsAsJSON()).filter((f) => String(f.type) === 'histogram').map((f) => f.name));
  const queries = dashboardQueries();
  expect(queries.length).toBeGreaterThan(15);
  const unknown: string[] = [];
  for (const q of queries) {
    const names = metricsOf(q);
    expect(names.length).toBeGreaterThan(0); // a query that reads nothing is a broken one
    for (const n of names) if (!(n === 'up' || n.startsWith('temporal_') || registered.has(familyOf(n, histograms)))) unknown.push(`${n} in ${q}`);
  }
  expect(unknown).toEqual([]);
});

test('every telastic_job_*, telastic_pool_* and telastic_agent_* family is on the dashboard', async () => {
  const used = new Set(dashboardQueries().flatMap(metricsOf).map((n) => n.replace(/_(bucket|count|sum)$/, '')));
  const ours = (await metricNames(createMetrics())).filter((n) => /^telastic_(job|pool|agent)_/.test(n));
  expect(ours.filter((n) => !used.has(n))).toEqual([]);
});

test('the parser finds names, not functions, labels, keywords or variables', () => {
  expect(metricsOf('histogram_quantile(0.95, sum by (le, job_id) (rate(telastic_job_recovery_seconds_bucket{job_id=~"$job_id"}[$__range])))')).toEqual(['telastic_job_recovery_seconds_bucket']);
  expect(metricsOf('sum(rate(a_total[1h])) / sum by (x) (b_total) and on (x) c == bool 1')).toEqual(['a_total', 'b_total', 'c']);
  expect(metricsOf('label_values(telastic_job_state, job_id)')).toEqual(['telastic_job_state']);
  expect(metricsOf('max(telastik_job_world_size)')).toEqual(['telastik_job_world_size']); // a typo is still a name
});
