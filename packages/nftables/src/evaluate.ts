/**
 * Packet evaluation through nftables base chains, pure: the caller passes the packet, the
 * conntrack view, the FIB answer and a seeded random source; the result is the verdict, what the
 * chains asked for (NAT, mark, ctmark, notrack) and, on request, a trace in the style of
 * `nft monitor trace`.
 *
 * The shape is for the host datapath: {@link hookSchedule} lists, for one hook, the nft base
 * chains and the iptables tables in the kernel's priority order (raw -300, mangle -150, dstnat
 * -100, filter 0, security 50, srcnat 100), and {@link evaluateBaseChain} runs one nft base chain,
 * so a datapath can interleave the two as the kernel does when both are loaded.
 */
import { formatRule } from './listing.ts';
import type { Chain, ChainType, DataType, Element, Expr, Family, Hook, KeyPart, MapLookup, NatFlag, NatKind, NftSet, Rhs, Rule, Ruleset, Source, Stmt, Table, Value, Verdict } from './types.ts';

/** The packet as the chains see it at this hook. */
export interface NftPacket {
  readonly saddr: number;
  readonly daddr: number;
  /** IP protocol number (6 tcp, 17 udp, 1 icmp, 132 sctp). */
  readonly protocol: number;
  readonly sport?: number;
  readonly dport?: number;
  /** TCP flag bits (fin 1, syn 2, rst 4, psh 8, ack 16, urg 32, ecn 64, cwr 128). */
  readonly tcpFlags?: number;
  readonly icmpType?: number;
  readonly iifname?: string;
  readonly oifname?: string;
  /** Interface indexes (`iif`/`oif`); lo is 1. */
  readonly iif?: number;
  readonly oif?: number;
  readonly mark: number;
  readonly ttl?: number;
  readonly length?: number;
  /** `meta pkttype`: host 0, broadcast 1, multicast 2, other 3. */
  readonly pkttype?: number;
}

export type CtStateName = 'invalid' | 'established' | 'related' | 'new' | 'untracked';

/** The connection as conntrack sees it before this hook (the caller's; nft only reads it). */
export interface NftConntrackView {
  readonly state: CtStateName;
  /** ct status bits (expected 1, seen-reply 2, assured 4, confirmed 8, snat 16, dnat 32). */
  readonly status: number;
  readonly mark: number;
}

export interface NftEvalContext {
  readonly hook: Hook;
  readonly conntrack: NftConntrackView;
  /** The FIB's address type of an address (`fib daddr type`): local 2, unicast 1, broadcast 3, multicast 5. */
  readonly fibAddrType: (addr: number) => number;
  /** A seeded source of uniform 32-bit unsigned integers (`numgen random`). */
  readonly random32: () => number;
  /** Collect a trace (costs time: off for benchmarks and bulk runs). */
  readonly trace?: boolean;
}

/**
 * State that outlives one packet: `numgen inc` counters, dynamic set members (`update @s`) and
 * what `counter` statements counted (by statement; {@link withCounters} puts it into a listing).
 */
export interface NftEvalState {
  readonly counters: Map<Rule, number>;
  readonly dynamic: Map<NftSet, Set<string | number>>;
  readonly counts: Map<Stmt, NftCount>;
}

/** Packets and bytes one `counter` statement counted since its rule was added. */
export interface NftCount {
  packets: number;
  bytes: number;
}

export function createNftEvalState(): NftEvalState {
  return { counters: new Map(), dynamic: new Map(), counts: new Map() };
}

/** What a NAT statement asked for; choosing the address and port is the datapath's job. */
export interface NftNatRequest {
  readonly kind: NatKind;
  readonly addr?: { readonly lo: number; readonly hi: number };
  readonly port?: { readonly lo: number; readonly hi: number };
  readonly flags: readonly NatFlag[];
}

export type NftVerdictKind = 'accept' | 'drop' | 'reject' | 'unsupported';

export interface NftTraceEntry {
  readonly family: Family;
  readonly table: string;
  readonly chain: string;
  /** `rule` (a rule that decided something), `return` (end of a chain), `policy` (end of a base chain). */
  readonly kind: 'rule' | 'return' | 'policy';
  readonly handle?: number;
  /** The rule as `nft list` prints it. */
  readonly rule?: string;
  readonly verdict: string;
}

