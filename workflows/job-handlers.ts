/**
 * The job's message handlers: each turns its message into one event for the job's run
 * (src/job/events.ts). Updates validate first and refuse bad input to the caller with one line
 * naming the field; signals cannot answer, so a signal that does not parse changes nothing.
 * Why each message is a signal or an update is said at its definition (workflows/messages.ts).
 */
import * as wf from '@temporalio/workflow';
import { ApplicationFailure } from '@temporalio/workflow';
import type { z } from 'zod';
import * as decide from '../src/job/decide';
import type { JobEvent } from '../src/job/events';
import { describeZodError, drainRequestSchema, scaleRequestSchema } from '../src/job/spec';
import { nodeView, toStatus } from '../src/job/status';
import { refusalOf } from '../src/temporal/refused-payload';
import type { JobRun } from './job-run';
import { drainSignal, drainUpdate, groupFinishedSignal, lobbyBatchSignal, nodeQuery, scaleSignal, scaleUpdate, statusQuery } from './messages';
import { poolGrantSignal } from './pool-messages';
import { listenForWake } from './upgrade';

/**
 * Parse `value`, or refuse it to the caller: `what: field: message`; a payload the codec refused
 * (unsealed, sealed elsewhere: src/temporal/refused-payload.ts) as `what: ` and the codec's line.
 */
export function checked<T>(schema: z.ZodType<T, z.ZodTypeDef, unknown>, value: unknown, what: string): T {
  const refused = refusalOf(value);
  if (refused !== null) throw ApplicationFailure.nonRetryable(`${what}: ${refused}`, 'RefusedPayload');
  const r = schema.safeParse(value);
  if (!r.success) throw ApplicationFailure.nonRetryable(describeZodError(r.error, `${what}: `), 'InvalidInput');
  return r.data;
}

/** Refuse an update with the validator's reason, if it gave one. */
function refuseIf(reason: string | null): void {
  if (reason !== null) throw ApplicationFailure.nonRetryable(reason, 'InvalidInput');
}

export function handleMessages(run: JobRun): void {
  const signalled = (e: JobEvent) => {
    run.signals++;
    run.apply(e);
  };
  listenForWake(); // an operator's nudge after an upgrade (workflows/upgrade.ts)
  wf.setHandler(statusQuery, () => toStatus(run.state));
  wf.setHandler(nodeQuery, (nodeId) => nodeView(run.state, nodeId));
  wf.setHandler(lobbyBatchSignal, (events) => signalled({ type: 'lobby', events, now: Date.now() }));
  wf.setHandler(groupFinishedSignal, ({ round, nodeIds }) => signalled({ type: 'groupFinished', round, nodeIds }));
  wf.setHandler(poolGrantSignal, ({ nodes }) => signalled({ type: 'granted', nodes, now: Date.now() }));
  wf.setHandler(drainSignal, (req) => signalled({ type: 'drain', req, now: Date.now() }));
  wf.setHandler(scaleSignal, (req) => signalled({ type: 'scale', req }));
  wf.setHandler(
    drainUpdate,
    (req) => {
      run.apply({ type: 'drain', req, now: Date.now() });
      return { accepted: true };
    },
    { validator: (req) => refuseIf(decide.validateDrain(run.state, checked(drainRequestSchema, req, 'drain').nodeId)) },
  );
  wf.setHandler(
    scaleUpdate,
    (req) => {
      const { spec } = run.apply({ type: 'scale', req });
      return { minNodes: spec.minNodes, maxNodes: spec.maxNodes };
    },
    { validator: (req) => refuseIf(decide.validateScale(run.state, checked(scaleRequestSchema, req, 'scale'))) },
  );
}
