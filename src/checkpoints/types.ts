/**
 * Value types of checkpoint discovery. The application writes checkpoints into a directory
 * shared by every node; before each round the workflow asks for the newest complete one and
 * hands it to the workers as `TELASTIC_RESUME_FROM` (DESIGN.md, "Checkpoints").
 */

/**
 * How a checkpoint was recognised:
 * - `file`: one regular file written to a temporary name and renamed (torch.save and the like);
 * - `dcp`: a `torch.distributed.checkpoint` directory, complete once its `.metadata` exists;
 * - `manifest`: a directory whose `manifest.json` lists every file and its size;
 * - `hf`: a Hugging Face Trainer `checkpoint-N` directory, complete once its `trainer_state.json` is.
 */
export type CheckpointKind = 'file' | 'dcp' | 'manifest' | 'hf';

export interface CheckpointInfo {
  /** Absolute path of the file or directory; what the workers get as `TELASTIC_RESUME_FROM`. */
  path: string;
  /** The manifest's `step`, else the last run of digits in the name, else null. */
  step: number | null;
  /** ISO time it was last written (for a directory: its newest direct entry). */
  time: string;
  kind: CheckpointKind;
}

/** An entry that looks like a checkpoint but is not a usable one, and why. */
export interface SkippedCheckpoint {
  path: string;
  /** One line, e.g. `truncated or corrupt (no zip end record)`. */
  reason: string;
  step: number | null;
  time: string;
}

export interface Scan {
  /** The newest complete checkpoint (`complete[0]`), or null when there is none. */
  latest: CheckpointInfo | null;
  /** Newest first: highest step; equal or null steps (which rank last) by newest time. */
  complete: CheckpointInfo[];
  skipped: SkippedCheckpoint[];
}

/** What findLatestCheckpoint reports: it stops at the newest complete checkpoint. */
export interface LatestScan {
  latest: CheckpointInfo | null;
  /** Unusable entries ranked at or above `latest` (all of them when there is none), newest first. */
  skipped: SkippedCheckpoint[];
}

export interface ScanOptions {
  /**
   * A temporary file of a checkpoint (`ckpt_1.pt.tmp`, `.ckpt_1.pt.x`, `tmp_step-1`) younger
   * than this is someone's write in progress and ignored; an older one is reported as skipped
   * (and may be pruned).
   * @default 600_000 (10 minutes)
   */
  staleTempMs?: number;
  /** Clock, for tests. @default Date.now */
  now?: () => number;
}

export interface PruneResult {
  removed: string[];
  /** Entries that could not be removed (never fatal: an old checkpoint must not block a round). */
  failed: { path: string; reason: string }[];
}

/** What one directory entry turned out to be. */
export type Verdict =
  | { state: 'complete'; info: CheckpointInfo }
  | { state: 'skipped'; entry: SkippedCheckpoint }
  | { state: 'ignored' };

export interface FindCheckpointInput {
  jobId: string;
  /** The job's checkpoint directory (`TELASTIC_CHECKPOINT_DIR`); a missing one holds nothing. */
  dir: string;
  /** Keep this many newest complete checkpoints and prune the rest; omit to prune nothing. */
  keep?: number;
}

/** Small enough for workflow history: lists are capped at REPORT_LIST_CAP entries. */
export interface CheckpointReport {
  latest: CheckpointInfo | null;
  skipped: SkippedCheckpoint[];
  /** How many were skipped in all (`skipped` holds at most REPORT_LIST_CAP of them). */
  skippedTotal: number;
  pruned: string[];
  /** How many were removed in all (`pruned` holds at most REPORT_LIST_CAP of them). */
  prunedTotal: number;
}

export const REPORT_LIST_CAP = 20;

export interface WaitForCheckpointInput {
  jobId: string;
  dir: string;
  /** The newest complete checkpoint when the workers were asked to checkpoint (null: none). */
  baseline: CheckpointInfo | null;
  /** Epoch ms of the request: without a baseline, a checkpoint written since then counts. */
  requestedAt: number;
  /** Give up (and return null) after this long. */
  timeoutMs: number;
  /** How often the directory is scanned. @default 100 */
  pollMs?: number;
}

export interface CheckpointActivities {
  /** Find the newest complete checkpoint in `dir`; prune old ones when `keep` is given. */
  findCheckpoint(input: FindCheckpointInput): Promise<CheckpointReport>;
  /**
   * Scan `dir` until a complete checkpoint newer than `baseline` appears (src/job/preempt.ts,
   * isNewerCheckpoint) or `timeoutMs` passed; heartbeats while it waits. Prunes nothing.
   */
  waitForCheckpoint(input: WaitForCheckpointInput): Promise<CheckpointInfo | null>;
}
