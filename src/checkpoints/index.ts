/** Checkpoint discovery and pruning (DESIGN.md, "Checkpoints"). */
export { createCheckpointActivities, type CheckpointDeps, type CheckpointLogger } from './activities';
export { CheckpointDirError, InvalidKeepError } from './errors';
export { planPrune, pruneCheckpoints } from './prune';
export { DEFAULT_STALE_TEMP_MS, findCheckpoints, newestFirst } from './scan';
export * from './types';