export interface NftChainResult {
  readonly verdict: NftVerdictKind;
  readonly reject?: Extract<Stmt, { kind: 'reject' }>['with'];
  /** The mark after `meta mark set` statements. */
  readonly mark: number;
  /** Set when `ct mark set` ran. */
  readonly ctMark?: number;
  readonly nat?: NftNatRequest;
  readonly notrack: boolean;
  readonly logs: readonly string[];
  readonly trace: readonly NftTraceEntry[];
  /** Why the verdict is `unsupported` (e.g. `queue`). */
  readonly unsupported?: string;
}

/** One base chain as the hook scheduler sees it. */
export interface NftBaseChainRef {
  readonly family: Family;
  readonly table: Table;
  readonly chain: Chain;
  readonly type: ChainType;
  readonly priority: number;
}

export type IptablesTableName = 'raw' | 'mangle' | 'nat' | 'filter' | 'security';

/** One step of a hook: an nft base chain or an iptables table, at its priority. */
export type HookStep =
  | { readonly kind: 'nft'; readonly priority: number; readonly chain: NftBaseChainRef }
  | { readonly kind: 'iptables'; readonly priority: number; readonly table: IptablesTableName };

/** The priorities iptables registers its tables at (nat: dstnat at prerouting/output, srcnat at input/postrouting). */
export function iptablesPriority(table: IptablesTableName, hook: Hook): number {
  switch (table) {
    case 'raw':
      return -300;
    case 'mangle':
      return -150;
    case 'nat':
      return hook === 'prerouting' || hook === 'output' ? -100 : 100;
    case 'filter':
      return 0;
    case 'security':
      return 50;
  }
}

/**
 * The nft base chains registered at a hook, in the order the kernel runs them: by priority, and at
 * equal priority the one registered last first (`nf_hook_entries_grow` inserts a new hook before
 * the existing ones of the same priority; checked on Linux 6.18). Registration order is taken as
 * table, then chain creation order.
 */
export function baseChainsAt(rs: Ruleset, hook: Hook): NftBaseChainRef[] {
  let byHook = baseChainCache.get(rs);
  if (byHook === undefined) {
    byHook = new Map();
    baseChainCache.set(rs, byHook);
  }
  let hit = byHook.get(hook);
  if (hit === undefined) {
    hit = collectBaseChains(rs, hook);
    byHook.set(hook, hit);
  }
  return [...hit];
}

const baseChainCache = new WeakMap<Ruleset, Map<Hook, readonly NftBaseChainRef[]>>(); // tidy-allow: derived from an immutable ruleset; cannot change results

function collectBaseChains(rs: Ruleset, hook: Hook): NftBaseChainRef[] {
  const out: NftBaseChainRef[] = [];
  for (const table of rs.tables) {
    if (table.dormant) continue;
    for (const chain of table.chains) {
      if (chain.base?.hook === hook) out.push({ family: table.family, table, chain, type: chain.base.type, priority: chain.base.priority });
    }
  }
  return out
    .map((ref, i) => ({ ref, i }))
    .sort((a, b) => a.ref.priority - b.ref.priority || b.i - a.i)
    .map((x) => x.ref);
}

/**
 * The steps of one hook: nft base chains and the given iptables tables merged by priority. At equal
 * priority an nft chain runs before the iptables table: it registered later (the iptables tables
 * of a node exist before the nft rulesets agents load), and the kernel runs the later one first.
 */
export function hookSchedule(rs: Ruleset, hook: Hook, iptables: readonly IptablesTableName[] = []): HookStep[] {
  const steps: HookStep[] = [];
  for (const chain of baseChainsAt(rs, hook)) steps.push({ kind: 'nft', priority: chain.priority, chain });
  for (const table of iptables) steps.push({ kind: 'iptables', priority: iptablesPriority(table, hook), table });
  return steps.map((s, i) => ({ s, i })).sort((a, b) => a.s.priority - b.s.priority || a.i - b.i).map((x) => x.s);
}

// ---- lookups

const CT_BITS: Readonly<Record<CtStateName, number>> = { invalid: 1, established: 2, related: 4, new: 8, untracked: 64 };

