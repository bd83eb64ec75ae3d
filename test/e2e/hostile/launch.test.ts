/**
 * What a pool agent runs, attacked the way a hostile submitter would (audit findings 2, 3, 4, 9):
 * the attacker's own workflow schedules `runWorkers` on the node's queue directly, with a launch
 * of its choosing, against real `telastic agent`s and a real Temporal server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { nodeQueue } from '../../../activities/types';
import type { Launch, RoundAssignment } from '../../../src/job/assignment';
import { testAddress } from '../../setup/temporal';
import { WORKER, e2eSuite, owners, poolState, recordedEnvs, testPool, tmpDir, waitFor } from '../harness';
import { startAttacker, type Attacker, type AttackResult } from './attacker';

const e2e = e2eSuite();
const S = tmpDir('hostile-launch');
const allowed = path.join(S, 'allowed');
const proj = path.join(S, 'proj');
const pool = testPool('hostile-launch', e2e.agents, [allowed, proj, path.dirname(WORKER)]);
let attacker: Attacker;
let round = 0;

function write(file: string, text: string): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

/**
 * One launch on `node`, scheduled by the attacker; each gets a round of its own (no adoption).
 * The node is granted to no job, so its pool backstop may stop the workers early ("no longer
 * granted"): such a launch is made again, at most 5 times.
 */
async function launch(node: string, l: Partial<Launch> & { script: string; args?: string[] }): Promise<AttackResult> {
  let r: AttackResult | undefined;
  for (let i = 0; i < 5 && (r === undefined || (!r.ok && r.type === 'WorkersStopped')); i++) r = await launchOnce(node, l);
  return r as AttackResult;
}

function launchOnce(node: string, l: Partial<Launch> & { script: string; args?: string[] }): Promise<AttackResult> {
  const a: RoundAssignment = {
    jobId: 'hostile-launch', round: ++round, nodeId: node, role: 'default', groupRank: 0, groupWorldSize: 1, rankOffset: 0,
    localWorldSize: 1, worldSize: 1, masterAddr: '127.0.0.1', masterPort: 29500, restartCount: 0, maxRestarts: 0, heartbeatIntervalMs: 1000,
    launch: { entrypoint: { script: l.script, args: l.args ?? [], module: false, noPython: false }, env: l.env ?? {} },
  };
  return attacker.run(nodeQueue(node), 'runWorkers', a, 60_000);
}

beforeAll(async () => {
  write(path.join(allowed, 'train.py'), 'import sys, marker\nmarker.mark(sys.argv[1])\n');
  mkdirSync(proj);
  write(path.join(allowed, 'marker.py'), 'import os\ndef mark(p):\n    open(p, "w").write("legit")\n');
  attacker = await startAttacker(testAddress());
  pool.controller();
  pool.agent('hl-n1', ['--nproc', '1', '--allow-env', 'PYTHON*']);
  pool.agent('hl-n2', ['--nproc', '1', '--no-tls', '--pass-env', 'TEMPORAL_TEST_PASSED'], { TEMPORAL_API_KEY: 'sk-agent-secret', TEMPORAL_TEST_PASSED: 'given' });
  await waitFor('2 free nodes', async () => Object.values(owners(await poolState(e2e.conn, pool.name))).filter((o) => o === 'free').length === 2, 120_000)
    .catch((err: unknown) => { for (const a of e2e.agents) console.log(a.nodeId, a.proc.exitCode, a.output()); throw err; });
}, 150_000);

afterAll(async () => {
  await attacker?.close();
});

