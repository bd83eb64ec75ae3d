/**
 * Runs the attacker's workflow (attacker-workflow.ts) on a queue of its own, the way a hostile
 * submitter would: `attacker.run(nodeQueue('n1'), 'findCheckpoint', {...})` gives what the
 * activity answered, or the one line it failed with.
 */
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, ActivityFailure } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';

export type AttackResult = { ok: true; value: unknown } | { ok: false; type: string | undefined; message: string; nonRetryable: boolean | null | undefined };

export interface Attacker {
  run(taskQueue: string, activity: string, input: unknown, timeoutMs?: number): Promise<AttackResult>;
  close(): Promise<void>;
}

export async function startAttacker(address: string): Promise<Attacker> {
  const native = await NativeConnection.connect({ address });
  const conn = await Connection.connect({ address });
  const taskQueue = `attacker-${randomUUID()}`;
  const worker = await Worker.create({ connection: native, taskQueue, workflowsPath: require.resolve('./attacker-workflow') });
  const running = worker.run();
  const client = new Client({ connection: conn });
  return {
    async run(queue, activity, input, timeoutMs = 30_000) {
      try {
        const value = await client.workflow.execute('attack', { taskQueue, workflowId: `attack-${randomUUID()}`, args: [queue, activity, input, timeoutMs] });
        return { ok: true, value };
      } catch (err) {
        const cause = err instanceof WorkflowFailedError && err.cause instanceof ActivityFailure ? err.cause.cause : undefined;
        if (cause instanceof ApplicationFailure) return { ok: false, type: cause.type ?? undefined, message: cause.message, nonRetryable: cause.nonRetryable };
        return { ok: false, type: undefined, message: String((cause as Error | undefined)?.message ?? (err as Error).message), nonRetryable: undefined };
      }
    },
    async close() {
      worker.shutdown();
      await running;
      await native.close();
      await conn.close();
    },
  };
}
