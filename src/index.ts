/** telastic's public API. */
export { startJob, sendToLobby, nodeState, scaleJob, drainNode, cancelJob, getJobStatus, JobInputError } from './client/api';
export type { ClientOptions, LobbyAddress } from './client/api';
export { dataConverterFor, readSealingKey, sealedDataConverter, telasticDataConverter } from './temporal/data-converter';
export { SealingCodec, SealedPayloadError, keyId } from './temporal/sealing';
export type { SealingKey } from './temporal/sealing';
export { jobSpecSchema, joinRequestSchema, scaleRequestSchema, drainRequestSchema } from './job/spec';
export type { JobSpec, JobSpecInput, JoinRequest, ScaleRequest, Entrypoint } from './job/spec';
export type { JobStatus, NodeStatus } from './job/status';
export { drainUpdate, drainSignal, scaleUpdate, scaleSignal, statusQuery, nodeQuery, lobbySignal } from '../workflows/messages';
export type { LobbyEvent, NodeView } from '../workflows/messages';
export { CONTROL_QUEUE, nodeQueue } from '../activities/types';
export { submitJob, getPoolStatus, registerWithPool, departFromPool, poolNodeState, reportJobEnded } from './client/pool';
export { poolNameSchema, registerSchema, jobRequestSchema, poolWorkflowId } from './pool/state';
export type { PoolState, PoolNode, PoolJob, RegisterRequest, JobRequest } from './pool/state';
export { poolRegisterSignal, poolDepartSignal, poolJobSignal, poolStatusQuery, poolNodeQuery, poolGrantSignal } from '../workflows/pool-messages';
