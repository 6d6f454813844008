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
import { compiledTable, NAT, NEXT, NO_LOGS, NOMATCH, REJECT, V_ACCEPT, V_CONTINUE, V_DROP, V_GOTO, V_QUEUE, V_RETURN, type CompiledChain, type Env } from './compiled.ts';
import type { Chain, ChainType, Family, Hook, NatFlag, NatKind, NftSet, Rule, Ruleset, Stmt, Table, Verdict } from './types.ts';

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
  return [...baseChainsCached(rs, hook)];
}

function baseChainsCached(rs: Ruleset, hook: Hook): readonly NftBaseChainRef[] {
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
  return hit;
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

// ---- the walk

const MAX_DEPTH = 16;
const NO_TRACE: readonly NftTraceEntry[] = [];
const EMPTY_TRACE: readonly NftTraceEntry[] = Object.freeze([]);

/** How a base chain ended: accept (also by NAT), drop, reject, its policy, or unsupported. */
const END_ACCEPT = 0;
const END_DROP = 1;
const END_REJECT = 2;
const END_UNSUPPORTED = 3;

function traceRuleOf(env: Env, ref: NftBaseChainRef, cc: CompiledChain, i: number, verdict: string): void {
  const rule = cc.rules[i] as Rule;
  let text = cc.texts[i];
  if (text === undefined) {
    text = formatRule(rule, ref.family);
    cc.texts[i] = text;
  }
  env.trace.push({ family: ref.family, table: ref.table.name, chain: cc.chain.name, kind: 'rule', handle: rule.handle, rule: text, verdict });
}

/**
 * The walk state for one evaluation. The one kept per evaluation state is reused packet after
 * packet (no allocation on the hot path); a nested evaluation (from inside a callback) gets its own.
 */
function takeEnv(packet: NftPacket, context: NftEvalContext, state: NftEvalState): Env {
  let env = envs.get(state);
  if (env === undefined || env.busy) {
    const fresh: Env = {
      p: packet,
      ctx: context,
      st: state,
      mark: packet.mark,
      ctMark: undefined,
      nat: undefined,
      notrack: false,
      logs: NO_LOGS as string[],
      verdict: undefined,
      target: null,
      reject: undefined,
      chains: [],
      next: [],
      trace: NO_TRACE as NftTraceEntry[],
      busy: false,
      why: '',
    };
    if (env === undefined) envs.set(state, fresh);
    env = fresh;
  }
  env.busy = true;
  env.p = packet;
  env.ctx = context;
  env.mark = packet.mark;
  env.ctMark = undefined;
  env.nat = undefined;
  env.notrack = false;
  env.logs = NO_LOGS as string[];
  env.verdict = undefined;
  env.target = null;
  env.reject = undefined;
  env.trace = context.trace === true ? [] : (NO_TRACE as NftTraceEntry[]);
  return env;
}

/** Lets go of an evaluation's walk state (and of the packet and results it holds). */
function releaseEnv(env: Env): void {
  env.busy = false;
  env.chains.fill(undefined);
  env.verdict = undefined;
  env.target = null;
  env.logs = NO_LOGS as string[];
  env.trace = NO_TRACE as NftTraceEntry[];
}

const envs = new WeakMap<NftEvalState, Env>(); // tidy-allow: scratch space reset at the start and end of every evaluation; cannot change results


/**
 * Walks one base chain with `env` (its packet, context and per-chain fields already set). A
 * policy ends as accept or drop.
 */
function runChain(ref: NftBaseChainRef, env: Env): number {
  const ct = compiledTable(ref.table);
  const tracing = env.trace !== NO_TRACE;
  // The stack keeps its capacity from packet to packet: `depth` says how much of it is in use.
  const chains = env.chains;
  const next = env.next;
  let depth = 1;
  chains[0] = ct.chain(ref.chain);
  next[0] = 0;
  for (;;) {
    const top = depth - 1;
    const cc = chains[top] as CompiledChain;
    const i = (next[top] as number)++;
    const run = cc.runs[i];
    if (run === undefined) {
      depth--;
      if (depth === 0) return policyEnd(ref, env, cc.chain);
      if (tracing) env.trace.push({ family: ref.family, table: ref.table.name, chain: cc.chain.name, kind: 'return', verdict: 'continue' });
      continue;
    }
    const code = run(env);
    switch (code) {
      case NOMATCH:
        continue;
      case NEXT:
        // The kernel traces every rule that ran to its end, a rule without a verdict as `continue`.
        if (tracing) traceRuleOf(env, ref, cc, i, 'continue');
        continue;
      case REJECT:
        if (tracing) traceRuleOf(env, ref, cc, i, 'drop');
        return END_REJECT;
      case NAT:
        if (tracing) traceRuleOf(env, ref, cc, i, 'accept');
        return END_ACCEPT;
    }
    if (tracing) traceRuleOf(env, ref, cc, i, verdictText(env.verdict as Verdict));
    switch (code) {
      case V_ACCEPT:
        return END_ACCEPT;
      case V_DROP:
        return END_DROP;
      case V_QUEUE:
        env.why = 'queue: userspace queues are not modelled';
        return END_UNSUPPORTED;
      case V_CONTINUE:
        continue;
      case V_RETURN:
        depth--;
        if (depth === 0) return policyEnd(ref, env, ref.chain);
        continue;
      default: {
        // jump, goto
        const target = env.target;
        if (target === null || depth >= MAX_DEPTH) {
          env.why = `jump to ${(env.verdict as { chain: string }).chain} cannot be followed`;
          return END_UNSUPPORTED;
        }
        if (code === V_GOTO) depth--;
        chains[depth] = target;
        next[depth] = 0;
        depth++;
      }
    }
  }
}

function policyEnd(ref: NftBaseChainRef, env: Env, chain: Chain): number {
  const policy = ref.chain.base?.policy ?? 'accept';
  if (env.trace !== NO_TRACE) env.trace.push({ family: ref.family, table: ref.table.name, chain: chain.name, kind: 'policy', verdict: policy });
  return policy === 'drop' ? END_DROP : END_ACCEPT;
}

const END_VERDICT: readonly NftVerdictKind[] = ['accept', 'drop', 'reject', 'unsupported'];

/**
 * Runs one base chain on a packet. `accept` ends this chain only (later base chains at the hook
 * still run); `drop` and `reject` end the hook. A NAT statement accepts, as in the kernel. The
 * chains run in their compiled form (closures built once per table, see `compiled.ts`).
 */
export function evaluateBaseChain(ref: NftBaseChainRef, packet: NftPacket, context: NftEvalContext, state: NftEvalState = createNftEvalState()): NftChainResult {
  const env = takeEnv(packet, context, state);
  try {
    const end = runChain(ref, env);
    const r: { -readonly [K in keyof NftChainResult]: NftChainResult[K] } = { verdict: END_VERDICT[end] as NftVerdictKind, mark: env.mark, notrack: env.notrack, logs: env.logs, trace: env.trace };
    if (env.ctMark !== undefined) r.ctMark = env.ctMark;
    if (env.nat !== undefined) r.nat = env.nat;
    if (end === END_REJECT && env.reject !== undefined) r.reject = env.reject;
    if (end === END_UNSUPPORTED) r.unsupported = env.why;
    return r;
  } finally {
    releaseEnv(env);
  }
}

function verdictText(v: Verdict): string {
  return v.kind === 'jump' || v.kind === 'goto' ? `${v.kind} ${v.chain}` : v.kind;
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
  // One walk state for every chain of the hook; each chain starts from what the earlier ones left.
  const env = takeEnv(packet, ctx, state);
  try {
    let ctMark: number | undefined;
    let nat: NftNatRequest | undefined;
    let notrack = false;
    for (const ref of baseChainsCached(rs, ctx.hook)) {
      if (ref.type === 'nat' && (ctx.conntrack.state !== 'new' || nat !== undefined)) continue;
      env.ctx = ctMark === undefined ? ctx : { ...ctx, conntrack: { ...ctx.conntrack, mark: ctMark } };
      env.mark = env.p.mark;
      env.ctMark = undefined;
      env.nat = undefined;
      env.notrack = false;
      env.reject = undefined;
      const end = runChain(ref, env);
      if (env.ctMark !== undefined) ctMark = env.ctMark;
      if (env.nat !== undefined) nat = env.nat;
      notrack ||= env.notrack;
      if (end !== END_ACCEPT) return hookResult(END_VERDICT[end] as NftVerdictKind, env, ctMark, nat, notrack, end === END_REJECT ? env.reject : undefined, end === END_UNSUPPORTED ? env.why : undefined);
    }
    return hookResult('accept', env, ctMark, nat, notrack, undefined, undefined);
  } finally {
    releaseEnv(env);
  }
}

function hookResult(verdict: NftVerdictKind, env: Env, ctMark: number | undefined, nat: NftNatRequest | undefined, notrack: boolean, reject: NftChainResult['reject'], unsupported: string | undefined): NftHookResult {
  // Keys in the order callers have always seen them (JSON output of a result stays the same).
  const r: { -readonly [K in keyof NftHookResult]?: NftHookResult[K] } = { verdict };
  if (reject !== undefined) r.reject = reject;
  r.mark = env.p.mark;
  if (ctMark !== undefined) r.ctMark = ctMark;
  if (nat !== undefined) r.nat = nat;
  r.notrack = notrack;
  // Untraced: one shared, frozen empty list (a packet allocates only its result).
  r.trace = env.trace === NO_TRACE ? EMPTY_TRACE : env.trace;
  if (unsupported !== undefined) r.unsupported = unsupported;
  return r as NftHookResult;
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
