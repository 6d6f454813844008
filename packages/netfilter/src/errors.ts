/**
 * Typed errors users handle: each has a `code` from a closed union and a guard, so callers match
 * on codes instead of message text. Messages follow the real tools where netsim imitates them.
 */

export type NetfilterErrorCode =
  /** iptables-save / iptables-restore text could not be parsed. */
  | 'parse'
  /** An iptables-restore input failed while being applied (the real tool's "line N failed"). */
  | 'restore'
  /** An iptables argv command failed (the real tool's exit status 1 or 2 and message). */
  | 'command';

/** Where in a text input an error was found. Lines and columns are 1-based. */
export interface SourceLocation {
  readonly file?: string;
  readonly line: number;
  readonly column: number;
  /** The offending token as it appeared in the input. */
  readonly token: string;
}

export class NetfilterError extends Error {
  override readonly name = 'NetfilterError';
  readonly code: NetfilterErrorCode;
  readonly location?: SourceLocation;
  /** The process exit status the real tool would have returned (1, 2 or 4 for iptables). */
  readonly exitCode: number;
  /**
   * What the real tool prints on stderr for this failure (e.g. `iptables-restore: line 5 failed: …`),
   * when netsim imitates one. `message` is the netsim-style explanation naming the input.
   */
  readonly stderr?: string;

  constructor(
    code: NetfilterErrorCode,
    message: string,
    opts: { location?: SourceLocation; exitCode?: number; stderr?: string } = {},
  ) {
    super(message);
    this.code = code;
    if (opts.location !== undefined) this.location = opts.location;
    this.exitCode = opts.exitCode ?? 1;
    if (opts.stderr !== undefined) this.stderr = opts.stderr;
  }
}

export function isNetfilterError(e: unknown): e is NetfilterError {
  return e instanceof NetfilterError;
}
