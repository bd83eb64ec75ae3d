/**
 * A node whose agent could not end its workers (SIGKILL did not: state D, a frozen cgroup) is
 * taken out of the job and blamed, from a round's end or from the next prepare; the one line its
 * agent wrote reaches the status, the ledger's failure row (which quarantine counts) and the exit line.
 */
import { reduce, type JobEvent } from '../../src/job/events';
import { describeFailure, mergeCause, nodeStuck, settleFailure } from '../../src/job/decide';
import type { JobState } from '../../src/job/state';
import { nodeView, toStatus } from '../../src/job/status';
import { derive } from '../../src/ledger/derive';
import { quarantineVerdict } from '../../src/ledger/quarantine';
import { ids, node, state, workerFailure } from './fixtures';

const apply = (s: JobState, ...events: JobEvent[]) => events.reduce(reduce, s);
const LINE = 'workers 1234, 1235 did not exit 30 s after SIGKILL (state D)';
const running = () => state({ round: 2, phase: 'running', members: [node('n1'), node('n2'), node('n3')] });

describe('nodeStuck', () => {
  it('blames the node, not a rank, with the agent\'s line as the message', () => {
    expect(nodeStuck(running(), 'n2', LINE)).toEqual({ nodeId: 'n2', rank: null, exitCode: null, signal: null, message: LINE, round: 2 });
    expect(describeFailure(nodeStuck(running(), 'n2', LINE))).toBe(`node n2: ${LINE}`);
  });

  it('outranks the worker failures it provoked, as a lost node does', () => {
    const stuck = nodeStuck(running(), 'n2', LINE);
    expect(mergeCause(workerFailure('n1', 0, 1, 2), stuck)).toBe(stuck);
    expect(mergeCause(stuck, workerFailure('n1', 0, 1, 2))).toBe(stuck);
  });
});

describe('roundEnded with a stuck node', () => {
  const ended = () => apply(running(), { type: 'roundEnded', outcomes: [{ nodeId: 'n1', kind: 'failed', failure: workerFailure('n1', 0, 1, 2) }, { nodeId: 'n2', kind: 'stuck', message: LINE }, { nodeId: 'n3', kind: 'stopped' }] });

  it('takes the node out of the job and blames it', () => {
    const s = ended();
    expect(s.phase).toBe('restarting');
    expect(ids(s.members)).toEqual(['n1', 'n3']);
    expect(ids(s.waiting)).toEqual([]);
    expect(s.departed).toEqual([{ nodeId: 'n2', reason: 'lost', round: 2 }]);
    expect(s.pendingFailure).toEqual(nodeStuck(s, 'n2', LINE));
  });

  it('costs one restart, and the status names the node and pids', () => {
    const { state: s } = settleFailure(ended());
    expect(s.restarts).toBe(1);
    const st = toStatus(s);
    expect(st.lastFailure).toEqual({ nodeId: 'n2', rank: null, exitCode: null, signal: null, message: LINE });
    expect(st.nodes.find((n) => n.nodeId === 'n2')?.state).toBe('lost');
    // Its agent learns it was taken out (and exits with its line instead of joining again).
    expect(nodeView(s, 'n2')).toEqual({ job: 'restarting', node: 'lost' });
  });

  it('only a stuck outcome takes a node out: a stopped one stays', () => {
    const s = apply(running(), { type: 'roundEnded', outcomes: [{ nodeId: 'n3', kind: 'stopped' }] });
    expect(ids(s.members)).toEqual(['n1', 'n2', 'n3']);
    expect(s.pendingFailure).toBeNull();
  });
});

describe('prepare answered stuck', () => {
  const forming = () => state({ round: 3, phase: 'rendezvous', members: [node('n1'), node('n2')], waiting: [node('n3')], pendingFailure: workerFailure('n1', 0, 1, 2) });

  it('takes a member out and blames it over the worker failure that ended the round', () => {
    const s = apply(forming(), { type: 'prepared', participants: ['n1', 'n2'], unanswered: [{ nodeId: 'n2', why: LINE, stuck: true }] });
    expect(ids(s.members)).toEqual(['n1']);
    expect(s.departed).toEqual([{ nodeId: 'n2', reason: 'lost', round: 3 }]);
    expect(s.pendingFailure).toEqual({ nodeId: 'n2', rank: null, exitCode: null, signal: null, message: LINE, round: 3 });
  });

  it('blames a stuck newcomer too, where a newcomer that merely did not answer is not blamed', () => {
    const stuck = apply(state({ round: 3, members: [node('n1')], waiting: [node('n3')] }), { type: 'prepared', participants: ['n1', 'n3'], unanswered: [{ nodeId: 'n3', why: LINE, stuck: true }] });
    expect(stuck.pendingFailure?.nodeId).toBe('n3');
    expect(ids(stuck.waiting)).toEqual([]);
    const silent = apply(state({ round: 3, members: [node('n1')], waiting: [node('n3')] }), { type: 'prepared', participants: ['n1', 'n3'], unanswered: [{ nodeId: 'n3', why: 'did not answer within 5s' }] });
    expect(silent.pendingFailure).toBeNull();
  });

  it('a lost member is blamed as lost, not with the stuck line', () => {
    const s = apply(forming(), { type: 'prepared', participants: ['n1', 'n2'], unanswered: [{ nodeId: 'n2', why: 'no heartbeat within 3s' }] });
    expect(s.pendingFailure?.message).toBe('node lost: no heartbeat within 3s');
  });
});

describe('the ledger', () => {
  it('records the stuck node\'s failure and departure, which quarantine counts', () => {
    const ended = apply({ ...running(), ledger: { cursor: null, outbox: [] } }, { type: 'roundEnded', outcomes: [{ nodeId: 'n2', kind: 'stuck', message: LINE }] });
    const { state: settled } = settleFailure(ended);
    const { records } = derive(null, settled, '2026-12-02T00:00:00.000Z');
    expect(records.find((r) => r.kind === 'failure')).toMatchObject({ nodeId: 'n2', rank: null, message: LINE, round: 2 });
    expect(records.find((r) => r.kind === 'nodeEvent' && r.nodeId === 'n2')).toMatchObject({ event: 'lost' });
    const failures = [1, 2, 3].map((at) => ({ at, jobId: 'job1', message: LINE }));
    expect(quarantineVerdict(failures, { failures: 3, windowMs: 60_000 }, 10, null)).toBe(`3 failures in 1m00s (1 job); last: ${LINE}`);
  });
});
