/**
 * @internal
 * `-m addrtype` (libxt_addrtype), the whole module: `--src-type`/`--dst-type` lists printed in the
 * kernel's bit order, `--limit-iface-in`/`--limit-iface-out` (which limit the hooks, see draft.ts);
 * evaluated through `ctx.addrType(addr, iface)`, the interface passed only with a limit.
 */
import { OptionTable, OptionTracker, excludes } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import type { MatchModule } from '../matches.ts';
import { MATCH, NOMATCH, type ModTest } from '../matchers.ts';
import type { AddrType, AddrTypeSel, Hook, Match } from '../types.ts';

type AddrtypeMatch = Extract<Match, { kind: 'addrtype' }>;

const ADDR_TYPE_BIT: { readonly [T in AddrType]: number } = {
  UNSPEC: 1 << 0,
  UNICAST: 1 << 1,
  LOCAL: 1 << 2,
  BROADCAST: 1 << 3,
  ANYCAST: 1 << 4,
  MULTICAST: 1 << 5,
  BLACKHOLE: 1 << 6,
  UNREACHABLE: 1 << 7,
  PROHIBIT: 1 << 8,
  THROW: 1 << 9,
  NAT: 1 << 10,
  XRESOLVE: 1 << 11,
};

function typeMask(types: readonly AddrType[]): number {
  let m = 0;
  for (const t of types) m |= ADDR_TYPE_BIT[t];
  return m;
}

/** Address types in bit order, the order iptables prints them in. */
export const ADDR_TYPE_ORDER: readonly AddrType[] = [
  'UNSPEC',
  'UNICAST',
  'LOCAL',
  'BROADCAST',
  'ANYCAST',
  'MULTICAST',
  'BLACKHOLE',
  'UNREACHABLE',
  'PROHIBIT',
  'THROW',
  'NAT',
  'XRESOLVE',
];

const ADDRTYPE_OPTIONS = new OptionTable([
  { name: 'src-type', args: 1, invert: true },
  { name: 'dst-type', args: 1, invert: true },
  { name: 'limit-iface-in', args: 0 },
  { name: 'limit-iface-out', args: 0 },
]);

const LIMIT_IN_HOOKS: readonly Hook[] = ['PREROUTING', 'INPUT', 'FORWARD'];
const LIMIT_OUT_HOOKS: readonly Hook[] = ['POSTROUTING', 'OUTPUT', 'FORWARD'];

export const ADDRTYPE_MODULE: MatchModule = {
  name: 'addrtype',
  kind: 'addrtype',
  options: ADDRTYPE_OPTIONS,
  create() {
    const t: OptionTracker = new OptionTracker('addrtype', ADDRTYPE_OPTIONS);
    let src: AddrTypeSel | undefined;
    let dst: AddrTypeSel | undefined;
    return {
      name: 'addrtype',
      spec: ADDRTYPE_OPTIONS,
      option(use) {
        t.use(use, ADDRTYPE_OPTIONS.exact(use.name)!);
        if (use.name === 'limit-iface-in' || use.name === 'limit-iface-out') {
          const other = use.name === 'limit-iface-in' ? 'limit-iface-out' : 'limit-iface-in';
          if (t.has(other)) excludes('addrtype', ADDRTYPE_OPTIONS, use.name, other, use.argIndex);
          return;
        }
        const set = new Set<AddrType>();
        for (const part of (use.values[0] ?? '').split(',')) {
          const up = part.toUpperCase() as AddrType;
          if (!ADDR_TYPE_ORDER.includes(up)) throw paramProblem(`addrtype: bad type "${part}"`, use.argIndex + 1);
          set.add(up);
        }
        const sel: AddrTypeSel = { types: ADDR_TYPE_ORDER.filter((x) => set.has(x)), negate: use.invert };
        if (use.name === 'src-type') src = sel;
        else dst = sel;
      },
      finish() {
        if (src === undefined && dst === undefined) throw paramProblem('addrtype: you must specify --src-type or --dst-type');
        return {
          kind: 'addrtype',
          ...(src && { src }),
          ...(dst && { dst }),
          limitIfaceIn: t.has('limit-iface-in'),
          limitIfaceOut: t.has('limit-iface-out'),
        };
      },
    };
  },
  // The kernel takes --limit-iface-in where there is an input device, -out an output device.
  hooks: (match) => {
    const m = match as AddrtypeMatch;
    return m.limitIfaceIn ? LIMIT_IN_HOOKS : m.limitIfaceOut ? LIMIT_OUT_HOOKS : undefined;
  },
  save: (match, out) => {
    const m = match as AddrtypeMatch;
    out.push('-m', 'addrtype');
    if (m.src) {
      if (m.src.negate) out.push('!');
      out.push('--src-type', m.src.types.join(','));
    }
    if (m.dst) {
      if (m.dst.negate) out.push('!');
      out.push('--dst-type', m.dst.types.join(','));
    }
    if (m.limitIfaceIn) out.push('--limit-iface-in');
    if (m.limitIfaceOut) out.push('--limit-iface-out');
  },
  list: (match) => {
    const m = match as AddrtypeMatch;
    let s = 'ADDRTYPE match';
    if (m.src) s += ` src-type ${m.src.negate ? '!' : ''}${m.src.types.join(',')}`;
    if (m.dst) s += ` dst-type ${m.dst.negate ? '!' : ''}${m.dst.types.join(',')}`;
    if (m.limitIfaceIn) s += ' limit-in';
    if (m.limitIfaceOut) s += ' limit-out';
    return s;
  },
  compile: (match): ModTest => {
    const m = match as AddrtypeMatch;
    const srcMask = m.src === undefined ? 0 : typeMask(m.src.types);
    const srcNeg = m.src?.negate ?? false;
    const hasSrc = m.src !== undefined;
    const dstMask = m.dst === undefined ? 0 : typeMask(m.dst.types);
    const dstNeg = m.dst?.negate ?? false;
    const hasDst = m.dst !== undefined;
    const limitIn = m.limitIfaceIn;
    const limitOut = m.limitIfaceOut;
    return {
      test: (w) => {
        const p = w.packet;
        const dev = limitIn ? p.inIface : limitOut ? p.outIface : null;
        if (hasSrc && ((ADDR_TYPE_BIT[w.ctx.addrType(p.src, dev)] & srcMask) !== 0) === srcNeg) return NOMATCH;
        if (hasDst && ((ADDR_TYPE_BIT[w.ctx.addrType(p.dst, dev)] & dstMask) !== 0) === dstNeg) return NOMATCH;
        return MATCH;
      },
      sideEffect: false,
      undecidable: false,
    };
  },
};
