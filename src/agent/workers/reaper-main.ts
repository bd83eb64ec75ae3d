/**
 * The reaper sidecar: `node reaper-main.js <state file>`, started detached by `createReaper`.
 * The agent writes `+<pgid>` / `-<pgid>` lines to its stdin. When stdin closes, because the agent
 * closed it or because the agent died (even by SIGKILL: the kernel closes the pipe), it SIGKILLs
 * every process group still tracked, removes the agent's state file and exits. Node built-ins
 * only, so it starts fast and cannot fail on a missing module.
 */
import { unlinkSync } from 'fs';

const stateFile = process.argv[2];
const pgids = new Set<number>();
let pending = '';

function apply(line: string): void {
  const pgid = Number(line.slice(1));
  if (!Number.isInteger(pgid) || pgid <= 1) return; // never -1 (every process) or our own group
  if (line[0] === '+') pgids.add(pgid);
  else if (line[0] === '-') pgids.delete(pgid);
}

function reap(): void {
  for (const pgid of pgids) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  if (stateFile) {
    try {
      unlinkSync(stateFile);
    } catch {
      // already removed
    }
  }
  process.exit(0);
}

process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  pending += chunk;
  let nl: number;
  while ((nl = pending.indexOf('\n')) >= 0) {
    apply(pending.slice(0, nl).trim());
    pending = pending.slice(nl + 1);
  }
});
process.stdin.on('end', reap);
process.stdin.on('close', reap);
process.stdin.on('error', reap);
