/**
 * The one owner of a job run's state (the shape of Temporal's safe-message-handlers
 * ClusterManager). Handlers, the round and the side loops read `run.state` when they need it and
 * change it only with `run.apply(event)` (src/job/events.ts): an event is applied to the state as
 * it is when the event happens, so nothing a handler accepted is overwritten by a step that was
 * awaiting an activity meanwhile.
 */
import * as wf from '@temporalio/workflow';
import { reduce, type JobEvent } from '../src/job/events';
import { nodesToTell } from '../src/job/fate';
import type { JobState } from '../src/job/state';
import { Nudges } from './nudge';
import { publish } from './publish';

export class JobRun {
  #state: JobState;
  /** Signals taken in this run (Temporal limits signals per run). */
  signals = 0;
  /** Set once the run ends (continue-as-new or a final phase): the side loops finish. */
  ended = false;
  readonly #nudges = new Nudges();

  constructor(state: JobState) {
    this.#state = state;
  }

  get state(): JobState {
    return this.#state;
  }

  apply(event: JobEvent): JobState {
    const prev = this.#state;
    this.#state = reduce(prev, event);
    this.#nudges.send(this.#state, nodesToTell(prev, this.#state));
    return this.#state;
  }

  /**
   * A run that continued from another tells again the nodes that run dropped as lost and that have
   * not joined since (at most the 50 `departed` keeps): its nudges, queued or in flight, ended
   * with it, and at 2,048 nodes a job that continued as new right after a drop left the dropped
   * nodes to ask once idle (every 335 s) while it waited for them below its minimum.
   */
  retell(): void {
    if (!wf.patched('retell-lost')) return;
    this.#nudges.send(this.#state, this.#state.departed.filter((d) => d.reason === 'lost').map((d) => d.nodeId));
  }

  /** Search attributes and current details for the Web UI (workflows/publish.ts). */
  publish(): void {
    publish(this.#state);
  }
}