type Scalar = number | string | undefined;

function hasPorts(proto: number): boolean {
  return proto === 6 || proto === 17 || proto === 132 || proto === 33 || proto === 136;
}

function readExpr(e: Expr, p: NftPacket, ctx: NftEvalContext, st: NftEvalState, rule: Rule): Scalar {
  switch (e.kind) {
    case 'payload':
      switch (e.proto) {
        case 'ip':
          return e.field === 'saddr' ? p.saddr : e.field === 'daddr' ? p.daddr : e.field === 'protocol' ? p.protocol : e.field === 'ttl' ? (p.ttl ?? 64) : e.field === 'length' ? (p.length ?? 0) : 0;
        case 'tcp':
          if (p.protocol !== 6) return undefined;
          return e.field === 'sport' ? p.sport : e.field === 'dport' ? p.dport : (p.tcpFlags ?? 0);
        case 'udp':
          if (p.protocol !== 17) return undefined;
          return e.field === 'sport' ? p.sport : p.dport;
        case 'th':
          if (!hasPorts(p.protocol)) return undefined;
          return e.field === 'sport' ? p.sport : p.dport;
        case 'icmp':
          if (p.protocol !== 1) return undefined;
          return e.field === 'type' ? p.icmpType : 0;
      }
      return undefined;
    case 'meta':
      switch (e.key) {
        case 'l4proto':
          return p.protocol;
        case 'mark':
          return p.mark;
        case 'iifname':
          return p.iifname ?? '';
        case 'oifname':
          return p.oifname ?? '';
        case 'iif':
          return p.iif ?? 0;
        case 'oif':
          return p.oif ?? 0;
        case 'nfproto':
          return 2;
        case 'pkttype':
          return p.pkttype ?? 0;
        case 'length':
          return p.length ?? 0;
        default:
          return undefined;
      }
    case 'ct':
      if (e.dir !== undefined) return undefined;
      if (e.key === 'state') return CT_BITS[ctx.conntrack.state];
      // Without a connection (before conntrack, untracked, invalid) every other ct key fails the rule (NFT_BREAK).
      if (ctx.conntrack.state === 'invalid' || ctx.conntrack.state === 'untracked') return undefined;
      return e.key === 'status' ? ctx.conntrack.status : e.key === 'mark' ? ctx.conntrack.mark : undefined;
    case 'fib':
      if (e.result !== 'type') return undefined;
      return ctx.fibAddrType(e.flags.includes('saddr') ? p.saddr : p.daddr);
    case 'exthdr':
      return undefined;
    case 'numgen': {
      if (e.mode === 'random') {
        // The kernel's reciprocal_scale(prandom_u32(), mod): the high bits of r * mod.
        return Math.floor((ctx.random32() * e.mod) / 4294967296) + e.offset;
      }
      const n = st.counters.get(rule) ?? 0;
      st.counters.set(rule, n + 1);
      return (n % e.mod) + e.offset;
    }
    case 'concat':
      return undefined;
    case 'binop': {
      const l = readExpr(e.left, p, ctx, st, rule);
      if (typeof l !== 'number') return undefined;
      const r = (e.right as { n: number }).n;
      return (e.op === '&' ? l & r : e.op === '|' ? l | r : l ^ r) >>> 0;
    }
  }
}

/** A concatenation's parts, or undefined when one part does not apply to this packet. */
function readKey(e: Expr, p: NftPacket, ctx: NftEvalContext, st: NftEvalState, rule: Rule): Scalar[] | undefined {
  const parts = e.kind === 'concat' ? e.parts : [e];
  const out: Scalar[] = [];
  for (const part of parts) {
    const v = readExpr(part, p, ctx, st, rule);
    if (v === undefined) return undefined;
    out.push(v);
  }
  return out;
}

function valueScalar(v: Value): Scalar {
  return v.type === 'ifname' ? v.s : v.type === 'verdict' ? undefined : v.n;
}

/** A lookup key: the value itself for one part, the parts joined for a concatenation. */
function keyString(parts: readonly Scalar[]): string | number {
  if (parts.length === 1) {
    const v = parts[0];
    return typeof v === 'string' ? `"${v}` : (v ?? -1);
  }
  let s = '';
  for (const v of parts) s += typeof v === 'string' ? `"${v}\u0001` : `${v}\u0001`;
  return s;
}

