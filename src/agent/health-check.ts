/**
 * The agent operator's node health check (`--health-check CMD`, TELASTIC_HEALTH_CHECK): a shell
 * command run before the node is given a rank (activities/node.ts `prepare`) and when the job
 * checks again whether a failing node recovered (`checkHealth`). Exit 0 passes; anything else
 * (a non-zero exit, a signal, the timeout) fails, with the command's last stderr line as the
 * reason. Never the submitter's: a pool agent takes it from its own command line only.
 */
import { spawn } from 'node:child_process';

export interface HealthCheck {
  /** Run with `/bin/sh -c`. */
  command: string;
  /** `--health-check-timeout`. @default DEFAULT_HEALTH_CHECK_TIMEOUT_MS */
  timeoutMs: number;
}

/** Long enough for `nvidia-smi` on a busy 8-GPU node; short beside the prepare's own bound. */
export const DEFAULT_HEALTH_CHECK_TIMEOUT_MS = 30_000;

export type HealthResult = { ok: true; durationMs: number } | { ok: false; reason: string; exitCode: number | null; durationMs: number };

const MAX_REASON = 300;
const KEEP_STDERR = 64 * 1024;

/** The last non-blank line of `text`, cut to MAX_REASON characters. */
export function lastLine(text: string): string | null {
  const line = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '').pop();
  if (line === undefined) return null;
  return line.length > MAX_REASON ? `${line.slice(0, MAX_REASON)}…` : line;
}

/**
 * Run the check with `env` (the agent's environment plus the job's TELASTIC_* names). A timeout
 * kills the check's whole process group (SIGKILL).
 */
export function runHealthCheck(check: HealthCheck, env: NodeJS.ProcessEnv): Promise<HealthResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    let stderr = '';
    let timedOut = false;
    const child = spawn('/bin/sh', ['-c', check.command], { env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-KEEP_STDERR);
    });
    const kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, check.timeoutMs);
    const done = (r: HealthResult) => {
      clearTimeout(timer);
      resolve(r);
    };
    child.on('error', (err) => done({ ok: false, reason: `cannot run the health check: ${err.message}`, exitCode: null, durationMs: Date.now() - started }));
    child.on('close', (code, signal) => {
      const durationMs = Date.now() - started;
      if (timedOut) return done({ ok: false, reason: `health check timed out after ${check.timeoutMs / 1000}s${tail(stderr)}`, exitCode: null, durationMs });
      if (code === 0) return done({ ok: true, durationMs });
      const how = signal ? `killed by ${signal}` : `exit code ${code}`;
      done({ ok: false, reason: lastLine(stderr) ?? `health check failed (${how})`, exitCode: code, durationMs });
    });
  });
}

function tail(stderr: string): string {
  const line = lastLine(stderr);
  return line ? `: ${line}` : '';
}
