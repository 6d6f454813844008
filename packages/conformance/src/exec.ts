/**
 * Running the real tools. Every call is synchronous and bounded by a timeout, and a failure
 * throws a {@link LabCommandError} carrying the command line, the exit status and stderr: a
 * conformance run never continues past a tool it could not run.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** A real tool failed (non-zero exit, signal, or timeout). */
export class LabCommandError extends Error {
  readonly command: string;
  readonly status: number | null;
  readonly stderr: string;
  constructor(command: string, status: number | null, stderr: string, cause?: unknown) {
    super(`${command}: ${status === null ? 'killed or timed out' : `exit ${status}`}${stderr.trim() === '' ? '' : `: ${stderr.trim()}`}`, { cause });
    this.name = 'LabCommandError';
    this.command = command;
    this.status = status;
    this.stderr = stderr;
  }
}

export interface RunOptions {
  readonly input?: string;
  readonly timeoutMs?: number;
}

function quote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** Runs `file args…`, returns stdout. Throws {@link LabCommandError} on any failure. */
export function run(file: string, args: readonly string[], opts: RunOptions = {}): string {
  const command = [file, ...args].map(quote).join(' ');
  try {
    return execFileSync(file, args, {
      input: opts.input ?? '',
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: opts.timeoutMs ?? 20_000,
      maxBuffer: 64 << 20,
    });
  } catch (e) {
    const err = e as { status?: number | null; stderr?: string | Buffer };
    const stderr = typeof err.stderr === 'string' ? err.stderr : (err.stderr?.toString('utf8') ?? String(e));
    throw new LabCommandError(command, err.status ?? null, stderr, e);
  }
}

let nsenter: string | null | undefined; // tidy-allow: where nsenter lives on this machine, looked up once

/**
 * Runs a command inside a named network namespace: `nsenter --net` when present (it only switches
 * the network namespace), else `ip netns exec` (which also remounts /sys: a few ms more per call).
 */
export function runIn(netns: string, file: string, args: readonly string[], opts: RunOptions = {}): string {
  if (nsenter === undefined) nsenter = which('nsenter') ?? null;
  if (nsenter !== null) return run(nsenter, [`--net=/run/netns/${netns}`, file, ...args], opts);
  return run('ip', ['netns', 'exec', netns, file, ...args], opts);
}

/** The path of an executable found on PATH (or in the usual sbin directories), or undefined. */
export function which(name: string): string | undefined {
  const dirs = [...(process.env['PATH'] ?? '').split(':'), '/usr/sbin', '/sbin', '/usr/bin', '/bin'];
  for (const d of dirs) {
    if (d === '') continue;
    const p = `${d}/${name}`;
    if (existsSync(p)) return p;
  }
  return undefined;
}

/**
 * The Python 3 the packet pump runs on: the system one when present (a version manager's shim
 * costs tens of milliseconds per start), else whatever `python3` is on PATH.
 */
export function pythonPath(): string | undefined {
  return existsSync('/usr/bin/python3') ? '/usr/bin/python3' : which('python3');
}