function ifnameMatches(pattern: string, name: string): boolean {
  return pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : pattern === name;
}

/** Exact keys as nested maps, one level per concatenated part (no string building per packet). */
type ExactIndex = Map<string | number | undefined, ExactIndex | Element>;

interface SetIndex {
  /** Exact keys (no intervals, no wildcards). */
  readonly exact: ExactIndex;
  readonly parts: number;
  /** Elements that need a scan: intervals and interface-name wildcards. */
  readonly scan: readonly Element[];
}

const indexes = new WeakMap<readonly Element[], SetIndex>(); // tidy-allow: a lookup index derived from immutable elements; cannot change results

function indexOf(elements: readonly Element[]): SetIndex {
  let ix = indexes.get(elements);
  if (ix === undefined) {
    const exact: ExactIndex = new Map();
    const scan: Element[] = [];
    let parts = 0;
    for (const el of elements) {
      const needsScan = el.key.some((k) => k.kind === 'range' || (k.value.type === 'ifname' && k.value.s.endsWith('*')));
      if (needsScan) {
        scan.push(el);
        continue;
      }
      const key = el.key.map((k) => valueScalar((k as Extract<KeyPart, { kind: 'value' }>).value));
      parts = key.length;
      let m = exact;
      for (let i = 0; i < key.length - 1; i++) {
        let next = m.get(key[i]) as ExactIndex | undefined;
        if (next === undefined) {
          next = new Map();
          m.set(key[i], next);
        }
        m = next;
      }
      m.set(key[key.length - 1], el);
    }
    ix = { exact, parts, scan };
    indexes.set(elements, ix);
  }
  return ix;
}

function partMatches(k: KeyPart, v: Scalar): boolean {
  if (k.kind === 'range') return typeof v === 'number' && v >= k.lo && v <= k.hi;
  const want = valueScalar(k.value);
  if (k.value.type === 'ifname' && typeof v === 'string') return ifnameMatches(k.value.s, v);
  return want === v;
}

function lookup(elements: readonly Element[], key: readonly Scalar[]): Element | undefined {
  const ix = indexOf(elements);
  if (ix.parts === key.length) {
    let m: ExactIndex | Element | undefined = ix.exact;
    for (let i = 0; i < key.length && m !== undefined; i++) m = (m as ExactIndex).get(key[i]);
    if (m !== undefined) return m as Element;
  }
  if (ix.scan.length === 0) return undefined;
  return ix.scan.find((el) => el.key.every((k, i) => partMatches(k, key[i])));
}

const setIndexes = new WeakMap<Table, Map<string, NftSet>>(); // tidy-allow: a name index derived from an immutable table; cannot change results

function findSet(table: Table, name: string): NftSet | undefined {
  let ix = setIndexes.get(table);
  if (ix === undefined) {
    ix = new Map(table.sets.map((set) => [set.name, set]));
    setIndexes.set(table, ix);
  }
  return ix.get(name);
}

function inNamedSet(table: Table, name: string, key: readonly Scalar[], st: NftEvalState): Element | undefined | true {
  const set = findSet(table, name);
  if (set === undefined) return undefined;
  const hit = lookup(set.elements, key);
  if (hit !== undefined) return hit;
  return st.dynamic.get(set)?.has(keyString(key)) === true ? true : undefined;
}

