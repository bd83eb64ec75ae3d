/** `--metrics-port` / `--metrics-host` and their variables (src/cli/metrics-options.ts). */
import { compileMetricsOptions } from '../../src/cli/metrics-options';

test('no port: no endpoint', () => {
  expect(compileMetricsOptions({}, {})).toBeNull();
});

test('the flag beats the variable; the host defaults to every interface', () => {
  expect(compileMetricsOptions({ metricsPort: '9464' }, { TELASTIC_METRICS_PORT: '1' })).toEqual({ port: 9464, host: '0.0.0.0', intervalMs: 5000, maxJobs: 200 });
  expect(compileMetricsOptions({}, { TELASTIC_METRICS_PORT: '9000', TELASTIC_METRICS_HOST: '127.0.0.1', TELASTIC_METRICS_INTERVAL: '0.5', TELASTIC_METRICS_MAX_JOBS: '10' })).toEqual({ port: 9000, host: '127.0.0.1', intervalMs: 500, maxJobs: 10 });
});

test.each([
  [{ metricsPort: 'http' }, {}, '--metrics-port http: expected a port from 0 to 65535'],
  [{ metricsPort: '70000' }, {}, '--metrics-port 70000: expected a port from 0 to 65535'],
  [{}, { TELASTIC_METRICS_PORT: '9.5' }, 'TELASTIC_METRICS_PORT 9.5: expected a port from 0 to 65535'],
  [{ metricsHost: '127.0.0.1' }, {}, '--metrics-host: only with --metrics-port'],
  [{ metricsPort: '1' }, { TELASTIC_METRICS_INTERVAL: '0' }, 'TELASTIC_METRICS_INTERVAL 0: expected seconds from 0.1 to 3600'],
])('bad input is one line naming it: %j %j', (flags, env, message) => {
  expect(() => compileMetricsOptions(flags, env)).toThrow(message);
});

test('telastic run reads them before SCRIPT; after SCRIPT they are the script\'s', () => {
  const { parseRunArgs } = require('../../src/cli/run-options') as typeof import('../../src/cli/run-options');
  const sys = { cpuCount: 2, hostname: 'h', pid: 1, randomId: () => 'r' };
  expect(parseRunArgs(['--metrics-port', '9100', '--metrics-host', '127.0.0.1', 'train.py'], {}, sys).metrics).toEqual({ port: 9100, host: '127.0.0.1', intervalMs: 5000, maxJobs: 200 });
  const o = parseRunArgs(['train.py', '--metrics-port', '9100'], {}, sys);
  expect(o.metrics).toBeNull();
  expect(o.entrypoint.args).toEqual(['--metrics-port', '9100']);
  expect(() => parseRunArgs(['--metrics-port', 'x', 'train.py'], {}, sys)).toThrow('--metrics-port x: expected a port from 0 to 65535');
});
