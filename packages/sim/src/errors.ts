/**
 * Typed errors of the simulation engine. Users match on `code`, never on message text.
 *
 * Operating errors (a bound was hit, a scenario asks for something impossible) are
 * {@link SimError}s; programmer errors inside the engine are plain assertion failures.
 */

export type SimErrorCode =
  /** An option or argument is out of its documented range (a negative delay, a seed that is not an integer). */
  | 'invalid-argument'
  /** A world call was made while no controller task was running (outside the simulation's steps). */
  | 'no-current-task'
  /** The event queue holds more pending steps than `bounds.maxPendingSteps`. */
  | 'bound-pending-steps'
  /** The trace holds more events than `bounds.maxTraceEvents`. */
  | 'bound-trace-events'
  /** The engine was asked to run while it was already running. */
  | 'reentrant-run'
  /** A name (agent, probe, invariant) was registered twice. */
  | 'duplicate-name'
  /** A name (agent, node, probe) does not exist. */
  | 'unknown-name';

/**
 * An error the simulator raises for bad input or an exceeded bound.
 *
 * @example
 * ```ts
 * try { engine.after(-1, { kind: 'x', label: 'y' }, () => {}); }
 * catch (e) { if (isSimError(e) && e.code === 'invalid-argument') console.log(e.message); }
 * ```
 */
export class SimError extends Error {
  override readonly name = 'SimError';
  readonly code: SimErrorCode;
  /**
   * For a problem in a scenario's data (`SimScenario`): the offending field, as keys and indexes from
   * the scenario's root (`['cluster', 'nodes', 0, 'network', 2]`), so a file format can point at it.
   */
  readonly path?: readonly (string | number)[];

  constructor(code: SimErrorCode, message: string, opts: { readonly path?: readonly (string | number)[] } = {}) {
    super(message);
    this.code = code;
    if (opts.path !== undefined) this.path = opts.path;
  }
}

/** True when `e` is a {@link SimError}. */
export function isSimError(e: unknown): e is SimError {
  return e instanceof SimError;
}

/** Crash loudly on a broken engine invariant (a bug in netsim, not in the user's input). */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`netsim assertion failed: ${message}`);
}

/**
 * A tool process that exited non-zero, as the Go libraries agents use report it (go-iptables,
 * knftables): `running [ARGV]: exit status N: STDERR`. {@link IptablesError} and
 * {@link NftExecError} are its two kinds.
 */
export abstract class ToolExecError extends Error {
  /** The full command line, program name first. */
  readonly argv: readonly string[];
  readonly exitCode: number;
  readonly stderr: string;

  constructor(argv: readonly string[], exitCode: number, stderr: string) {
    super(`running [${argv.join(' ')}]: exit status ${exitCode}: ${stderr.trimEnd()}`);
    this.argv = argv;
    this.exitCode = exitCode;
    this.stderr = stderr;
  }
}