function matchRhs(s: Extract<Stmt, { kind: 'match' }>, p: NftPacket, ctx: NftEvalContext, st: NftEvalState, table: Table, rule: Rule): boolean {
  const key = readKey(s.left, p, ctx, st, rule);
  if (key === undefined) return false;
  const r: Rhs = s.right;
  const neg = s.op === '!=';
  const x = key[0];
  switch (r.kind) {
    case 'value': {
      const want = valueScalar(r.value);
      if (typeof x === 'number' && typeof want === 'number') {
        // A bare flag is a bit test; `!=` and `==` compare the whole value (`tcp flags != syn` matches SYN,ACK).
        if (isFlagType(r.value.type) && s.op === 'implicit') return (x & want) !== 0;
        switch (s.op) {
          case '<':
            return x < want;
          case '>':
            return x > want;
          case '<=':
            return x <= want;
          case '>=':
            return x >= want;
          case '!=':
            return x !== want;
          case 'implicit':
          case '==':
            return x === want;
        }
      }
      if (typeof x === 'string' && r.value.type === 'ifname') return ifnameMatches(r.value.s, x) !== neg;
      return (x === want) !== neg;
    }
    case 'values':
      return r.values.some((v) => valueScalar(v) === x) !== neg;
    case 'range':
      return (typeof x === 'number' && x >= r.lo && x <= r.hi) !== neg;
    case 'prefix': {
      const mask = r.len === 0 ? 0 : (0xffffffff << (32 - r.len)) >>> 0;
      return (typeof x === 'number' && ((x & mask) >>> 0) === r.addr) !== neg;
    }
    case 'mask':
      return (typeof x === 'number' && (x & (r.mask as { n: number }).n) === (r.value as { n: number }).n) !== neg;
    case 'set':
      return (lookup(r.elements, key) !== undefined) !== neg;
    case 'setref':
      return (inNamedSet(table, r.name, key, st) !== undefined) !== neg;
  }
}

function isFlagType(t: DataType): boolean {
  return t === 'ct_state' || t === 'ct_status' || t === 'tcp_flag';
}

function mapData(l: MapLookup, p: NftPacket, ctx: NftEvalContext, st: NftEvalState, table: Table, rule: Rule): readonly Value[] | undefined {
  const key = readKey(l.key, p, ctx, st, rule);
  if (key === undefined) return undefined;
  const els = l.map.kind === 'anon' ? l.map.elements : (findSet(table, l.map.name)?.elements ?? []);
  return lookup(els, key)?.data;
}

function sourceValue(s: Source, p: NftPacket, ctx: NftEvalContext, st: NftEvalState, table: Table, rule: Rule): number | undefined {
  switch (s.kind) {
    case 'value':
      return valueScalar(s.value) as number;
    case 'expr': {
      const v = readExpr(s.expr, p, ctx, st, rule);
      return typeof v === 'number' ? v : undefined;
    }
    case 'map': {
      const d = mapData(s.lookup, p, ctx, st, table, rule);
      return d === undefined ? undefined : (valueScalar(d[0] as Value) as number);
    }
  }
}

// ---- the walk

interface Frame {
  readonly chain: Chain;
  index: number;
}

interface Mutable {
  mark: number;
  ctMark?: number;
  nat?: NftNatRequest;
  notrack: boolean;
  logs: string[];
  trace: NftTraceEntry[];
}

const MAX_DEPTH = 16;

/**
 * Runs one base chain on a packet. `accept` ends this chain only (later base chains at the hook
 * still run); `drop` and `reject` end the hook. A NAT statement accepts, as in the kernel.
 */
function traceRuleOf(ctx: NftEvalContext, m: Mutable, ref: NftBaseChainRef, chain: Chain, rule: Rule, verdict: string): void {
  if (ctx.trace === true) m.trace.push({ family: ref.family, table: ref.table.name, chain: chain.name, kind: 'rule', handle: rule.handle, rule: formatRule(rule, ref.family), verdict });
}

function finishOf(m: Mutable, verdict: NftVerdictKind, extra?: Partial<NftChainResult>): NftChainResult {
  const r: { -readonly [K in keyof NftChainResult]: NftChainResult[K] } = { verdict, mark: m.mark, notrack: m.notrack, logs: m.logs, trace: m.trace };
  if (m.ctMark !== undefined) r.ctMark = m.ctMark;
  if (m.nat !== undefined) r.nat = m.nat;
  return extra === undefined ? r : { ...r, ...extra };
}

const NO_LOGS: readonly string[] = [];
const NO_TRACE: readonly NftTraceEntry[] = [];

