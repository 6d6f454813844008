/**
 * The `iptables` command line as a pure function: `exec(ruleset, argv)` does what
 * `iptables argv…` does on a host whose rules are `ruleset`, and returns the new rules with the
 * command's stdout, stderr and exit status, byte for byte as iptables 1.8.x (nf_tables) prints
 * them. A failed command leaves the ruleset as it was, as the real (transactional) tool does.
 */
import { applyCommand, DraftSet } from './apply.ts';
import { parseCommand } from './command.ts';
import { DEFAULT_IPTABLES_VERSION, iptablesStderr, isFailure, type IptablesVersion } from './failure.ts';
import type { Ruleset } from './types.ts';

export interface ExecResult {
  readonly ruleset: Ruleset;
  readonly stdout: string;
  readonly stderr: string;
  /** 0 on success; 1 refused (no such chain, bad rule…), 2 bad command line, 3 no such table, 4 kernel refusal. */
  readonly exitCode: number;
}

export interface ExecOptions {
  /** Version the messages and listings imitate (default 1.8.10). */
  readonly version?: IptablesVersion;
  /** ipsets that exist on the host; when given, `-m set` naming another fails as on a real host. */
  readonly ipsets?: readonly string[];
}

/**
 * Runs one `iptables` command (argv without the program name).
 *
 * @example
 * let r = freshRuleset();
 * ({ ruleset: r } = exec(r, ['-t', 'nat', '-N', 'KUBE-SERVICES']));
 * const res = exec(r, ['-t', 'nat', '-N', 'KUBE-SERVICES']);
 * res.exitCode // 1
 * res.stderr   // 'iptables: Chain already exists.\n'
 */
export function exec(ruleset: Ruleset, argv: readonly string[], opts: ExecOptions = {}): ExecResult {
  const version = opts.version ?? DEFAULT_IPTABLES_VERSION;
  const drafts = new DraftSet(ruleset);
  const ipsets = opts.ipsets === undefined ? undefined : new Set(opts.ipsets);
  try {
    const cmd = parseCommand(argv, {
      mode: 'iptables',
      userChain: (table, name) => drafts.get(table).userChainName(name),
      jumpTo: (table, name, isGoto) => drafts.get(table).jumpTo(name, isGoto),
      ...(ipsets !== undefined && { ipsetExists: (name: string) => ipsets.has(name) }),
    });
    const stdout = applyCommand(drafts.get(cmd.table), cmd, version);
    const mutates = cmd.command !== 'L' || cmd.zero;
    const next = mutates && cmd.command !== 'S' && cmd.command !== 'C' ? drafts.commit(cmd.table) : ruleset;
    return { ruleset: next, stdout, stderr: cmd.warnings.join(''), exitCode: 0 };
  } catch (e) {
    if (!isFailure(e)) throw e;
    return { ruleset, stdout: '', stderr: iptablesStderr(e, version), exitCode: e.exitCode };
  }
}
