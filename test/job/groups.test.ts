import { agentPollMs, groupStartDelayMs, idleAskMs, heartbeatIntervalMs, lobbyCount, lobbyIndex, largeRoundSlack, memberPrepareTimeoutMs, runHeartbeatTimeoutMs, newcomerPrepareTimeoutMs, partition, tierWorkflowId, tiersOf, groupWorkflowId } from '../../src/job/groups';

describe('partition', () => {
  it('splits in order into groups of at most groupSize, the last one smaller', () => {
    expect(partition([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(partition([1, 2, 3], 64)).toEqual([[1, 2, 3]]);
    expect(partition([], 4)).toEqual([]);
  });

  it('never makes a group larger than groupSize, and loses nobody (exhaustive up to 40 × 12)', () => {
    for (let n = 0; n <= 40; n++)
      for (let g = 1; g <= 12; g++) {
        const items = Array.from({ length: n }, (_, i) => i);
        const groups = partition(items, g);
        expect(groups.every((x) => x.length >= 1 && x.length <= g)).toBe(true);
        expect(groups.flat()).toEqual(items);
        expect(groups.length).toBe(Math.ceil(n / g));
      }
  });
});

describe('heartbeatIntervalMs', () => {
  it('is a third of the timeout for groups the budget allows', () => {
    expect(heartbeatIntervalMs(10_000, 64)).toBe(3333);
    expect(heartbeatIntervalMs(3_000, 12)).toBe(1000);
  });

  it('slows down so that a full group stays under 50 heartbeats per second', () => {
    expect(heartbeatIntervalMs(10_000, 200)).toBe(4000);
    for (const g of [1, 16, 64, 128, 250]) expect((g * 1000) / heartbeatIntervalMs(10_000, g)).toBeLessThanOrEqual(50);
  });

  it('never waits more than half the timeout, so a late heartbeat is not a lost node', () => {
    expect(heartbeatIntervalMs(10_000, 1000)).toBe(5000);
    expect(heartbeatIntervalMs(2_000, 500)).toBe(1000);
  });

  it('at the defaults, 2,048 nodes: about 19 heartbeats/s per group', () => {
    const perNode = 1000 / heartbeatIntervalMs(10_000, 64);
    expect(64 * perNode).toBeCloseTo(19.2, 0);
    expect(Math.round(3600 * perNode)).toBe(1080); // heartbeats per node-hour (3,600 at 1 s before)
  });
});

describe('runHeartbeatTimeoutMs', () => {
  it('is heartbeat_timeout until a round heartbeating a third of it would exceed 300 heartbeats per second', () => {
    expect(runHeartbeatTimeoutMs(10_000, 64)).toBe(10_000);
    expect(runHeartbeatTimeoutMs(10_000, 1_000)).toBe(10_000);
    expect(runHeartbeatTimeoutMs(10_000, 1_024)).toBe(10_240);
    expect(runHeartbeatTimeoutMs(10_000, 2_048)).toBe(20_480);
    expect(runHeartbeatTimeoutMs(60_000, 2_048)).toBe(60_000);
  });

  it('with the interval it gives, a round of any size sends at most 300 heartbeats per second, three per timeout', () => {
    for (const n of [64, 1_024, 2_048, 10_000]) {
      const timeout = runHeartbeatTimeoutMs(10_000, n);
      const every = heartbeatIntervalMs(timeout, 64);
      expect((n * 1000) / every).toBeLessThanOrEqual(300.5);
      expect(timeout / every).toBeGreaterThanOrEqual(2.99);
    }
  });
});

describe('lobbies', () => {
  it('one lobby per group of maxNodes, at least one', () => {
    expect(lobbyCount(1, 64)).toBe(1);
    expect(lobbyCount(64, 64)).toBe(1);
    expect(lobbyCount(65, 64)).toBe(2);
    expect(lobbyCount(2048, 64)).toBe(32);
  });

  it('a node id always maps to the same lobby, within range', () => {
    for (let i = 0; i < 500; i++) {
      const k = lobbyIndex(`node-${i}`, 7);
      expect(k).toBeGreaterThanOrEqual(0);
      expect(k).toBeLessThan(7);
      expect(lobbyIndex(`node-${i}`, 7)).toBe(k);
    }
  });

  it('spreads 2,048 node ids over 32 lobbies without piling up', () => {
    const counts = new Array(32).fill(0);
    for (let i = 0; i < 2048; i++) counts[lobbyIndex(`gpu-${i}.cluster.local`, 32)]++;
    expect(Math.max(...counts)).toBeLessThan(2 * 64);
    expect(Math.min(...counts)).toBeGreaterThan(0);
  });
});

describe('idleAskMs', () => {
  it('is agentPollMs up to 250 nodes, then slower so that all nodes together ask less as the job grows, at least every 10 min', () => {
    for (const n of [1, 2, 16, 64, 250]) expect(idleAskMs(n)).toBe(agentPollMs(n));
    expect(idleAskMs(1_024)).toBe(83_886);
    expect(idleAskMs(2_048)).toBe(335_544);
    expect(idleAskMs(10_000)).toBe(600_000);
    const rate = (n: number) => n / (idleAskMs(n) / 1000);
    expect(rate(250)).toBeCloseTo(50, 5);
    expect(rate(1_024)).toBeLessThan(rate(512));
    expect(rate(2_048)).toBeLessThan(rate(1_024));
  });
});

describe('agentPollMs', () => {
  it('1 s for small jobs, slower for large ones, at most 30 s', () => {
    expect(agentPollMs(2)).toBe(1000);
    expect(agentPollMs(256)).toBe(5120);
    expect(agentPollMs(10_000)).toBe(30_000);
    // All agents together: at most about 50 queries per second below the 30 s cap.
    for (const n of [64, 256, 1024]) expect(n / (agentPollMs(n) / 1000)).toBeLessThanOrEqual(50);
  });
});

describe('memberPrepareTimeoutMs', () => {
  it('keeps prepare_timeout for a round of one group, and adds 20 ms per participant past it, at most 60 s', () => {
    expect(memberPrepareTimeoutMs(5_000, 2, 64)).toBe(5_000);
    expect(memberPrepareTimeoutMs(5_000, 64, 64)).toBe(5_000);
    expect(memberPrepareTimeoutMs(5_000, 65, 64)).toBe(5_020);
    expect(memberPrepareTimeoutMs(5_000, 1_024, 64)).toBe(24_200);
    expect(memberPrepareTimeoutMs(5_000, 2_048, 64)).toBe(44_680);
    expect(memberPrepareTimeoutMs(5_000, 10_000, 64)).toBe(60_000);
    expect(memberPrepareTimeoutMs(90_000, 10_000, 64)).toBe(90_000);
    expect(memberPrepareTimeoutMs(100, 12, 3)).toBe(280);
  });
});

describe('largeRoundSlack', () => {
  const rdzv = { prepareTimeoutMs: 5_000, heartbeatTimeoutMs: 10_000, groupSize: 64 };

  it('gives a round of one group nothing: small jobs keep prepare_timeout and heartbeat_timeout', () => {
    expect(largeRoundSlack(rdzv, 2)).toBeNull();
    expect(largeRoundSlack(rdzv, 64)).toBeNull();
  });

  it('lets members of a large round pick up runWorkers as late as newcomers pick up prepare, with the round\'s heartbeat timeout', () => {
    expect(largeRoundSlack(rdzv, 65)).toEqual({ runStartTimeoutMs: 8_250, runHeartbeatTimeoutMs: 10_000 });
    expect(largeRoundSlack(rdzv, 1_024)).toEqual({ runStartTimeoutMs: 56_200, runHeartbeatTimeoutMs: 10_240 });
    expect(largeRoundSlack(rdzv, 2_048)).toEqual({ runStartTimeoutMs: 107_400, runHeartbeatTimeoutMs: 20_480 });
    expect(largeRoundSlack(rdzv, 10_000)).toEqual({ runStartTimeoutMs: 120_000, runHeartbeatTimeoutMs: 100_000 });
  });

  it('never shortens what the job set', () => {
    expect(largeRoundSlack({ prepareTimeoutMs: 200_000, heartbeatTimeoutMs: 300_000, groupSize: 64 }, 2_048)).toEqual({ runStartTimeoutMs: 200_000, runHeartbeatTimeoutMs: 300_000 });
  });
});

describe('groupStartDelayMs', () => {
  it('staggers a round\'s groups 100 ms apart, all within 5 s', () => {
    expect([0, 1, 2, 31].map((i) => groupStartDelayMs(i, 32))).toEqual([0, 100, 200, 3_100]);
    expect(groupStartDelayMs(0, 1)).toBe(0);
    expect(groupStartDelayMs(156, 157)).toBeLessThanOrEqual(5_000);
    expect(groupStartDelayMs(156, 157)).toBeGreaterThan(4_900);
  });
});

describe('newcomerPrepareTimeoutMs', () => {
  it('prepare_timeout plus 50 ms per newcomer of the round, at most 120 s, or prepare_timeout when that is longer', () => {
    expect(newcomerPrepareTimeoutMs(5_000, 0)).toBe(5_000);
    expect(newcomerPrepareTimeoutMs(5_000, 2)).toBe(5_100);
    expect(newcomerPrepareTimeoutMs(5_000, 256)).toBe(17_800);
    expect(newcomerPrepareTimeoutMs(5_000, 1_024)).toBe(56_200);
    expect(newcomerPrepareTimeoutMs(5_000, 2_048)).toBe(107_400);
    expect(newcomerPrepareTimeoutMs(5_000, 10_000)).toBe(120_000);
    expect(newcomerPrepareTimeoutMs(300_000, 2_048)).toBe(300_000);
    expect(newcomerPrepareTimeoutMs(100, 1)).toBe(150);
  });
});

describe('tiersOf', () => {
  const groups = (n: number) => Array.from({ length: n }, (_, i) => i);
  it('none while the job would start at most max(2, group_size) groups itself', () => {
    expect(tiersOf(groups(64), 64)).toBeNull();
    expect(tiersOf(groups(2), 1)).toBeNull();
    expect(tiersOf(groups(1), 64)).toBeNull();
  });
  it('past that, consecutive runs of that many groups: 10,000 nodes in groups of 64 start 3 tiers, none above 64 groups', () => {
    const tiers = tiersOf(groups(157), 64)!;
    expect(tiers.map((t) => t.length)).toEqual([64, 64, 29]);
    expect(tiers.flat()).toEqual(groups(157));
    expect(tiersOf(groups(5), 2)).toEqual([[0, 1], [2, 3], [4]]);
    expect(tiersOf(groups(3), 1)).toEqual([[0, 1], [2]]);
  });
  it('tier ids differ from group ids of the same round and phase', () => {
    expect(tierWorkflowId('j', 3, 'run', 0)).toBe('j/round-3/run-tier-0');
    expect(tierWorkflowId('j', 3, 'run', 0)).not.toBe(groupWorkflowId('j', 3, 'run', 0));
  });
});
