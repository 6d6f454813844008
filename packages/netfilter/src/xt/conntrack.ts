/**
 * @internal
 * `-m conntrack` and `-m state` (libxt_conntrack, which serves both names in iptables 1.8.9),
 * whole: the options, their canonical values (states in bit order, `--ctproto` as a number,
 * `--ctstatus` in bit order, addresses with dotted masks as prefix lengths), the printed words and
 * `-L` text, and evaluation of the state bits. Options other than `--ctstate` are read and printed
 * but not evaluated: they leave the packet undecided.
 */
import { OptionTable, OptionTracker, type ExtensionInstance } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import { formatIpv4, tryParseIpv4 } from '../ip.ts';
import type { MatchModule } from '../matches.ts';
import { CT_DNAT, CT_ESTABLISHED, CT_INVALID, CT_NEW, CT_RELATED, CT_SNAT, CT_UNTRACKED, MATCH, NOMATCH, UNDECIDED, type ModTest } from '../matchers.ts';
import { lookupProtocol } from '../names.ts';
import { inetAtonExact, xtablesStrtoui } from '../hostAddress.ts';
import { xtHost } from './define.ts';
import { quoteVerbatim } from '../tokenize.ts';
import type { CtState, Match } from '../types.ts';

type ConntrackMatch = Extract<Match, { kind: 'conntrack' }>;
type StateMatch = Extract<Match, { kind: 'state' }>;

/** The order iptables prints conntrack states in (their bit order). */
export const CT_STATE_ORDER: readonly CtState[] = ['INVALID', 'NEW', 'RELATED', 'ESTABLISHED', 'UNTRACKED', 'SNAT', 'DNAT'];

function parseStates(text: string, allowed: readonly CtState[], what: 'ctstate' | 'state', argIndex: number): CtState[] {
  const set = new Set<CtState>();
  for (const part of text.split(',')) {
    const up = part.toUpperCase() as CtState;
    if (!allowed.includes(up)) throw paramProblem(`Bad ${what} "${part}"`, argIndex);
    set.add(up);
  }
  return CT_STATE_ORDER.filter((s) => set.has(s));
}

/** conntrack options other than --ctstate, in the order `iptables-save` prints them. */
const CONNTRACK_EXTRA_ORDER = [
  'ctproto',
  'ctorigsrc',
  'ctorigdst',
  'ctreplsrc',
  'ctrepldst',
  'ctorigsrcport',
  'ctorigdstport',
  'ctreplsrcport',
  'ctrepldstport',
  'ctstatus',
  'ctexpire',
  'ctdir',
] as const;

/** --ctstatus names in bit order (NONE alone is 0), as the tool prints them. */
const CT_STATUS_BITS: readonly string[] = ['EXPECTED', 'SEEN_REPLY', 'ASSURED', 'CONFIRMED'];

function dottedPrefix(text: string): number | undefined {
  const a = tryParseIpv4(text);
  if (a === undefined) return undefined;
  for (let p = 0; p <= 32; p++) if ((p === 0 ? 0 : (0xffffffff << (32 - p)) >>> 0) === a) return p;
  return undefined;
}

/** The canonical value of a conntrack option other than --ctstate (libxt_conntrack's save). */
function conntrackValue(name: string, v: string, at: number): string {
  switch (name) {
    case 'ctproto': {
      const n = lookupProtocol(v.toLowerCase());
      if (n === undefined) throw paramProblem(`unknown protocol "${v}" specified`, at);
      return String(n);
    }
    case 'ctstatus': {
      const set = new Set<string>();
      for (const part of v.split(',')) {
        const up = part.toUpperCase();
        if (up !== 'NONE' && !CT_STATUS_BITS.includes(up)) throw paramProblem(`Bad ctstatus "${part}"`, at);
        set.add(up);
      }
      const bits = CT_STATUS_BITS.filter((b) => set.has(b));
      return bits.length === 0 ? 'NONE' : bits.join(',');
    }
    case 'ctorigsrc':
    case 'ctorigdst':
    case 'ctreplsrc':
    case 'ctrepldst': {
      // XTTYPE_HOSTMASK: a host (getaddrinfo) and an optional prefix length or dotted mask. The
      // address is printed as given (host bits kept), a dotted mask as its prefix length.
      const slash = v.indexOf('/');
      const addr = xtHost(slash < 0 ? v : v.slice(0, slash), at);
      if (slash < 0) return formatIpv4(addr);
      const m = v.slice(slash + 1);
      const numeric = xtablesStrtoui(m, 32);
      const dotted = numeric === undefined ? inetAtonExact(m) : undefined;
      if (numeric === undefined && dotted === undefined) {
        throw paramProblem(`conntrack: bad value for option "--${name}", neither a valid network mask nor valid CIDR (0-32).\n`, at);
      }
      const prefix = numeric ?? dottedPrefix(m);
      // A mask that is no prefix prints as no mask at all (xtables_ipmask_to_cidr gives -1).
      if (prefix === undefined) return formatIpv4(addr);
      return prefix === 32 ? formatIpv4(addr) : `${formatIpv4(addr)}/${prefix}`;
    }
  }
  return v;
}

const CT_BIT: { readonly [S in CtState]: number } = {
  INVALID: CT_INVALID,
  NEW: CT_NEW,
  ESTABLISHED: CT_ESTABLISHED,
  RELATED: CT_RELATED,
  UNTRACKED: CT_UNTRACKED,
  SNAT: CT_SNAT,
  DNAT: CT_DNAT,
};

