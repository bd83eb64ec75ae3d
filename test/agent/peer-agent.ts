/** A stand-in agent's peer watch in its own process (test/agent/fixtures/peer-agent.js), for tests that kill it. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const FIXTURE = path.join(__dirname, 'fixtures', 'peer-agent.js');

export interface PeerAgent {
  proc: ChildProcess;
  port: number;
  /** Tell it to end a round normally (its watchers hear bye). */
  endRound(jobId: string, round: number): void;
}

/** Started and listening; pushed onto `children` first, so that the caller's afterEach ends it. */
export async function startPeerAgent(children: ChildProcess[]): Promise<PeerAgent> {
  const proc = spawn(process.execPath, [FIXTURE], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(proc);
  const port = await new Promise<number>((resolve, reject) => {
    proc.once('exit', (code, sig) => reject(new Error(`peer agent exited (${code ?? sig}) before listening`)));
    proc.stdout!.setEncoding('utf8');
    let buf = '';
    proc.stdout!.on('data', (c: string) => {
      buf += c;
      const m = /^port (\d+)$/m.exec(buf);
      if (m) resolve(Number(m[1]));
    });
  });
  return { proc, port, endRound: (jobId, round) => void proc.stdin!.write(`end ${jobId} ${round}\n`) };
}

/** End every child still running (thawed first: a test may have frozen one). */
export async function endChildren(children: ChildProcess[]): Promise<void> {
  for (const c of children.splice(0)) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    c.kill('SIGCONT');
    c.kill('SIGKILL');
    await new Promise((r) => c.once('exit', r));
  }
}
