/**
 * What a node agent accepts as the input of each activity it serves on its node queue. Anyone who
 * may start a workflow in the namespace can schedule these activities by name, with any input
 * (open-source Temporal has no authorization per task queue), so the agent parses every input
 * here before the activity touches anything, and a pool agent applies its policy on top: paths
 * under --allow (by real path), no more workers than --nproc, only its own node id.
 *
 * A refusal fails the activity non-retryably (NOT_ALLOWED) with one line naming the agent, the
 * field and the value, e.g. `agent n1 refuses localWorldSize 3: more than its 1 slots (--nproc)`,
 * and leaves the node as it was: running workers keep running.
 */
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { NOT_ALLOWED } from '../../activities/types';
import type { Launch, RoundAssignment } from '../job/assignment';
import { entrypointSchema, idSchema } from '../job/spec';
import { resolveUnderAllow, type LaunchCheck, type LaunchPolicy } from './allow';

/** A pool agent's policy. `telastic run` agents have none: they run their own command line. */
export interface AgentPolicy {
  /** `--nproc`: runWorkers never starts more workers than this. */
  slots: number;
  /** `--allow` and the rest, as compilePolicy resolved them. */
  launchPolicy: LaunchPolicy;
  /** checkLaunch of allow.ts with this agent's policy and node id. */
  checkLaunch(launch: Launch): Promise<LaunchCheck>;
}

export interface GuardOptions {
  nodeId: string;
  policy?: AgentPolicy;
}

const nat = z.number().int().nonnegative();
const positive = z.number().int().positive();
// What reaches a path or an environment variable: no NUL (the kernel would cut it there).
const text = (max: number, min = 0) => z.string().min(min).max(max).refine((s) => !s.includes('\0'), 'contains a NUL byte');
const filePath = text(4096, 1);

const launchSchema = z
  .object({
    entrypoint: entrypointSchema.extend({ script: filePath, args: z.array(text(100_000)).max(10_000) }),
    env: z.record(z.string(), text(100_000)),
    checkpointDir: filePath.optional(),
  })
  .passthrough();

const checkpointInfoSchema = z.object({ path: filePath, step: nat.nullable(), time: z.string().max(100), kind: z.enum(['file', 'dcp', 'manifest', 'hf']) }).passthrough();

const assignmentShape = {
  jobId: idSchema,
  round: nat,
  nodeId: idSchema,
  role: text(200, 1),
  groupRank: nat,
  groupWorldSize: positive,
  rankOffset: nat,
  localWorldSize: positive.max(4096),
  worldSize: positive,
  masterAddr: text(255, 1),
  masterPort: z.number().int().min(1).max(65_535),
  restartCount: nat,
  maxRestarts: nat,
  checkpointDir: filePath.optional(),
  resumeFrom: filePath.optional(),
  heartbeatIntervalMs: positive,
  progressTimeoutMs: positive.max(7 * 86_400_000).optional(),
  progressStartTimeoutMs: positive.max(7 * 86_400_000).optional(),
  launch: launchSchema.optional(),
  watch: z.object({ nodeId: idSchema, addr: text(255, 1), port: z.number().int().min(1).max(65_535) }).passthrough().optional(),
};
// Every field of a RoundAssignment is parsed, and nothing else is named: a field added to the
// type without a schema here does not compile.
type Same<A, B> = [Exclude<A, B>, Exclude<B, A>] extends [never, never] ? true : false;
const assignmentCovered: Same<keyof typeof assignmentShape, keyof RoundAssignment> = true;
void assignmentCovered;

/**
 * Each activity's input. Objects pass unknown fields through (a newer workflow may send more
 * during a rolling upgrade, docs/upgrading.md); the activity sees only what was parsed.
 */
export const INPUT_SCHEMAS: Record<string, z.ZodTypeAny> = {
  prepare: z.object({ jobId: idSchema, round: nat, nodeId: idSchema, launch: launchSchema.optional(), checkpointDir: filePath.optional() }).passthrough(),
  checkHealth: z.object({ jobId: idSchema, round: nat, nodeId: idSchema, checkpointDir: filePath.optional() }).passthrough(),
  runWorkers: z
    .object(assignmentShape)
    .passthrough()
    .refine((a) => a.rankOffset + a.localWorldSize <= a.worldSize, { message: 'rankOffset + localWorldSize exceeds worldSize', path: ['localWorldSize'] })
    .refine((a) => a.groupRank < a.groupWorldSize, { message: 'not below groupWorldSize', path: ['groupRank'] }),
  signalWorkers: z.object({ jobId: idSchema, round: nat, reason: text(1000) }).passthrough(),
  nudge: z.object({ jobId: idSchema, nodeId: idSchema }).passthrough(),
  findCheckpoint: z.object({ jobId: idSchema, dir: filePath, keep: positive.optional() }).passthrough(),
  waitForCheckpoint: z
    .object({
      jobId: idSchema,
      dir: filePath,
      baseline: checkpointInfoSchema.nullable(),
      requestedAt: nat,
      // A drain's grace is at most an hour (drainRequestSchema); a day is plenty.
      timeoutMs: nat.max(86_400_000),
      pollMs: z.number().int().min(10).max(60_000).optional(),
    })
    .passthrough(),
  holdNode: z.object({ pool: idSchema, nodeId: idSchema, incarnation: text(200, 1) }).passthrough(),
};

/** A value for a one-line message: printable as is, else quoted (and cut). */
function show(v: unknown): string {
  const s = typeof v === 'string' && /^[\x21-\x7e]*$/.test(v) && v !== '' ? v : (JSON.stringify(v) ?? String(v));
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}

