/** Checkpoint discovery and pruning (DESIGN.md, "Checkpoints"). */
export { createCheckpointActivities, type CheckpointDeps, type CheckpointLogger } from './activities';
export { CheckpointDirError, CheckpointScanError, InvalidKeepError } from './errors';
export { planPrune, pruneCheckpoints } from './prune';
export { DEFAULT_STALE_TEMP_MS, findCheckpoints, findLatestCheckpoint, newestFirst } from './scan';
export * from './types';