export function evaluateBaseChain(ref: NftBaseChainRef, packet: NftPacket, context: NftEvalContext, state: NftEvalState = createNftEvalState()): NftChainResult {
  let ctx = context;
  const table = ref.table;
  const chains = chainIndex(table);
  const m: Mutable = { mark: packet.mark, notrack: false, logs: NO_LOGS as string[], trace: NO_TRACE as NftTraceEntry[] };
  if (ctx.trace === true) m.trace = [];
  let p = packet;
  const stack: Frame[] = [{ chain: ref.chain, index: 0 }];
  for (;;) {
    const frame = stack[stack.length - 1];
    if (frame === undefined) break;
    const rule = frame.chain.rules[frame.index++];
    if (rule === undefined) {
      stack.pop();
      if (stack.length === 0) {
        const policy = ref.chain.base?.policy ?? 'accept';
        if (ctx.trace === true) m.trace.push({ family: ref.family, table: table.name, chain: frame.chain.name, kind: 'policy', verdict: policy });
        return finishOf(m, policy);
      }
      if (ctx.trace === true) m.trace.push({ family: ref.family, table: table.name, chain: frame.chain.name, kind: 'return', verdict: 'continue' });
      continue;
    }
    let verdict: Verdict | undefined;
    let matched = true;
    for (const s of rule.stmts) {
      if (s.kind === 'match') {
        if (!matchRhs(s, p, ctx, state, table, rule)) {
          matched = false;
          break;
        }
        continue;
      }
      if (s.kind === 'verdict') {
        verdict = s.verdict;
        break;
      }
      if (s.kind === 'vmap') {
        const d = mapData(s.lookup, p, ctx, state, table, rule);
        const v = d?.[0];
        if (v === undefined || v.type !== 'verdict') {
          matched = false;
          break;
        }
        verdict = v.v;
        break;
      }
      if (s.kind === 'reject') {
        traceRuleOf(ctx, m, ref, frame.chain, rule, 'drop');
        return finishOf(m, 'reject', s.with !== undefined ? { reject: s.with } : {});
      }
      if (s.kind === 'nat') {
        m.nat = natRequest(s, p, ctx, state, table, rule);
        traceRuleOf(ctx, m, ref, frame.chain, rule, 'accept');
        return finishOf(m, 'accept');
      }
      applyStatement(s, p, ctx, state, table, rule, m);
      if (s.kind === 'meta-set') p = { ...p, mark: m.mark };
      // Later matches in the walk read the connection mark just set, as the kernel's ct->mark.
      else if (s.kind === 'ct-set' && m.ctMark !== undefined && ctx.conntrack.mark !== m.ctMark) ctx = { ...ctx, conntrack: { ...ctx.conntrack, mark: m.ctMark } };
    }
    if (!matched) continue;
    if (verdict === undefined) {
      // The kernel traces every rule that ran to its end, a rule without a verdict as `continue`.
      if (ctx.trace === true) traceRuleOf(ctx, m, ref, frame.chain, rule, 'continue');
      continue;
    }
    if (ctx.trace === true) traceRuleOf(ctx, m, ref, frame.chain, rule, verdictText(verdict));
    switch (verdict.kind) {
      case 'accept':
        return finishOf(m, 'accept');
      case 'drop':
        return finishOf(m, 'drop');
      case 'queue':
        return finishOf(m, 'unsupported', { unsupported: 'queue: userspace queues are not modelled' });
      case 'continue':
        continue;
      case 'return':
        stack.pop();
        if (stack.length === 0) {
          const policy = ref.chain.base?.policy ?? 'accept';
          if (ctx.trace === true) m.trace.push({ family: ref.family, table: table.name, chain: ref.chain.name, kind: 'policy', verdict: policy });
          return finishOf(m, policy);
        }
        continue;
      case 'jump':
      case 'goto': {
        const target = jumpTarget(chains, verdict);
        if (target === undefined || stack.length >= MAX_DEPTH) return finishOf(m, 'unsupported', { unsupported: `jump to ${verdict.chain} cannot be followed` });
        if (verdict.kind === 'goto') stack.pop();
        stack.push({ chain: target, index: 0 });
        continue;
      }
    }
  }
  return finishOf(m, 'accept');
}

/** A table's chains by name, and jump targets resolved once per verdict object (no string hashing per packet). */
interface ChainIndex {
  readonly byName: Map<string, Chain>;
  readonly byVerdict: WeakMap<Verdict, Chain | null>;
}

