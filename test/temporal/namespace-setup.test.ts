/** The pure decisions of `telastic setup` and the controller's check: states, lines, retention. */
import { compareAttributes, formatRetention, lacksLine, refusedLine } from '../../src/temporal/namespace-setup';

// IndexedValueType numbers: 1 Text, 2 Keyword, 3 Int.
const ALL = { TelasticState: 2, TelasticWorldSize: 3, TelasticRound: 3, TelasticRestarts: 3 };

test('compareAttributes: registered, missing, and registered with another type (named by the CLI type)', () => {
  expect(compareAttributes(ALL).map((a) => a.state)).toEqual(['registered', 'registered', 'registered', 'registered']);
  expect(compareAttributes(undefined).map((a) => `${a.name} (${a.type}) ${a.state}`)).toEqual([
    'TelasticState (Keyword) missing',
    'TelasticWorldSize (Int) missing',
    'TelasticRound (Int) missing',
    'TelasticRestarts (Int) missing',
  ]);
  const mixed = compareAttributes({ TelasticState: 1, TelasticRound: 3, Other: 2 });
  expect(mixed[0]).toEqual({ name: 'TelasticState', type: 'Keyword', state: 'other-type', actual: 'Text' });
  expect(mixed.map((a) => a.state)).toEqual(['other-type', 'missing', 'registered', 'missing']);
});

test('formatRetention: the largest whole unit up to hours', () => {
  expect(formatRetention(72 * 3600)).toBe('72h');
  expect(formatRetention(90 * 60)).toBe('90m');
  expect(formatRetention(45)).toBe('45s');
  expect(formatRetention(0)).toBe('0s');
});

test('refusedLine: says what the caller may not do and what to ask the admin for', () => {
  const add = refusedLine('add', 'ml', 'PERMISSION_DENIED: Request unauthorized.');
  expect(add).toBe("this caller may not add search attributes to namespace ml (PERMISSION_DENIED: Request unauthorized.); ask the cluster's admin to run `telastic setup --namespace ml` or to grant this caller the operator API's AddSearchAttributes");
  expect(refusedLine('list', 'ml', 'UNAUTHENTICATED')).toMatch(/^this caller may not read namespace ml \(UNAUTHENTICATED\); .*ListSearchAttributes$/);
  expect(refusedLine('describe', 'ml', 'PERMISSION_DENIED')).toMatch(/grant this caller DescribeNamespace$/);
  for (const line of [add, refusedLine('list', 'ml', 'x')]) expect(line).not.toContain('\n');
});

test('lacksLine: null when all are in place; one line naming each missing or mistyped attribute', () => {
  expect(lacksLine('ml', compareAttributes(ALL))).toBeNull();
  const line = lacksLine('ml', compareAttributes({ TelasticState: 1, TelasticRound: 3 }));
  expect(line).toBe("warning: namespace ml lacks telastic's search attributes TelasticWorldSize, TelasticRestarts and has TelasticState as Text, not Keyword: jobs run without them, and the Web UI's job list cannot filter on them (jobs submitted meanwhile never get them); run `telastic setup`");
});
