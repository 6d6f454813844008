/**
 * @internal
 * How the iptables tools fail, before a front end (argv `exec`, `iptables-restore`, `parseSave`)
 * turns the failure into a {@link NetfilterError} with the real tool's stderr text.
 *
 * The real tools have three families of failure, each with its own exit status and layout:
 * - `param` (exit 2): a bad command line ("PARAMETER_PROBLEM"): `iptables v1.8.x (nf_tables): msg`
 *   plus the `Try \`iptables -h'…` hint; a few messages (`Bad argument \`x'`) print without the prefix.
 * - `other` (exit 1): the operation was refused (`iptables: Chain already exists.`).
 * - `kernel` (exit 4): the kernel refused the change (`RULE_APPEND failed (Invalid argument): …`).
 * - `version` (exit 3): the table does not exist ("Perhaps iptables or your kernel needs to be upgraded").
 */

export type FailureKind = 'param' | 'other' | 'kernel' | 'version';

export class Failure extends Error {
  readonly kind: FailureKind;
  /** Index of the offending token in the argv being parsed, when one is to blame. */
  argIndex: number | undefined;
  /** `param` messages the real tool prints without its `iptables vX (nf_tables): ` prefix. */
  readonly bare: boolean;
  /** `other` messages the real tool prints with the version prefix (and no trailing period). */
  readonly prefixed: boolean;
  /** A warning line the real tool prints before the message (`Warning: cannot open …`). */
  readonly warning: string;

  constructor(kind: FailureKind, message: string, opts: { argIndex?: number; bare?: boolean; prefixed?: boolean; warning?: string } = {}) {
    // No stack trace: a Failure is an expected outcome (a `-C` that finds no rule, a line the
    // real tool rejects), always caught and turned into the tool's exit status and stderr or a
    // NetfilterError (which has its own stack). Capturing one costs more than the rest of a
    // failing `iptables -C` together.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message);
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.kind = kind;
    this.argIndex = opts.argIndex;
    this.bare = opts.bare ?? false;
    this.prefixed = opts.prefixed ?? false;
    this.warning = opts.warning ?? '';
  }

  get exitCode(): number {
    return this.kind === 'param' ? 2 : this.kind === 'other' ? 1 : this.kind === 'version' ? 3 : 4;
  }
}

/** A bad command line (exit 2). */
export function paramProblem(message: string, argIndex?: number): Failure {
  return new Failure('param', message, argIndex === undefined ? {} : { argIndex });
}

/** The real tool's `Bad argument \`x'` for a stray word, printed without the version prefix. */
export function badArgument(token: string, argIndex: number): Failure {
  return new Failure('param', `Bad argument \`${token}'`, { argIndex, bare: true });
}

/** A refused operation (exit 1), e.g. `No chain/target/match by that name`. */
export function refused(message: string): Failure {
  return new Failure('other', message);
}

/** A change the kernel rejects (exit 4): `OP failed (errno text): object`. */
export function kernelRefused(op: string, errno: string, object: string): Failure {
  return new Failure('kernel', `${op} failed (${errno}): ${object}`);
}

export function isFailure(e: unknown): e is Failure {
  return e instanceof Failure;
}

/** The iptables release whose output netsim imitates. See docs/netfilter.md. */
export type IptablesVersion = '1.8.9' | '1.8.10';

/**
 * What `exec`, `restore` and the listings imitate unless told otherwise: 1.8.10, which deployed
 * nodes run (it prints protocol names with `-n`, where 1.8.9 prints numbers).
 */
export const DEFAULT_IPTABLES_VERSION: IptablesVersion = '1.8.10';

const HINT = "Try `iptables -h' or 'iptables --help' for more information.";
const RESTORE_HINT = "Try `iptables-restore -h' or 'iptables-restore --help' for more information.";

/** The stderr text of the `iptables` command for a failure, ending in a newline. */
export function iptablesStderr(f: Failure, version: IptablesVersion): string {
  const prefix = `iptables v${version} (nf_tables): `;
  switch (f.kind) {
    case 'param':
      return `${f.warning}${f.bare ? '' : prefix}${f.message}\n${HINT}\n`;
    case 'other':
      return f.prefixed ? `${prefix}${f.message}\n` : `iptables: ${f.message}.\n`;
    case 'kernel':
      return `${prefix} ${f.message}\n`;
    case 'version':
      return `${prefix}${f.message}\n`;
  }
}

/** The stderr text of `iptables-restore` for a failure on input line `line`, ending in a newline. */
export function restoreStderr(f: Failure, line: number, version: IptablesVersion): string {
  const prefix = `iptables-restore v${version} (nf_tables): `;
  switch (f.kind) {
    case 'param':
      return `${f.warning}${f.bare ? '' : prefix}${f.message}\nError occurred at line: ${line}\n${RESTORE_HINT}\n`;
    case 'other':
      return f.prefixed ? `${prefix}${f.message}\n` : `iptables-restore: line ${line} failed: ${f.message}.\n`;
    case 'kernel':
      return `${prefix}\nline ${line}: ${f.message}\n`;
    case 'version':
      return `${prefix}${f.message}\n`;
  }
}