const chainIndexes = new WeakMap<Table, ChainIndex>(); // tidy-allow: a name index derived from an immutable table; cannot change results
function chainIndex(t: Table): ChainIndex {
  let ix = chainIndexes.get(t);
  if (ix === undefined) {
    ix = { byName: new Map(t.chains.map((c) => [c.name, c])), byVerdict: new WeakMap() };
    chainIndexes.set(t, ix);
  }
  return ix;
}

function jumpTarget(ix: ChainIndex, v: Extract<Verdict, { kind: 'jump' | 'goto' }>): Chain | undefined {
  let c = ix.byVerdict.get(v);
  if (c === undefined) {
    c = ix.byName.get(v.chain) ?? null;
    ix.byVerdict.set(v, c);
  }
  return c ?? undefined;
}

function verdictText(v: Verdict): string {
  return v.kind === 'jump' || v.kind === 'goto' ? `${v.kind} ${v.chain}` : v.kind;
}

function natRequest(s: Extract<Stmt, { kind: 'nat' }>, p: NftPacket, ctx: NftEvalContext, st: NftEvalState, table: Table, rule: Rule): NftNatRequest {
  let addr: { lo: number; hi: number } | undefined;
  if (s.addr !== undefined) {
    if (s.addr.kind === 'range') addr = { lo: s.addr.lo, hi: s.addr.hi };
    else {
      const a = sourceValue(s.addr, p, ctx, st, table, rule);
      if (a !== undefined) addr = { lo: a, hi: a };
    }
  }
  return { kind: s.nat, ...(addr !== undefined && { addr }), ...(s.port !== undefined && { port: s.port }), flags: s.flags };
}

function applyStatement(s: Stmt, p: NftPacket, ctx: NftEvalContext, st: NftEvalState, table: Table, rule: Rule, m: Mutable): void {
  switch (s.kind) {
    case 'counter': {
      // The ruleset value stays as loaded; the counts live in the state, as the kernel's per-rule counters.
      const c = st.counts.get(s);
      if (c === undefined) st.counts.set(s, { packets: 1, bytes: p.length ?? 0 });
      else {
        c.packets++;
        c.bytes += p.length ?? 0;
      }
      return;
    }
    case 'limit':
      // Limits are taken as under their rate.
      return;
    case 'log':
      if (m.logs === NO_LOGS) m.logs = [];
      m.logs.push(s.prefix ?? '');
      return;
    case 'meta-set': {
      const v = sourceValue(s.source, p, ctx, st, table, rule);
      if (v !== undefined) m.mark = v >>> 0;
      return;
    }
    case 'ct-set': {
      const v = sourceValue(s.source, p, ctx, st, table, rule);
      if (v !== undefined) m.ctMark = v >>> 0;
      return;
    }
    case 'notrack':
      m.notrack = true;
      return;
    case 'set-update': {
      const set = findSet(table, s.set);
      const key = readKey(s.key, p, ctx, st, rule);
      if (set === undefined || key === undefined) return;
      let members = st.dynamic.get(set);
      if (members === undefined) {
        members = new Set();
        st.dynamic.set(set, members);
      }
      members.add(keyString(key));
      return;
    }
    case 'match':
    case 'verdict':
    case 'vmap':
    case 'reject':
    case 'nat':
    case 'quota': // Kept for listing, not modelled: quotas and connection counts are never reached, field writes not applied.
    case 'ct-count':
    case 'field-set':
    case 'synproxy':
    case 'objref':
      return;
  }
}

/** The result of a whole hook's nft base chains (no iptables tables). */
export interface NftHookResult {
  readonly verdict: NftVerdictKind;
  readonly reject?: NftChainResult['reject'];
  readonly mark: number;
  readonly ctMark?: number;
  readonly nat?: NftNatRequest;
  readonly notrack: boolean;
  readonly trace: readonly NftTraceEntry[];
  readonly unsupported?: string;
}

/**
 * Every nft base chain at `ctx.hook` in priority order, as the kernel runs them when only nft is
 * loaded. `nat` chains see only a connection's first packet (`ct state new`), and the first NAT
 * decision at a hook wins (later nat chains are skipped), as in the kernel.
 */