export function refusal(nodeId: string, field: string, value: unknown, why: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`agent ${nodeId} refuses ${field} ${show(value)}: ${why}`, NOT_ALLOWED);
}

function valueAt(input: unknown, at: (string | number)[]): unknown {
  let v = input;
  for (const k of at) v = v !== null && typeof v === 'object' ? (v as Record<string | number, unknown>)[k] : undefined;
  return v;
}

/** The parsed input, or a refusal naming the first bad field. */
export function parseInput(activity: string, input: unknown, nodeId: string): unknown {
  const schema = INPUT_SCHEMAS[activity];
  if (!schema) throw ApplicationFailure.nonRetryable(`agent ${nodeId} refuses ${activity}: not an activity it serves`, NOT_ALLOWED);
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const field = issue.path.length ? issue.path.join('.') : 'input';
  const value = valueAt(input, issue.path);
  if (value === undefined) throw ApplicationFailure.nonRetryable(`agent ${nodeId} refuses ${activity}: ${field} is missing`, NOT_ALLOWED);
  throw refusal(nodeId, field, value, issue.message);
}

/** The real path of `p` when it lies under --allow; else a refusal naming `field`. */
export async function allowedPath(nodeId: string, policy: LaunchPolicy, field: string, p: string): Promise<string> {
  const r = await resolveUnderAllow(policy, p);
  if ('problem' in r) throw refusal(nodeId, field, p, r.problem);
  if (r.allowed) return r.real;
  const where = r.real === p ? '' : `resolves to ${r.real}, `;
  throw refusal(nodeId, field, p, `${where}not under --allow (${policy.allow.join(', ') || 'none given'})`);
}

function thisNode(o: GuardOptions, nodeId: string): void {
  if (nodeId !== o.nodeId) throw refusal(o.nodeId, 'nodeId', nodeId, 'not this agent');
}

/**
 * Everything runWorkers needs to hold before it stops the node's current workers or creates a
 * directory: on a pool agent, a launch it allows, its slots, and paths under --allow.
 */
async function checkAssignment(a: RoundAssignment, o: GuardOptions): Promise<void> {
  thisNode(o, a.nodeId);
  const p = o.policy;
  if (!p) return;
  if (a.localWorldSize > p.slots) throw refusal(o.nodeId, 'localWorldSize', a.localWorldSize, `more than its ${p.slots} slots (--nproc)`);
  if (!a.launch) throw ApplicationFailure.nonRetryable(`agent ${o.nodeId} refuses runWorkers without a launch: a pool agent runs only jobs submitted to its pool`, NOT_ALLOWED);
  // runWorkers checks again when it starts the workers, and runs what that check resolved.
  const checked = await p.checkLaunch(a.launch);
  if (checked.refused !== null) throw ApplicationFailure.nonRetryable(checked.refused, NOT_ALLOWED);
  // The workers get these as TELASTIC_CHECKPOINT_DIR and TELASTIC_RESUME_FROM (which a script
  // hands to torch.load: unpickling runs code), so they are held to --allow as the launch is.
  if (a.checkpointDir !== undefined) await allowedPath(o.nodeId, p.launchPolicy, 'checkpointDir', a.checkpointDir);
  if (a.resumeFrom !== undefined) await allowedPath(o.nodeId, p.launchPolicy, 'resumeFrom', a.resumeFrom);
}

/**
 * `prepare` and `checkHealth`: this node; on a pool agent, a checkpoint directory (which the
 * operator's health check is told of) under --allow.
 */
async function checkHealthInput(i: { nodeId: string; checkpointDir?: string }, o: GuardOptions): Promise<void> {
  thisNode(o, i.nodeId);
  if (o.policy && i.checkpointDir !== undefined) await allowedPath(o.nodeId, o.policy.launchPolicy, 'checkpointDir', i.checkpointDir);
}

const CHECKS: Record<string, (input: never, o: GuardOptions) => void | Promise<void>> = {
  prepare: checkHealthInput,
  checkHealth: checkHealthInput,
  runWorkers: checkAssignment,
  holdNode: (i: { nodeId: string }, o) => thisNode(o, i.nodeId),
  nudge: (i: { nodeId: string }, o) => thisNode(o, i.nodeId),
};

/**
 * The checkpoint activities' directory on a pool agent: its real path, refused unless under
 * --allow. Undefined on a `telastic run` agent (the directory is its own operator's).
 */
export function checkpointDirPolicy(o: GuardOptions): ((dir: string) => Promise<string>) | undefined {
  const p = o.policy;
  return p ? (dir) => allowedPath(o.nodeId, p.launchPolicy, 'dir', dir) : undefined;
}

/**
 * `activities`, each parsing (and checking) its input first. An activity without a schema here
 * is an Error when the agent starts: a node agent serves nothing unchecked.
 */
export function guardActivities<T extends object>(activities: T, o: GuardOptions): T {
  const guarded: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
  for (const [name, fn] of Object.entries(activities) as [string, (input: unknown) => Promise<unknown>][]) {
    if (!INPUT_SCHEMAS[name]) throw new Error(`activity ${name} has no input schema (src/agent/activity-input.ts): a node agent serves nothing unchecked`);
    guarded[name] = async (...args: unknown[]) => {
      if (args.length !== 1) throw ApplicationFailure.nonRetryable(`agent ${o.nodeId} refuses ${name} with ${args.length} arguments: it takes one`, NOT_ALLOWED);
      const input = parseInput(name, args[0], o.nodeId);
      await CHECKS[name]?.(input as never, o);
      return fn(input);
    };
  }
  return guarded as T;
}
