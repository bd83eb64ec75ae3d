/**
 * An in-memory world for the operator's decisions: applies `Action`s to a resource and its pods
 * the way the API server would (a merge patch of status, a created pod Pending, a deleted pod
 * gone), so a test can run passes until reconcile has nothing left to do. The job's status is
 * the test's to set: the workflow is not simulated.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { reconcile } from '../../src/operator/reconcile';
import { FINALIZER, DRAINING_ANNOTATION, type Action, type ObservedJob, type TelasticJob } from '../../src/operator/types';
import { ENV, NOW, status } from './fixtures';

export class World {
  log: Action[] = [];
  now = NOW;
  constructor(public resource: TelasticJob, public pods: V1Pod[] = [], public job: ObservedJob = 'absent') {}

  pass(): Action[] {
    const actions = reconcile({ resource: this.resource, pods: this.pods, job: this.job, now: this.now }, ENV);
    for (const a of actions) this.apply(a);
    this.log.push(...actions);
    return actions;
  }

  /** Passes until one decides nothing; throws if that takes more than `max`. */
  settle(max = 5): Action[][] {
    const passes: Action[][] = [];
    for (let i = 0; i < max; i++) {
      const a = this.pass();
      if (a.length === 0) return passes;
      passes.push(a);
    }
    throw new Error(`no fixed point after ${max} passes: ${JSON.stringify(passes.at(-1))}`);
  }

  apply(a: Action): void {
    const md = this.resource.metadata;
    switch (a.kind) {
      case 'addFinalizer':
        md.finalizers = [...(md.finalizers ?? []), FINALIZER];
        return;
      case 'removeFinalizer':
        md.finalizers = (md.finalizers ?? []).filter((f) => f !== FINALIZER);
        return;
      case 'patchStatus': {
        const s: Record<string, unknown> = { ...(this.resource.status ?? {}) };
        for (const [k, v] of Object.entries(a.status)) {
          if (v === null) delete s[k];
          else s[k] = v;
        }
        this.resource.status = s;
        return;
      }
      case 'createPod':
        if (!this.pods.some((p) => p.metadata?.name === a.pod.metadata?.name)) this.pods.push({ ...a.pod, status: { phase: 'Pending' } });
        return;
      case 'deletePod':
        this.pods = this.pods.filter((p) => p.metadata?.name !== a.name);
        return;
      case 'markDraining': {
        const p = this.pods.find((q) => q.metadata?.name === a.name)!;
        p.metadata = { ...p.metadata, annotations: { ...p.metadata?.annotations, [DRAINING_ANNOTATION]: a.at } };
        return;
      }
      case 'startJob':
        // A new workflow waits for its nodes; the test moves it on by setting `job`.
        if (this.job === 'absent') this.job = status({ state: 'waiting', round: 0, minNodes: a.spec.minNodes, maxNodes: a.spec.maxNodes, worldSize: 0, nodes: [] });
        return;
      case 'scaleJob':
        if (typeof this.job === 'object') this.job = { ...this.job, minNodes: a.minNodes, maxNodes: a.maxNodes };
        return;
      default:
        return; // drains, cancels and events: the test sets the job's status.
    }
  }

  podNames(): string[] {
    return this.pods.map((p) => p.metadata!.name!);
  }

  setPhase(name: string, phase: 'Running' | 'Succeeded' | 'Failed'): void {
    const p = this.pods.find((q) => q.metadata?.name === name)!;
    p.status = { ...p.status, phase };
  }
}

export const kinds = (actions: Action[]): string[] => actions.map((a) => a.kind);
export const named = (actions: Action[], kind: Action['kind']): string[] =>
  actions.filter((a) => a.kind === kind).map((a) => ('name' in a ? a.name : 'nodeId' in a ? a.nodeId : a.kind === 'createPod' ? a.pod.metadata!.name! : a.kind));
