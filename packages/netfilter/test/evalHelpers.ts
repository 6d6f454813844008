/**
 * Small builders for evaluation tests: rules, rulesets, packets and contexts as data, so tests do
 * not depend on the text parser.
 */
import {
  createEvalState,
  emptyRuleset,
  makePacket,
  parseCidr,
  parseIpv4,
  seededRandom31,
  type AddrType,
  type Chain,
  type ConntrackView,
  type EvalContext,
  type EvalResult,
  type EvalTraceEntry,
  type Ipv4,
  type Match,
  type Packet,
  type Policy,
  type Rule,
  type Ruleset,
  type TableName,
  type Target,
} from '../src/index.ts';

export const ip = (s: string): Ipv4 => parseIpv4(s);

export function pkt(over: Partial<Omit<Packet, 'src' | 'dst'>> & { src?: string; dst?: string } = {}): Packet {
  const { src, dst, ...rest } = over;
  return makePacket({ src: ip(src ?? '203.0.113.7'), dst: ip(dst ?? '198.18.0.1'), inIface: 'eth0', ...rest });
}

export const NEW: ConntrackView = { state: 'NEW', dnat: false, snat: false, ctmark: 0 };

export interface CtxOptions {
  local?: readonly string[];
  /** Addresses local to one interface only, for --limit-iface-in/out. */
  localOn?: { readonly [iface: string]: readonly string[] };
  conntrack?: ConntrackView;
  random?: () => number;
  seed?: number;
  ipsetHas?: EvalContext['ipsetHas'];
}

export function ctx(o: CtxOptions = {}): EvalContext {
  const local = new Set((o.local ?? ['198.18.0.1']).map((a) => ip(a) as number));
  const localOn = new Map(Object.entries(o.localOn ?? {}).map(([k, v]) => [k, new Set(v.map((a) => ip(a) as number))]));
  const random = o.random ?? seededRandom31(o.seed ?? 1);
  const c: EvalContext = {
    addrType(addr: Ipv4, iface: string | null): AddrType {
      const a = addr as number;
      if (iface !== null) {
        const on = localOn.get(iface);
        if (on?.has(a) === true) return 'LOCAL';
        // The kernel's inet_dev_addr_type: a local address routed via another device is UNICAST.
        if (on !== undefined) return 'UNICAST';
      }
      if (local.has(a) || (a >>> 24) === 127) return 'LOCAL';
      if (a === 0xffffffff) return 'BROADCAST';
      if ((a >>> 28) === 0xe) return 'MULTICAST';
      return 'UNICAST';
    },
    conntrack: o.conntrack ?? NEW,
    random31: random,
    state: createEvalState(),
  };
  return o.ipsetHas === undefined ? c : { ...c, ipsetHas: o.ipsetHas };
}

/** A rule from its parts; `-d`/`-s` strings may start with `!`. */
export function rule(parts: {
  s?: string;
  d?: string;
  i?: string;
  o?: string;
  p?: number | string;
  f?: boolean;
  m?: Match[];
  j?: Target | string;
  g?: string;
}): Rule {
  const neg = (x: string): [boolean, string] => (x.startsWith('!') ? [true, x.slice(1).trim()] : [false, x]);
  const r: { -readonly [K in keyof Rule]: Rule[K] } = { matches: parts.m ?? [] };
  if (parts.s !== undefined) {
    const [n, v] = neg(parts.s);
    r.src = { cidr: parseCidr(v), negate: n };
  }
  if (parts.d !== undefined) {
    const [n, v] = neg(parts.d);
    r.dst = { cidr: parseCidr(v), negate: n };
  }
  for (const k of ['i', 'o'] as const) {
    const x = parts[k];
    if (x === undefined) continue;
    const [n, v] = neg(x);
    const m = { name: v.endsWith('+') ? v.slice(0, -1) : v, wildcard: v.endsWith('+'), negate: n };
    if (k === 'i') r.inIface = m;
    else r.outIface = m;
  }
  if (parts.p !== undefined) {
    const [n, v] = typeof parts.p === 'number' ? [false, String(parts.p)] : neg(parts.p);
    const names: { [k: string]: number } = { all: 0, icmp: 1, tcp: 6, udp: 17 };
    r.proto = { proto: names[v] ?? Number(v), negate: n };
  }
  if (parts.f !== undefined) r.fragment = { negate: !parts.f };
  if (parts.g !== undefined) r.target = { kind: 'goto', chain: parts.g };
  else if (typeof parts.j === 'string') r.target = target(parts.j);
  else if (parts.j !== undefined) r.target = parts.j;
  return r;
}

