/**
 * The records the job workflow's outbox hands to the ledger, validated with zod. The job numbers
 * its records: `seq` is unique within a job and only grows, and is what makes a retried write a
 * no-op. Times are ISO 8601 strings with an offset (`new Date().toISOString()`), which read well in
 * workflow history and JSON alike.
 */
import { z } from 'zod';

const base = {
  jobId: z.string().min(1),
  seq: z.number().int().nonnegative(),
  at: z.string().datetime({ offset: true }),
};
const round = z.number().int().nonnegative();

export const roundMember = z.object({
  nodeId: z.string().min(1),
  groupRank: z.number().int().nonnegative(),
  address: z.string().min(1),
});

export const nodeEventKinds = ['join', 'leave', 'drain', 'lost', 'quarantine', 'release'] as const;

export const ledgerRecord = z.discriminatedUnion('kind', [
  /** The job was started or changed state; upserts its `jobs` row (started_at is the first `at`). */
  z.object({ kind: z.literal('job'), ...base, spec: z.record(z.unknown()), state: z.string().min(1), pool: z.string().min(1).optional() }),
  /** The job reached a final state (succeeded, failed, cancelled); `reason`: a verdict it ended with (no progress). */
  z.object({ kind: z.literal('jobEnded'), ...base, state: z.string().min(1), reason: z.string().min(1).optional() }),
  z.object({ kind: z.literal('roundStarted'), ...base, round, members: z.array(roundMember), worldSize: z.number().int().positive() }),
  /** Ends a round already started; `reason` says why (failure, node lost, scale, drain, done…). */
  z.object({ kind: z.literal('roundEnded'), ...base, round, reason: z.string().min(1) }),
  /**
   * The settled reason of a round already recorded as ended, once the job settled whom to blame
   * (at its next prepare, or its end): replaces the reason its roundEnded gave. A worker failure seen first is often a victim of a node
   * lost meanwhile; the job blames the node (src/job/decide.ts mergeCause), and so does the ledger.
   */
  z.object({ kind: z.literal('roundCause'), ...base, round, reason: z.string().min(1) }),
  z.object({ kind: z.literal('nodeEvent'), ...base, nodeId: z.string().min(1), event: z.enum(nodeEventKinds), cause: z.string().optional() }),
  /** How a worker or node failed; null where it does not apply (a lost node has no exit code). */
  z.object({
    kind: z.literal('failure'),
    ...base,
    round,
    nodeId: z.string().min(1),
    rank: z.number().int().nonnegative().nullable(),
    exitCode: z.number().int().nullable(),
    signal: z.string().nullable(),
    message: z.string().nullable(),
  }),
  /** A checkpoint was found; `chosenForRound` when it was handed to a round as its resume point. */
  z.object({ kind: z.literal('checkpoint'), ...base, path: z.string().min(1), step: z.number().int().nonnegative().nullable(), chosenForRound: round.optional() }),
]);

export type LedgerRecord = z.infer<typeof ledgerRecord>;
export type RoundMember = z.infer<typeof roundMember>;
export type NodeEventKind = (typeof nodeEventKinds)[number];
