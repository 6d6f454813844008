/**
 * @internal
 * `-j REJECT` (libipt_REJECT), whole: `--reject-with` by any prefix of a type's name or alias as
 * the real parser takes it, the kernel's refusal of tcp-reset on a rule not limited to tcp, the
 * filter table and its input, forward and output hooks, the printed words and `-L` text, and the
 * walk's opcode (a terminal REJECT verdict).
 */
import { OptionTable, OptionTracker, type ExtensionInstance } from '../extension.ts';
import type { FastTargetReader } from '../fastCursor.ts';
import { paramProblem } from '../failure.ts';
import { T_REJECT } from '../targetCode.ts';
import type { TargetModule } from '../targets.ts';
import type { Hook, RejectWith, Target } from '../types.ts';

type RejectTarget = Extract<Target, { kind: 'REJECT' }>;

const REJECT_HOOKS: readonly Hook[] = ['INPUT', 'FORWARD', 'OUTPUT'];

const REJECT_TYPES: readonly [RejectWith, string][] = [
  ['icmp-net-unreachable', 'net-unreach'],
  ['icmp-host-unreachable', 'host-unreach'],
  ['icmp-port-unreachable', 'port-unreach'],
  ['icmp-proto-unreachable', 'proto-unreach'],
  ['icmp-net-prohibited', 'net-prohib'],
  ['icmp-host-prohibited', 'host-prohib'],
  ['icmp-admin-prohibited', 'admin-prohib'],
  ['tcp-reset', 'tcp-rst'],
];
const REJECT_OPTIONS = new OptionTable([{ name: 'reject-with', args: 1 }]);

const REJECT_WITH: ReadonlySet<string> = new Set(REJECT_TYPES.map(([name]) => name));

/** The fast reader's `[--reject-with TYPE]`, TYPE spelt out as iptables-save prints it. */
function fastReject(): FastTargetReader {
  return (c, ctx) => {
    let withType: RejectWith = 'icmp-port-unreachable';
    if (c.p < c.n) {
      if (!c.word('--reject-with')) return undefined;
      const end = c.wordEnd();
      if (end < 0) return undefined;
      const name = c.s.slice(c.p, end);
      if (!REJECT_WITH.has(name)) return undefined;
      withType = name as RejectWith;
      c.next(end);
    }
    // The kernel refuses tcp-reset on a rule not limited to tcp: the general parser marks that.
    if (withType === 'tcp-reset' && (ctx.proto !== 6 || ctx.protoNegate)) return undefined;
    return { kind: 'REJECT', with: withType };
  };
}

export const REJECT_MODULE: TargetModule = {
  name: 'REJECT',
  kind: 'REJECT',
  options: REJECT_OPTIONS,
  tables: ['filter'],
  hooks: () => REJECT_HOOKS,
  create(): ExtensionInstance<Target> {
    const t: OptionTracker = new OptionTracker('REJECT', REJECT_OPTIONS);
    let withType: RejectWith = 'icmp-port-unreachable';
    return {
      name: 'REJECT',
      spec: REJECT_OPTIONS,
      option(use) {
        t.use(use, REJECT_OPTIONS.specs[0]!);
        const v = (use.values[0] ?? '').toLowerCase();
        // The real parser takes the first type whose name or alias starts with the argument.
        const found = REJECT_TYPES.find(([name, alias]) => name.startsWith(v) || alias.startsWith(v));
        if (found === undefined) throw paramProblem(`unknown reject type "${use.values[0] ?? ''}"`, use.argIndex + 1);
        withType = found[0];
      },
      finish(env) {
        // The kernel's REJECT refuses tcp-reset on rules not limited to tcp.
        if (withType === 'tcp-reset' && (env.proto !== 6 || env.protoInvert)) env.rejectRule('Invalid argument');
        return { kind: 'REJECT', with: withType };
      },
    };
  },
  save: (t, out) => out.push('--reject-with', (t as RejectTarget).with),
  list: (t) => `reject-with ${(t as RejectTarget).with}`,
  code: (t, c) => {
    c.op = T_REJECT;
    c.verdict = { kind: 'REJECT', with: (t as RejectTarget).with };
  },
  fast: fastReject,
};