test('finding 2: a symlink flipping between an allowed and an attacker directory; every launch that ran ran the allowed files', async () => {
  const evil = path.join(S, 'evil');
  write(path.join(evil, 'train.py'), 'import sys\nopen(sys.argv[1], "w").write("evil")\n');
  write(path.join(evil, 'marker.py'), 'def mark(p):\n    open(p, "w").write("evil")\n');
  const link = path.join(S, 'att', 'link');
  mkdirSync(path.dirname(link));
  symlinkSync(allowed, link);
  const out = path.join(S, 'flip-out');
  mkdirSync(out);
  // The attacker's process repoints the link every 2 ms, for at most 30 s.
  const flip = [
    'import os, sys, time',
    'link, a, b = sys.argv[1:4]; end = time.time() + 30; i = 0',
    'while time.time() < end:',
    '    i += 1; os.symlink(a if i % 2 else b, link + ".tmp"); os.replace(link + ".tmp", link); time.sleep(0.002)',
  ].join('\n');
  const flipper: ChildProcess = spawn('python3', ['-c', flip, link, evil, allowed], { stdio: 'ignore' });
  const ran: string[] = [];
  try {
    const deadline = Date.now() + 25_000;
    for (let i = 0; i < 20 && Date.now() < deadline && ran.length < 6; i++) {
      const mark = path.join(out, `m${i}`);
      const r = await launchOnce('hl-n1', { script: path.join(link, 'train.py'), args: [mark] });
      // A launch the backstop stopped may have run before it was stopped: its marker counts.
      if (existsSync(mark)) ran.push(readFileSync(mark, 'utf8'));
      if (!r.ok && r.type !== 'WorkersStopped') expect(r.message).toMatch(/^agent hl-n1 refuses .*att\/link\/train\.py: resolves to .*evil\/train\.py, not under --allow/);
    }
  } finally {
    flipper.kill('SIGKILL');
  }
  console.log(`symlink flip: ${ran.length} launches ran: ${JSON.stringify(ran)}`);
  expect(ran.length).toBeGreaterThan(0);
  expect(ran.filter((m) => m !== 'legit')).toEqual([]);
});

test('finding 3: PYTHONPYCACHEPREFIX with planted bytecode, on an agent with --allow-env PYTHON*: refused, nothing ran', async () => {
  const script = write(path.join(allowed, 'uses_json.py'), 'import json\nprint("uses_json ran")\n');
  const prefix = path.join(S, 'evilcache');
  const pwned = path.join(S, 'PWNED');
  const evilJson = write(path.join(S, 'evil_json.py'), `open(${JSON.stringify(pwned)}, "w").write("pwned")\nexec(compile(open(__file__).read(), __file__, "exec"))\n`);
  // Bytecode for the stdlib's json, unchecked (never compared with its source), under the attacker's prefix.
  execFileSync('python3', ['-c', [
    'import importlib.util, json, py_compile, sys',
    `sys.pycache_prefix = ${JSON.stringify(prefix)}`,
    `py_compile.compile(${JSON.stringify(evilJson)}, cfile=importlib.util.cache_from_source(json.__file__), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)`,
  ].join('\n')]);
  const r = await launch('hl-n1', { script, env: { PYTHONPYCACHEPREFIX: prefix } });
  expect({ pwned: existsSync(pwned) }).toEqual({ pwned: false });
  expect(r).toMatchObject({ ok: false, type: 'NotAllowed', nonRetryable: true });
  expect(r.ok ? '' : r.message).toMatch(/^agent hl-n1 refuses env PYTHONPYCACHEPREFIX: never taken from a submission, whatever --allow-env says \(Python reads PYTHON\* variables/);
});

test('finding 4: a generic launcher in a virtualenv under an allowed directory: refused, the payload did not run', async () => {
  const venv = path.join(proj, '.venv');
  write(path.join(venv, 'pyvenv.cfg'), 'home = /usr/bin\n');
  const runner = write(path.join(venv, 'lib', 'python3.11', 'site-packages', 'x', 'run.py'), 'import runpy, sys\nrunpy.run_path(sys.argv[1], run_name="__main__")\n');
  const pwned = path.join(S, 'PWNED-venv');
  const payload = write(path.join(S, 'evil', 'payload.py'), `open(${JSON.stringify(pwned)}, "w").write("pwned")\n`);
  const r = await launch('hl-n1', { script: runner, args: [payload] });
  expect({ pwned: existsSync(pwned) }).toEqual({ pwned: false });
  expect(r).toMatchObject({ ok: false, type: 'NotAllowed', nonRetryable: true });
  expect(r.ok ? '' : r.message).toMatch(/^agent hl-n1 refuses .*site-packages\/x\/run\.py: inside site-packages .*; an operator who means it names it with --allow-file$/);
});

test('finding 9: workers of a pool agent started with TEMPORAL_API_KEY do not see it; a name given to --pass-env they do', async () => {
  const out = path.join(S, 'env-out');
  const r = await launch('hl-n2', { script: WORKER, args: ['--out', out, '--seconds', '0'] });
  expect(r).toMatchObject({ ok: true, value: { state: 'succeeded' } });
  const [env] = [...recordedEnvs(out).values()];
  expect(readdirSync(out).length).toBeGreaterThan(0);
  expect(Object.keys(env).filter((k) => k.startsWith('TEMPORAL_'))).toEqual(['TEMPORAL_TEST_PASSED']);
  expect(env).toMatchObject({ TEMPORAL_TEST_PASSED: 'given', TELASTIC_NODE_ID: 'hl-n2', RANK: '0' });
});
