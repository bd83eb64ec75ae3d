import * as d from '../../src/job/decide';
import { jobSpecSchema } from '../../src/job/spec';
import { initialState, type JobState } from '../../src/job/state';
import { applyGrant, dropSpares, releases } from '../../src/job/pool-link';

const spec = jobSpecSchema.parse({ jobId: 'j', pool: 'p', minNodes: 1, maxNodes: 2, nprocPerNode: 2, entrypoint: { script: '/opt/t.py', args: [] } });
const grant = (s: JobState, ...ids: string[]) => applyGrant(s, ids.map((nodeId) => ({ nodeId, address: `${nodeId}.local`, slots: 8 })), 0);

describe('a pool job', () => {
  it('takes granted nodes as newcomers running its own launch and its nproc-per-node, not the node\'s slots', () => {
    const s = grant(initialState(spec, 0), 'n1', 'n2');
    expect(s.waiting.map((n) => [n.nodeId, n.slots])).toEqual([['n1', 2], ['n2', 2]]);
    expect(s.poolNodes).toEqual(['n1', 'n2']);
    expect(releases(s)).toEqual([]);
  });

  it('gives back what it no longer holds, saying why', () => {
    let s = grant(initialState(spec, 0), 'n1', 'n2', 'n3');
    s = d.applyDeparture(s, 'n1', 'lost');
    s = d.applyDeparture(s, 'n2', 'drained');
    expect(releases(s)).toEqual([{ nodeId: 'n1', reason: 'lost' }, { nodeId: 'n2', reason: 'drained' }]);
    // Granted again after it was lost: held, and its old departure is forgotten.
    s = grant(s, 'n1');
    expect(releases(s)).toEqual([{ nodeId: 'n2', reason: 'drained' }]);
  });

  it('keeps no hot spares: nodes beyond maxNodes are released', () => {
    let s = grant(initialState(spec, 0), 'n1', 'n2', 'n3');
    s = dropSpares(s);
    expect(s.waiting.map((n) => n.nodeId)).toEqual(['n1', 'n2']);
    expect(releases(s)).toEqual([{ nodeId: 'n3', reason: 'released' }]);
  });
});
