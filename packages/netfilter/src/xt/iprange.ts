/**
 * @internal
 * `-m iprange` (libxt_iprange), the whole module in one place: `--src-range`/`--dst-range
 * FROM[-TO]` (one address is a range of one), printed `FROM-TO`; evaluated inclusive, `!`
 * inverting each range; reversed ends load with the tool's warning and never match.
 */
import { OptionTable, OptionTracker, type ExtensionInstance } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import { formatIpv4, tryParseIpv4 } from '../ip.ts';
import type { MatchModule } from '../matches.ts';
import { MATCH, NOMATCH, type ModTest } from '../matchers.ts';
import type { Match } from '../types.ts';

type IprangeMatch = Extract<Match, { kind: 'iprange' }>;

const IPRANGE_OPTIONS = new OptionTable([
  { name: 'src-range', args: 1, invert: true },
  { name: 'dst-range', args: 1, invert: true },
]);

export const IPRANGE_MODULE: MatchModule = {
  name: 'iprange',
  kind: 'iprange',
  options: IPRANGE_OPTIONS,
  create(): ExtensionInstance<Match> {
    const t: OptionTracker = new OptionTracker('iprange', IPRANGE_OPTIONS);
    let srcRange: IprangeMatch['srcRange'];
    let dstRange: IprangeMatch['dstRange'];
    return {
      name: 'iprange',
      spec: IPRANGE_OPTIONS,
      option(use, env) {
        t.use(use, IPRANGE_OPTIONS.exact(use.name)!);
        const v = use.values[0] ?? '';
        const dash = v.indexOf('-');
        const fromText = dash < 0 ? v : v.slice(0, dash);
        const toText = dash < 0 ? v : v.slice(dash + 1);
        const from = tryParseIpv4(fromText);
        const to = tryParseIpv4(toText);
        const bad = from === undefined ? fromText : to === undefined ? toText : undefined;
        if (from === undefined || to === undefined) {
          throw paramProblem(`iprange: Bad value for "--${use.name}" option: "${bad ?? ''}"`, use.argIndex + 1);
        }
        // libxt_iprange warns (on stderr, still loading the rule) when the ends are reversed.
        if (from > to) env.warn(`xt_iprange: range ${formatIpv4(from)}-${formatIpv4(to)} is reversed and will never match\n`);
        const r = { from, to, negate: use.invert };
        if (use.name === 'src-range') srcRange = r;
        else dstRange = r;
      },
      finish() {
        if (srcRange === undefined && dstRange === undefined) {
          throw paramProblem("iprange match: You must specify `--src-range' or `--dst-range'");
        }
        return { kind: 'iprange', ...(srcRange && { srcRange }), ...(dstRange && { dstRange }) };
      },
    };
  },
  save: (match, out) => {
    const m = match as IprangeMatch;
    out.push('-m', 'iprange');
    if (m.srcRange) {
      if (m.srcRange.negate) out.push('!');
      out.push('--src-range', `${formatIpv4(m.srcRange.from)}-${formatIpv4(m.srcRange.to)}`);
    }
    if (m.dstRange) {
      if (m.dstRange.negate) out.push('!');
      out.push('--dst-range', `${formatIpv4(m.dstRange.from)}-${formatIpv4(m.dstRange.to)}`);
    }
  },
  list: (match) => {
    const m = match as IprangeMatch;
    const parts: string[] = [];
    if (m.srcRange) parts.push(`source IP range ${m.srcRange.negate ? '! ' : ''}${formatIpv4(m.srcRange.from)}-${formatIpv4(m.srcRange.to)}`);
    if (m.dstRange) parts.push(`destination IP range ${m.dstRange.negate ? '! ' : ''}${formatIpv4(m.dstRange.from)}-${formatIpv4(m.dstRange.to)}`);
    return parts.join(' ');
  },
  compile: (match): ModTest => {
    const m = match as IprangeMatch;
    const s = m.srcRange;
    const d = m.dstRange;
    const sFrom = s?.from ?? 0;
    const sTo = s?.to ?? 0xffffffff;
    const sNeg = s?.negate ?? false;
    const dFrom = d?.from ?? 0;
    const dTo = d?.to ?? 0xffffffff;
    const dNeg = d?.negate ?? false;
    return {
      test: (w) => {
        const p = w.packet;
        if ((p.src >= sFrom && p.src <= sTo) === sNeg) return NOMATCH;
        if ((p.dst >= dFrom && p.dst <= dTo) === dNeg) return NOMATCH;
        return MATCH;
      },
      sideEffect: false,
      undecidable: false,
    };
  },
};
