/**
 * @internal
 * `-m icmp` (libipt_icmp), the whole module: `--icmp-type` by name (any unambiguous prefix), number
 * or `type/code`, type 255 being "any"; printed as numbers (`8`, `3/3`, `any`), listed by name
 * without `-n`; the kernel takes it only on `-p icmp` rules. It never matches a non-first fragment.
 */
import { OptionTable, OptionTracker } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import type { MatchModule } from '../matches.ts';
import { MATCH, NOMATCH, type ModTest } from '../matchers.ts';
import { ICMP_NAMES } from '../names.ts';
import type { Match, PortRange } from '../types.ts';

type IcmpMatch = Extract<Match, { kind: 'icmp' }>;

const ICMP_OPTIONS = new OptionTable([{ name: 'icmp-type', args: 1, invert: true }]);

function parseIcmpType(text: string, argIndex: number): { type: number; code?: PortRange; any?: boolean } {
  const lower = text.toLowerCase();
  let found: (typeof ICMP_NAMES)[number] | undefined;
  for (const e of ICMP_NAMES) {
    if (e.name.toLowerCase().startsWith(lower) && lower.length > 0) {
      if (found !== undefined) {
        throw paramProblem(`Ambiguous ICMP type \`${text}': \`${found.name}' or \`${e.name}'?`, argIndex);
      }
      found = e;
    }
  }
  if (found !== undefined) {
    if (found.type === 0xff) return { type: 0xff, any: true };
    if (found.codeMin === 0 && found.codeMax === 0xff) return { type: found.type };
    return { type: found.type, code: { from: found.codeMin, to: found.codeMax } };
  }
  const slash = text.indexOf('/');
  const typeText = slash < 0 ? text : text.slice(0, slash);
  const type = /^[0-9]+$/.test(typeText) ? Number(typeText) : undefined;
  if (type === undefined || type > 255) throw paramProblem(`Unknown ICMP type \`${text}'`, argIndex);
  // Type 255 is how the tool stores "any": the kernel then ignores the code, and iptables-save
  // prints `any` (checked: `--icmp-type 255` and `255/0` both come back as `any`).
  if (type === 255 && slash < 0) return { type: 0xff, any: true };
  if (slash < 0) return { type };
  const codeText = text.slice(slash + 1);
  const code = /^[0-9]+$/.test(codeText) ? Number(codeText) : undefined;
  if (code === undefined || code > 255) throw paramProblem(`Unknown ICMP code \`${text}'`, argIndex);
  if (type === 255) return { type: 0xff, any: true };
  return { type, code: { from: code, to: code } };
}

export const ICMP_MODULE: MatchModule = {
  name: 'icmp',
  kind: 'icmp',
  options: ICMP_OPTIONS,
  create() {
    const t: OptionTracker = new OptionTracker('icmp', ICMP_OPTIONS);
    let icmp: IcmpMatch['icmp'] | undefined;
    return {
      name: 'icmp',
      spec: ICMP_OPTIONS,
      option(use) {
        t.use(use, ICMP_OPTIONS.specs[0]!);
        icmp = { ...parseIcmpType(use.values[0] ?? '', use.argIndex + 1), negate: use.invert };
      },
      finish(env) {
        if (icmp === undefined) t.missing('icmp-type');
        // The nf_tables kernel refuses an icmp match on a rule not limited to `-p icmp`.
        if (env.proto !== 1 || env.protoInvert) env.rejectRule('Invalid argument');
        return { kind: 'icmp', icmp };
      },
    };
  },
  save: (match, out) => {
    const m = match as IcmpMatch;
    out.push('-m', 'icmp');
    if (m.icmp.negate) out.push('!');
    const { type, code } = m.icmp;
    out.push('--icmp-type', m.icmp.any === true ? 'any' : code === undefined ? String(type) : `${type}/${code.from}`);
  },
  list: (match, numeric) => {
    const { type, code, negate } = (match as IcmpMatch).icmp;
    const min = code?.from ?? 0;
    const max = code?.to ?? 0xff;
    if (!numeric) {
      const named = ICMP_NAMES.find((e) => e.type === type && e.codeMin === min && e.codeMax === max);
      if (named !== undefined) return `icmp ${negate ? '!' : ''}${named.name}`;
    }
    let s = `icmp${negate ? ' !' : ''}type ${type}`;
    if (min === max) s += ` code ${min}`;
    else if (min !== 0 || max !== 0xff) s += ` codes ${min}-${max}`;
    return s;
  },
  compile: (match): ModTest => {
    const m = match as IcmpMatch;
    const { type, negate } = m.icmp;
    const any = m.icmp.any === true || type === 255;
    const cFrom = m.icmp.code?.from ?? 0;
    const cTo = m.icmp.code?.to ?? 255;
    return {
      test: (w) => {
        const p = w.packet;
        if (p.proto !== 1 || p.fragment) return NOMATCH;
        const hit = any || (p.icmpType === type && p.icmpCode >= cFrom && p.icmpCode <= cTo);
        return hit !== negate ? MATCH : NOMATCH;
      },
      sideEffect: false,
      undecidable: false,
    };
  },
};
