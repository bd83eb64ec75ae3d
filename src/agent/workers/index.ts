/** Worker processes of one node: start, watch and stop a round's workers; never leave one behind. */
export * from './types';
export { StdSpecError, ReaperError } from './errors';
export { parseStd, stdFor, routeStreams, type StreamRoute } from './std';
export { attemptLogDir, workerLogPaths } from './layout';
export { readErrorFileMessage } from './error-file';
export { startWorkerGroup } from './group';
export { createReaper, killOrphans, defaultStateDir, type OrphanReport } from './reaper';
export { isAlive, liveGroups, liveMembers, terminateGroups } from './process-group';
export { describeStuck, stillStuck, type StuckProcesses } from './stuck';
