/**
 * Typed errors users handle: each carries a `code` from a closed union, and {@link isKernelError}
 * narrows an unknown catch value. Messages follow the real tools (`ip`, `sysctl`, `conntrack`)
 * where netsim imitates them, so a reader recognises them.
 */

export type KernelErrorCode =
  /** A configuration request the kernel refuses (`ip addr add` of an existing address, bad gateway, …). */
  | 'config'
  /** A name that does not exist (interface, host, table). */
  | 'not-found'
  /** `sysctl -w` of an unknown key or an out-of-range value. */
  | 'sysctl'
  /** A `conntrack` command line the real tool rejects (exit status 2). */
  | 'conntrack-cli'
  /** A topology request the network refuses (wiring an interface twice, unknown host). */
  | 'topology'
  /** A host file could not be parsed; `location` says where. */
  | 'parse';

/** Where in a text input an error was found. Lines and columns are 1-based. */
export interface KernelSourceLocation {
  readonly file?: string;
  readonly line: number;
  readonly column: number;
  readonly token: string;
}

export class KernelError extends Error {
  override readonly name = 'KernelError';
  readonly code: KernelErrorCode;
  readonly location?: KernelSourceLocation;
  /** The offending word of a command line, when one is to blame. */
  readonly token?: string;
  /** The exit status the imitated tool returns (`conntrack` uses 2 for usage errors, 1 otherwise). */
  readonly exitCode: number;

  constructor(code: KernelErrorCode, message: string, opts: { location?: KernelSourceLocation; token?: string; exitCode?: number } = {}) {
    super(message);
    this.code = code;
    if (opts.location !== undefined) this.location = opts.location;
    if (opts.token !== undefined) this.token = opts.token;
    this.exitCode = opts.exitCode ?? 1;
  }
}

/** Narrows an unknown value to a {@link KernelError}. */
export function isKernelError(e: unknown): e is KernelError {
  return e instanceof KernelError;
}
