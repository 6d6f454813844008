/**
 * Running one case on both sides and comparing: the ruleset goes to the real kernel through the
 * lab and to netsim's evaluator through the path model, the same packet goes to both, and the
 * outcomes are compared field by field.
 */
import { formatIpv4 } from '@netsim/netfilter';
import type { NfCase } from './generate.ts';
import type { Lab, Sysctls } from './lab.ts';
import { diffOutcomes, fromKernel, type Outcome } from './outcome.ts';
import { describePacket } from './packet.ts';
import { predict, type Prediction } from './pathModel.ts';
import { renderRestore } from './render.ts';
import type { Topology } from './topology.ts';

export interface CaseResult {
  readonly rulesetText: string;
  readonly kernel: Outcome;
  readonly netsim: Prediction;
  /** One line per field that differs; empty when kernel and netsim agree (or netsim could not decide). */
  readonly diffs: readonly string[];
  /** netsim's evaluator could not decide (a module or target it does not evaluate): nothing to compare. */
  readonly undecided: string | null;
}

/** The sysctls every netfilter-level case runs with: rp_filter off everywhere. */
export function netfilterLevelSysctls(t: Topology): Sysctls {
  const s: { [k: string]: number } = { 'net.ipv4.conf.all.rp_filter': 0, 'net.ipv4.conf.default.rp_filter': 0 };
  for (const i of t.ifaces) s[`net.ipv4.conf.${i.name}.rp_filter`] = 0;
  return s;
}

/**
 * Runs one netfilter-level case in `lab` and with netsim, and compares. The kernel gets
 * `rulesetText` when given (a fixture as recorded), else netsim's ruleset written by `render.ts`.
 */
export function runNfCase(lab: Lab, c: NfCase, opts: { readonly rulesetText?: string } = {}): CaseResult {
  const rulesetText = opts.rulesetText ?? renderRestore(c.ruleset);
  lab.reset({ ruleset: rulesetText, sysctls: netfilterLevelSysctls(lab.topology) });
  const [obs] = lab.inject([c.injection]);
  if (obs === undefined) throw new Error('conformance: the pump returned no observation');
  const kernel = fromKernel(obs, lab.counters(), lab.conntrack());
  const netsim = predict(c.ruleset, c.injection, lab.topology);
  if (netsim.unknown !== undefined) return { rulesetText, kernel, netsim, diffs: [], undecided: netsim.unknown };
  return { rulesetText, kernel, netsim, diffs: diffOutcomes(kernel, netsim), undecided: null };
}

/** The injected packet in one line: where it enters and what it is. */
export function describeInjection(c: NfCase): string {
  const inj = c.injection;
  const where = inj.kind === 'ingress' ? `from ${inj.peer}` : `sent by the node (mark 0x${inj.mark.toString(16)})`;
  const p = inj.packet;
  const id = p.proto === 1 ? ` id ${p.icmpId}` : '';
  return `${describePacket({ ...p, sport: p.sport, dport: p.dport })}${id} ${where}`;
}

function outcomeLines(o: Outcome): string[] {
  const counters = Object.entries(o.counters).map(([k, v]) => `${k}=${v}`);
  return [
    `  counters:  ${counters.length === 0 ? '(none)' : counters.join(', ')}`,
    `  egress:    ${o.egress.length === 0 ? '(none)' : o.egress.join('; ')}`,
    `  delivered: ${o.delivered}`,
    `  conntrack: ${o.conntrack.length === 0 ? '(none)' : o.conntrack.join('; ')}`,
  ];
}

/** netsim's trace, one line per hook: the rules visited and how each went. */
export function describeTrace(p: Prediction): string[] {
  return p.steps.map((s) => {
    const entries = s.result.trace.map((e) => {
      switch (e.kind) {
        case 'rule':
          return `${e.table}/${e.chain}#${e.index}:${e.outcome}`;
        case 'skip':
          return `${e.table}/${e.chain}#${e.from}-${e.to}:skipped`;
        case 'policy':
          return `${e.table}/${e.chain}:policy ${e.policy}`;
        case 'return':
          return `${e.table}/${e.chain}:return`;
      }
    });
    const v = s.result.verdict;
    const verdict = v.kind === 'DROP' ? `DROP${v.byPolicy ? ' (policy)' : ''}` : v.kind === 'REJECT' ? `REJECT ${v.with}` : v.kind === 'unknown' ? `unknown (${v.reason})` : 'ACCEPT';
    const nat = s.result.nat === undefined ? '' : ` nat ${s.result.nat.kind}${s.result.nat.kind !== 'MASQUERADE' && s.result.nat.to?.minIp !== undefined ? ` ${formatIpv4(s.result.nat.to.minIp)}` : ''}`;
    return `  ${s.hook} in=${s.packet.inIface ?? '-'} out=${s.packet.outIface ?? '-'} mark=0x${s.packet.mark.toString(16)}: ${entries.join(' ')} => ${verdict}${nat}`;
  });
}

/** A disagreement as a human reads it: what to replay, the ruleset, the packet, both outcomes. */
export function formatDisagreement(c: NfCase, r: CaseResult, replay: string): string {
  return [
    `DISAGREEMENT (${c.profile}) — replay with: ${replay}`,
    ...r.diffs.map((d) => `  - ${d}`),
    `packet: ${describeInjection(c)}`,
    'ruleset (iptables-restore input):',
    ...r.rulesetText
      .trimEnd()
      .split('\n')
      .map((l) => `  ${l}`),
    'kernel:',
    ...outcomeLines(r.kernel),
    'netsim:',
    ...outcomeLines(r.netsim),
    'netsim trace:',
    ...describeTrace(r.netsim),
  ].join('\n');
}