function ctMask(states: readonly CtState[]): number {
  let m = 0;
  for (const s of states) m |= CT_BIT[s];
  return m;
}

const CONNTRACK_OPTIONS = new OptionTable([
  { name: 'ctstate', args: 1, invert: true },
  ...CONNTRACK_EXTRA_ORDER.map((name) => ({ name, args: 1 as const, invert: name !== 'ctdir' })),
]);

export const CONNTRACK_MODULE: MatchModule = {
  name: 'conntrack',
  kind: 'conntrack',
  options: CONNTRACK_OPTIONS,
  create(): ExtensionInstance<Match> {
    const t: OptionTracker = new OptionTracker('conntrack', CONNTRACK_OPTIONS);
    let ctstate: ConntrackMatch['ctstate'];
    const extras = new Map<string, { negate: boolean; value: string }>();
    return {
      name: 'conntrack',
      spec: CONNTRACK_OPTIONS,
      option(use) {
        t.use(use, CONNTRACK_OPTIONS.exact(use.name)!);
        const v = use.values[0] ?? '';
        if (use.name === 'ctstate') {
          ctstate = { states: parseStates(v, CT_STATE_ORDER, 'ctstate', use.argIndex + 1), negate: use.invert };
        } else {
          extras.set(use.name, { negate: use.invert, value: conntrackValue(use.name, v, use.argIndex + 1) });
        }
      },
      finish() {
        if (t.count === 0) throw paramProblem('conntrack: At least one option is required');
        const extra: string[] = [];
        for (const name of CONNTRACK_EXTRA_ORDER) {
          const e = extras.get(name);
          if (e === undefined) continue;
          if (e.negate) extra.push('!');
          extra.push(`--${name}`, e.value);
        }
        return { kind: 'conntrack', ...(ctstate && { ctstate }), ...(extra.length > 0 && { extra }) };
      },
    };
  },
  save(match, out) {
    const m = match as ConntrackMatch;
    out.push('-m', 'conntrack');
    if (m.ctstate) {
      if (m.ctstate.negate) out.push('!');
      out.push('--ctstate', m.ctstate.states.join(','));
    }
    if (m.extra) for (const w of m.extra) out.push(quoteVerbatim(w));
  },
  list(match) {
    const m = match as ConntrackMatch;
    const parts: string[] = [];
    if (m.ctstate) parts.push(`${m.ctstate.negate ? '! ' : ''}ctstate ${m.ctstate.states.join(',')}`);
    const extra = m.extra ?? [];
    for (let i = 0; i < extra.length; i++) {
      let neg = '';
      if (extra[i] === '!') {
        neg = '! ';
        i++;
      }
      const name = (extra[i] ?? '').replace(/^--/, '');
      parts.push(`${neg}${name} ${extra[i + 1] ?? ''}`);
      i++;
    }
    return parts.join(' ');
  },
  compile(match): ModTest {
    const m = match as ConntrackMatch;
    const cs = m.ctstate;
    const mask = cs === undefined ? 0 : ctMask(cs.states);
    const negate = cs?.negate ?? false;
    const has = cs !== undefined;
    const extra = m.extra !== undefined && m.extra.length > 0 ? `conntrack ${m.extra.join(' ')}` : undefined;
    return {
      test: (w) => {
        if (has && ((w.ctBits & mask) !== 0) === negate) return NOMATCH;
        if (extra !== undefined) {
          w.why = extra;
          return UNDECIDED;
        }
        return MATCH;
      },
      sideEffect: false,
      undecidable: extra !== undefined,
    };
  },
};

const STATE_ALLOWED: readonly CtState[] = ['INVALID', 'NEW', 'RELATED', 'ESTABLISHED', 'UNTRACKED'];
const STATE_OPTIONS = new OptionTable([{ name: 'state', args: 1, invert: true }]);

export const STATE_MODULE: MatchModule = {
  name: 'state',
  kind: 'state',
  options: STATE_OPTIONS,
  create(): ExtensionInstance<Match> {
    const t: OptionTracker = new OptionTracker('state', STATE_OPTIONS);
    let m: StateMatch | undefined;
    return {
      name: 'state',
      spec: STATE_OPTIONS,
      option(use) {
        t.use(use, STATE_OPTIONS.specs[0]!);
        m = { kind: 'state', states: parseStates(use.values[0] ?? '', STATE_ALLOWED, 'state', use.argIndex + 1), negate: use.invert };
      },
      finish() {
        if (m === undefined) t.missing('state');
        return m;
      },
    };
  },
  save(match, out) {
    const m = match as StateMatch;
    out.push('-m', 'state');
    if (m.negate) out.push('!');
    out.push('--state', m.states.join(','));
  },
  list: (match) => `${(match as StateMatch).negate ? '! ' : ''}state ${(match as StateMatch).states.join(',')}`,
  compile(match): ModTest {
    const m = match as StateMatch;
    // xt_state sees no NAT pseudo-states.
    const mask = ctMask(m.states);
    const negate = m.negate;
    return {
      test: (w) => (((w.ctBits & mask & 31) !== 0) !== negate ? MATCH : NOMATCH),
      sideEffect: false,
      undecidable: false,
    };
  },
};
