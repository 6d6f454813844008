/**
 * The CLI's exit statuses and the error that carries a user's mistake to the top.
 *
 * 0: success. 1: an expectation not met or a counterexample found. 2: bad usage or bad input
 * (commander's usage errors, unreadable or invalid files, a `--controllers` module that cannot be
 * used, an output path that cannot be written). 3: netsim itself failed (a bug: the only case
 * that prints a stack trace).
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, internal: 3 } as const;

/** A mistake in what the user gave: printed as one message on stderr, exit status 2, no stack. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A thrown value's message, whatever was thrown (a controller module may throw anything). */
export function messageOf(e: unknown): string {
  try {
    if (e instanceof Error) return e.message;
    return String(e);
  } catch {
    return Object.prototype.toString.call(e);
  }
}
