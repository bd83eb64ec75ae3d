/** The HTML report: self-contained, every ledger text escaped, the figures and the chart's marks right. */
import { jobFigures } from '../../src/ledger/figures';
import { reportHtml } from '../../src/ledger/report-html';
import { at, fourRounds, job, round } from './timelines';

const ctx = { now: new Date(Date.UTC(2025, 0, 2)), where: 'DATABASE_URL' };
const render = (t = fourRounds()) => reportHtml(t, jobFigures(t, ctx.now), ctx);

test('shows the figures, a chart and a row per round', () => {
  const html = render();
  expect(html).toMatch(/^<!doctype html>/);
  expect(html).toContain('<div class="label">goodput</div><div class="value">76.0%</div>');
  expect(html).toContain('<div class="value">1m40s</div>'); // wall
  expect(html).toContain('<div class="value">1m16s</div>'); // productive
  expect(html).toContain('<div class="label">restarts</div><div class="value">3</div><div class="note">1 worker failure, 1 node lost, 1 membership change</div>');
  expect(html).toContain('<div class="label">MTTR</div><div class="value">6.0s</div>');
  expect(html.match(/<tr>\s*<td class="num">\d+<\/td>/g)).toHaveLength(4);
  expect(html).toContain('/ckpt/step-200 (step 200)');
});

test('the chart marks each failure with a red dot and each restart with a line coloured by its cause', () => {
  const svg = /<svg[\s\S]*<\/svg>/.exec(render())![0];
  expect(svg.match(/<circle class="fail"/g)).toHaveLength(2);
  expect(svg.match(/class="restart restart-failure"/g)).toHaveLength(2); // rounds 2 and 3 follow a failure and a lost node
  expect(svg.match(/class="restart restart-change"/g)).toHaveLength(1); // round 4 follows a membership change
  expect(svg).toContain('time since job start');
  expect(svg).toContain('world size (workers)');
  // The step line: 0 until 10 s (x = 60 + 10% of 880), up to 4 of a y axis to 6 (top 24, height 226).
  expect(svg).toContain('<path class="ws" d="M60 250 H148 V99.3 ');
});

test('escapes everything from the ledger: a message or argument cannot inject markup', () => {
  const evil = '<script>alert(1)</script>';
  const t = job({
    rounds: [round(1, 1, 0, 10, `failure: ${evil}`, ['a"><img src=x onerror=alert(2)>'])],
    failures: [{ seq: 3, round: 1, nodeId: 'b', rank: 0, exitCode: 1, signal: null, message: evil, at: at(10) }],
  }, 12, 'failed');
  t.job.spec = { entrypoint: { script: 'train.py', args: [evil, "it's & <b>"] } };
  const html = render(t);
  expect(html).not.toMatch(/<script|<img/i);
  expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  expect(html).toContain('a&quot;&gt;&lt;img src=x onerror=alert(2)&gt;');
  expect(html).toContain('it&#39;s &amp; &lt;b&gt;');
});

test('loads nothing from elsewhere', () => {
  const html = render();
  expect(html).not.toMatch(/<script|<link|@import|url\(|\bsrc=|\bhref=/i);
  expect(html.match(/https?:\/\/[^"]*/g)).toEqual(['http://www.w3.org/2000/svg']); // a namespace name, never fetched
});

test('a job with no round and a job still running render too', () => {
  expect(render(job({}, 30, 'failed'))).toContain('No round ran.');
  const running = job({ rounds: [round(1, 1, 5, null, null, ['a'])] }, null, 'running');
  const html = reportHtml(running, jobFigures(running, new Date(Date.parse(at(60)))), ctx);
  expect(html).toContain('so far: the job is still running');
  expect(html).toContain('<em>open</em>');
});

test('a round\'s end reason adds only what its cause\'s label does not say', () => {
  const cells = [...render().matchAll(/<span class="cause cause-([a-z-]+)">[^<]*<\/span> <span class="reason">([^<]*)<\/span>/g)].map((m) => [m[1], m[2]]);
  expect(cells).toEqual([
    ['worker-failure', 'Traceback (most recent call last): boom'],
    ['node-lost', 'missed its heartbeat for 10s'],
    ['membership', ''],
    ['succeeded', ''],
  ]);
});

test('a lost node\'s round end names the node (derive.ts writes `failure: node <id> lost: why`)', () => {
  const t = job({ rounds: [round(1, 1, 0, 10, 'failure: node host:1 lost: did not answer within 5s', ['a', 'host:1']), round(2, 4, 15, 30, 'succeeded', ['a'])] }, 30);
  const cell = /<span class="cause cause-([a-z-]+)">[^<]*<\/span> <span class="reason">([^<]*)<\/span>/.exec(render(t));
  expect(cell?.slice(1)).toEqual(['node-lost', 'host:1: did not answer within 5s']);
});