export function evaluateHook(rs: Ruleset, packet: NftPacket, ctx: NftEvalContext, state: NftEvalState = createNftEvalState()): NftHookResult {
  let p = packet;
  let ctMark: number | undefined;
  let nat: NftNatRequest | undefined;
  let notrack = false;
  const trace: NftTraceEntry[] = [];
  for (const ref of baseChainsAt(rs, ctx.hook)) {
    if (ref.type === 'nat' && (ctx.conntrack.state !== 'new' || nat !== undefined)) continue;
    const c = ctMark === undefined ? ctx : { ...ctx, conntrack: { ...ctx.conntrack, mark: ctMark } };
    const r = evaluateBaseChain(ref, p, c, state);
    if (r.trace.length > 0) trace.push(...r.trace);
    if (r.mark !== p.mark) p = { ...p, mark: r.mark };
    if (r.ctMark !== undefined) ctMark = r.ctMark;
    if (r.nat !== undefined) nat = r.nat;
    notrack ||= r.notrack;
    if (r.verdict !== 'accept') {
      return {
        verdict: r.verdict,
        ...(r.reject !== undefined && { reject: r.reject }),
        mark: p.mark,
        ...(ctMark !== undefined && { ctMark }),
        ...(nat !== undefined && { nat }),
        notrack,
        trace,
        ...(r.unsupported !== undefined && { unsupported: r.unsupported }),
      };
    }
  }
  return { verdict: 'accept', mark: p.mark, ...(ctMark !== undefined && { ctMark }), ...(nat !== undefined && { nat }), notrack, trace };
}

/**
 * `nft monitor trace`'s `packet:` line for what netsim models of a packet: interfaces, mark,
 * addresses, TTL, length and the transport header (the kernel also prints link-layer and header
 * fields netsim does not keep).
 */
export function formatNftPacket(p: NftPacket): string {
  const parts: string[] = [];
  if (p.iifname !== undefined) parts.push(`iif "${p.iifname}"`);
  if (p.oifname !== undefined) parts.push(`oif "${p.oifname}"`);
  if (p.mark !== 0) parts.push(`meta mark 0x${(p.mark >>> 0).toString(16).padStart(8, '0')}`);
  parts.push(`ip saddr ${ipText(p.saddr)} ip daddr ${ipText(p.daddr)}`);
  if (p.ttl !== undefined) parts.push(`ip ttl ${p.ttl}`);
  if (p.length !== undefined) parts.push(`ip length ${p.length}`);
  if (p.protocol === 6 || p.protocol === 17) {
    const name = p.protocol === 6 ? 'tcp' : 'udp';
    parts.push(`${name} sport ${p.sport ?? 0} ${name} dport ${p.dport ?? 0}`);
    if (p.protocol === 6) parts.push(`tcp flags == ${tcpFlagsText(p.tcpFlags ?? 0)}`);
  } else if (p.protocol === 1) parts.push(`icmp type ${p.icmpType ?? 0}`);
  else parts.push(`ip protocol ${p.protocol}`);
  return parts.join(' ');
}

function ipText(a: number): string {
  return `${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}`;
}

const TCP_FLAG_NAMES: readonly (readonly [number, string])[] = [
  [1, 'fin'],
  [2, 'syn'],
  [4, 'rst'],
  [8, 'psh'],
  [16, 'ack'],
  [32, 'urg'],
  [64, 'ecn'],
  [128, 'cwr'],
];

function tcpFlagsText(f: number): string {
  const names = TCP_FLAG_NAMES.filter(([bit]) => (f & bit) !== 0).map(([, n]) => n);
  return names.length === 0 ? '0x0' : names.join(' | ');
}

/** A trace in the style of `nft monitor trace` (one line per entry, without the trace id). */
export function formatNftTrace(trace: readonly NftTraceEntry[]): string {
  return trace
    .map((e) => {
      const head = `${e.family} ${e.table} ${e.chain}`;
      switch (e.kind) {
        case 'rule':
          return `${head} rule ${e.rule ?? ''} (verdict ${e.verdict})`;
        case 'return':
          return `${head} verdict continue`;
        case 'policy':
          return `${head} policy ${e.verdict}`;
      }
    })
    .map((l) => `${l}\n`)
    .join('');
}
