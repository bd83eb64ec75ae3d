/** Workflow bundle entry: every workflow type telastic registers. */
export { elasticJob } from './job';
export type { JobInput, JobResult } from './job';
export { prepareGroup, runGroup } from './group';
export { prepareTier, runTier } from './tier';
export { jobLobby } from './lobby';
export { nodePool } from './pool';
export type { PoolInput } from './pool';
export { ledgerOutbox } from './ledger';
