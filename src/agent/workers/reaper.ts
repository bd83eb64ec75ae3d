/**
 * A worker never outlives its agent. `setpriv --pdeathsig` covers the workers themselves; this
 * covers what they fork, in two layers:
 * - the reaper sidecar (reaper-main.ts), a detached node process fed process group ids over a
 *   pipe, SIGKILLs the groups when that pipe closes, i.e. when the agent dies however it dies;
 * - a state file per agent, `<stateDir>/agent-<pid>.json` = {agentPid, agentStartTime, pgids,
 *   startTimes}, from which `killOrphans` (called first by a newly started agent) kills what an
 *   earlier incarnation left when the sidecar could not (it was killed too).
 * Call `killOrphans` before `createReaper` when an agent starts.
 */
import { spawn, type ChildProcess } from 'child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'fs';
import { homedir } from 'os';
import { join } from 'path';
import type { Socket } from 'net';
import { ensurePrivateDir } from '../../private-dir';
import { ReaperError } from './errors';
import { isAlive, liveGroups, signalGroup, startTime } from './process-group';
import type { Reaper } from './types';

/** `$TELASTIC_STATE_DIR`, else `~/.telastic/run`. */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.TELASTIC_STATE_DIR || join(homedir(), '.telastic', 'run');
}

interface StateFile {
  agentPid: number;
  agentStartTime: string | null;
  pgids: number[];
  /** Start time of each group's leader when tracked, to tell a reused pid apart. */
  startTimes: Record<string, string | null>;
}

function writeState(path: string, s: StateFile): void {
  writeFileSync(`${path}.tmp`, JSON.stringify(s));
  renameSync(`${path}.tmp`, path); // a reader never sees half a file
}

/**
 * How to run the sidecar: reaper-main.js beside this file in the build, or, when running from
 * TypeScript sources (ts-jest, development), reaper-main.ts transpiled on load by `typescript`.
 */
function reaperCommand(): string[] {
  const js = join(__dirname, 'reaper-main.js');
  if (existsSync(js)) return [js];
  const ts = join(__dirname, 'reaper-main.ts');
  if (!existsSync(ts)) throw new ReaperError(`reaper-main.js not found in ${__dirname}: run \`npm run build\``);
  // `node -e CODE a b` sees process.argv = [node, a, b], as `node reaper-main.js b` would.
  const load = `const ts = require(require.resolve('typescript', { paths: [${JSON.stringify(__dirname)}] }));
    const src = require('fs').readFileSync(process.argv[1], 'utf8');
    const out = ts.transpileModule(src, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
    const m = { exports: {} };
    new Function('exports', 'require', 'module', out.outputText)(m.exports, require, m);`;
  return ['-e', load, ts];
}

/** Starts the sidecar and the agent's state file in `stateDir`. */
export async function createReaper(stateDir: string): Promise<Reaper> {
  ensurePrivateDir(stateDir, 'state dir');
  const path = join(stateDir, `agent-${process.pid}.json`);
  const state: StateFile = { agentPid: process.pid, agentStartTime: startTime(process.pid), pgids: [], startTimes: {} };
  writeState(path, state);
  const child: ChildProcess = spawn(process.execPath, [...reaperCommand(), path], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (err) => reject(new ReaperError(`cannot start the reaper: ${err.message}`, err)));
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stdin = child.stdin as Socket;
  stdin.on('error', () => undefined); // the sidecar died: the state file still covers a restart
  // Neither the sidecar nor its pipe may keep the agent's event loop alive.
  child.unref();
  stdin.unref();

  const send = (line: string) => {
    if (!stdin.destroyed) stdin.write(`${line}\n`);
  };
  const save = () => writeState(path, { ...state, pgids: [...Object.keys(state.startTimes)].map(Number) });
  return {
    track(pgid) {
      state.startTimes[pgid] = startTime(pgid);
      save();
      send(`+${pgid}`);
    },
    untrack(pgid) {
      delete state.startTimes[pgid];
      save();
      send(`-${pgid}`);
    },
    async close() {
      stdin.end();
      child.ref();
      await exited;
      rmSync(path, { force: true });
    },
  };
}

export interface OrphanReport {
  /** Process groups that were killed. */
  killed: number[];
  /** State files of dead agents that were removed. */
  removed: string[];
}

/**
 * Kills the process groups listed by earlier agents whose pid is no longer alive (or now belongs
 * to another process), removes their state files, and resolves once those groups are gone (at
 * most `waitMs`). A group whose leader pid now belongs to another process is left alone.
 */
export async function killOrphans(stateDir: string, waitMs = 5_000): Promise<OrphanReport> {
  const report: OrphanReport = { killed: [], removed: [] };
  if (!existsSync(stateDir)) return report; // nothing ran here before
  // Its files say which groups to SIGKILL: a directory others can write to, or a file of theirs
  // in it, would let them choose (UnsafeDirError).
  ensurePrivateDir(stateDir, 'state dir');
  const names = readdirSync(stateDir).filter((n) => /^agent-\d+\.json$/.test(n));
  const uid = process.getuid?.();
  for (const name of names) {
    const file = join(stateDir, name);
    let s: StateFile;
    try {
      const st = lstatSync(file);
      if (!st.isFile() || (uid !== undefined && st.uid !== uid)) continue; // not an agent's of ours: never trusted
      s = JSON.parse(readFileSync(file, 'utf8')) as StateFile;
    } catch {
      continue; // being written or unreadable: leave it
    }
    const same = (pid: number, recorded: string | null | undefined) =>
      isAlive(pid) && (recorded == null || startTime(pid) === recorded);
    if (s.agentPid === process.pid || same(s.agentPid, s.agentStartTime)) continue;
    for (const pgid of s.pgids ?? []) {
      const leaderReused = isAlive(pgid) && !same(pgid, s.startTimes?.[pgid]);
      if (!leaderReused && signalGroup(pgid, 'SIGKILL')) report.killed.push(pgid);
    }
    rmSync(file, { force: true });
    report.removed.push(file);
  }
  for (const deadline = Date.now() + waitMs; liveGroups(report.killed).size > 0 && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 50));
  }
  return report;
}
