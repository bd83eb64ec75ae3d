/** torch.distributed.elastic.timer's file-based watchdog timers, served by the agent (types.ts). */
export * from './types';
export { parseRequest } from './request';
export { applyRequest, dueAt, emptyBook, forgetPids, timerKey } from './book';
export { watchdogMessage, isWatchdogMessage } from '../../job/kill-message';
export { openTimerFifo, type TimerFifo } from './fifo';
export { startWatchdog, type Watchdog, type WatchdogOptions } from './watchdog';