function target(name: string): Target {
  switch (name) {
    case 'ACCEPT':
    case 'DROP':
    case 'RETURN':
    case 'NOTRACK':
    case 'TRACE':
      return { kind: name };
    default:
      return { kind: 'jump', chain: name };
  }
}

export const tcp = (o: { sport?: [number, number?, boolean?]; dport?: [number, number?, boolean?]; flags?: [number, number, boolean?] } = {}): Match => {
  const pm = (x: [number, number?, boolean?] | undefined) =>
    x === undefined ? undefined : { range: { from: x[0], to: x[1] ?? x[0] }, negate: x[2] ?? false };
  const sport = pm(o.sport);
  const dport = pm(o.dport);
  return {
    kind: 'tcp',
    ...(sport === undefined ? {} : { sport }),
    ...(dport === undefined ? {} : { dport }),
    ...(o.flags === undefined ? {} : { flags: { mask: o.flags[0], comp: o.flags[1], negate: o.flags[2] ?? false } }),
  };
};

export const dport = (port: number, proto: 'tcp' | 'udp' = 'tcp'): Match => ({
  kind: proto,
  dport: { range: { from: port, to: port }, negate: false },
});

export const comment = (c: string): Match => ({ kind: 'comment', comment: c });

export const random = (probability: number): Match => ({
  kind: 'statistic',
  mode: 'random',
  probability: { text: probability.toFixed(11), threshold31: Math.floor(probability * 0x80000000 + 0.5) },
  negate: false,
});

export type ChainSpec = readonly Rule[] | { readonly policy?: Policy; readonly rules: readonly Rule[] };

/** A ruleset: the empty one plus the given chains (user chains are created as needed). */
export function ruleset(spec: { readonly [T in TableName]?: { readonly [chain: string]: ChainSpec } }): Ruleset {
  const base = emptyRuleset();
  const tables = { ...base.tables };
  for (const [t, chains] of Object.entries(spec) as [TableName, { readonly [c: string]: ChainSpec }][]) {
    const out: { [name: string]: Chain } = { ...tables[t].chains };
    for (const [name, cs] of Object.entries(chains)) {
      const rules = 'rules' in cs ? cs.rules : cs;
      const existing = out[name];
      const policy = ('policy' in cs ? cs.policy : undefined) ?? existing?.policy;
      out[name] = { name, ...(policy === undefined ? {} : { policy }), rules };
    }
    tables[t] = { name: t, chains: out };
  }
  return { tables };
}

/** The trace as compact strings: `nat:PREROUTING:1:match`, `nat:X:return`, `nat:PREROUTING:policy:ACCEPT`. */
export function traceLines(r: EvalResult | readonly EvalTraceEntry[]): string[] {
  const entries = 'trace' in r ? r.trace : r;
  return entries.map((e) => {
    switch (e.kind) {
      case 'rule':
        return `${e.table}:${e.chain}:${e.index}:${e.outcome}${e.unknown === undefined ? '' : `(${e.unknown})`}${e.assumed === undefined ? '' : `->${e.assumed}`}`;
      case 'skip':
        return `${e.table}:${e.chain}:${e.from}-${e.to}:skip`;
      case 'policy':
        return `${e.table}:${e.chain}:policy:${e.policy}`;
      case 'return':
        return `${e.table}:${e.chain}:return`;
    }
  });
}

/** The trace with `skip` entries expanded into the `nomatch` entries a linear scan records. */
export function expandSkips(trace: readonly EvalTraceEntry[]): EvalTraceEntry[] {
  const out: EvalTraceEntry[] = [];
  for (const e of trace) {
    if (e.kind !== 'skip') {
      out.push(e);
      continue;
    }
    for (let i = e.from; i <= e.to; i++) out.push({ kind: 'rule', table: e.table, chain: e.chain, index: i, outcome: 'nomatch' });
  }
  return out;
}
