/**
 * A rule as `iptables` argv words and back: {@link parseRuleSpec} reads the words after
 * `-A CHAIN` into a {@link Rule} (normalised as the real tool normalises it), {@link formatRuleSpec}
 * prints a rule exactly as `iptables-save` (1.8.x, nf_tables) does: `-s -d -i -o -p -f`, then the
 * `-m` modules in order with the implicit `-m tcp` where the real tool inserts it, then `-j`/`-g`.
 */
import { parseCommand } from './command.ts';
import { NetfilterError } from './errors.ts';
import { Failure, iptablesStderr, DEFAULT_IPTABLES_VERSION } from './failure.ts';
import { formatCidr } from './ip.ts';
import { saveMatchWords } from './matches.ts';
import { protocolName } from './names.ts';
import { saveTargetWords } from './targets.ts';
import type { IfaceMatch, Rule, TableName } from './types.ts';

function ifaceText(i: IfaceMatch): string {
  return i.wildcard ? `${i.name}+` : i.name;
}

/**
 * The words of a rule spec as `iptables-save` prints them (strings already quoted).
 * `counters` inserts `-c packets bytes` before the target, as `iptables -S -v` does.
 */
export function ruleSpecWords(rule: Rule, opts: { counters?: boolean } = {}): string[] {
  const out: string[] = [];
  if (rule.src) {
    if (rule.src.negate) out.push('!');
    out.push('-s', formatCidr(rule.src.cidr));
  }
  if (rule.dst) {
    if (rule.dst.negate) out.push('!');
    out.push('-d', formatCidr(rule.dst.cidr));
  }
  if (rule.inIface) {
    if (rule.inIface.negate) out.push('!');
    out.push('-i', ifaceText(rule.inIface));
  }
  if (rule.outIface) {
    if (rule.outIface.negate) out.push('!');
    out.push('-o', ifaceText(rule.outIface));
  }
  if (rule.proto) {
    if (rule.proto.negate) out.push('!');
    out.push('-p', protocolName(rule.proto.proto));
  }
  if (rule.fragment) {
    if (rule.fragment.negate) out.push('!');
    out.push('-f');
  }
  for (const m of rule.matches) saveMatchWords(m, out);
  if (opts.counters === true) {
    const c = rule.counters;
    out.push('-c', String(c?.packets ?? 0), String(c?.bytes ?? 0));
  }
  if (rule.target) saveTargetWords(rule.target, out);
  return out;
}

/**
 * A rule spec as one line, exactly as `iptables-save` prints it after `-A CHAIN`.
 *
 * @example
 * formatRuleSpec(parseRuleSpec(['-p', 'tcp', '--dport', '80', '-j', 'ACCEPT']))
 * // '-p tcp -m tcp --dport 80 -j ACCEPT'
 */
export function formatRuleSpec(rule: Rule): string {
  return ruleSpecWords(rule).join(' ');
}

/** The identity of a rule for `-D`/`-C`: its printed spec (counters are not part of it). */
export function ruleKey(rule: Rule): string {
  // Rules are immutable, so a rule's key is made once: `-C`/`-D` compare it with every rule of the
  // chain, and a controller polling with `-C` asks again and again about the same rules.
  let key = ruleKeys.get(rule);
  if (key === undefined) {
    key = ruleSpecWords(rule).join(' ');
    ruleKeys.set(rule, key);
  }
  return key;
}

const ruleKeys = new WeakMap<Rule, string>(); // tidy-allow: memo of a pure function of an immutable rule

export interface ParseRuleSpecOptions {
  /** The table the rule is for (default `filter`): decides which targets are accepted. */
  readonly table?: TableName;
  /** The chain the rule is for, when known (the real tool checks `-i`/`-o` against built-in chains). */
  readonly chain?: string;
  /** User chains `-j`/`-g` may name; by default any name that is not a known target is accepted. */
  readonly chains?: readonly string[];
}

/**
 * Reads rule-spec words (what follows `-A CHAIN`) into a rule, with the real tool's messages for
 * bad input (thrown as a {@link NetfilterError} with code `command`, exit status and stderr).
 * A spec with several `-s`/`-d` addresses makes several rules; this returns the first and throws
 * for more (use `exec` for that).
 *
 * @example
 * parseRuleSpec(['-p', 'tcp', '--dport', '80', '-j', 'DNAT', '--to-destination', '10.0.0.1:8080'], { table: 'nat' })
 */
export function parseRuleSpec(words: readonly string[], opts: ParseRuleSpecOptions = {}): Rule {
  const chain = opts.chain ?? 'NETSIM-RULE';
  const table = opts.table ?? 'filter';
  const known = opts.chains === undefined ? undefined : new Set(opts.chains);
  try {
    const cmd = parseCommand(['-A', chain, ...words], {
      mode: 'restore',
      table,
      userChain: (_t, name) => (known === undefined || known.has(name) ? name : undefined),
    });
    const [rule, ...more] = cmd.rules;
    if (rule === undefined || more.length > 0) {
      throw new NetfilterError('command', `parseRuleSpec: the spec expands to ${cmd.rules.length} rules (several -s/-d addresses); use exec`);
    }
    return rule;
  } catch (e) {
    if (e instanceof Failure) {
      const at = e.argIndex === undefined ? undefined : e.argIndex - 2;
      const token = at === undefined || at < 0 ? undefined : words[at];
      const where = token === undefined ? '' : ` at word ${(at ?? 0) + 1} "${token}"`;
      throw new NetfilterError('command', `parseRuleSpec${where}: ${e.message.trim()}`, {
        exitCode: e.exitCode,
        stderr: iptablesStderr(e, DEFAULT_IPTABLES_VERSION),
      });
    }
    throw e;
  }
}
