/**
 * The host's nftables side: its base chains indexed by hook, the packet and conntrack views
 * `@netsim/nftables` evaluates, and the translation of what a chain asked for (a NAT statement, a
 * `reject`) into the datapath's own terms.
 *
 * The kernel runs nft base chains and iptables tables on the same hooks by priority. Chains of
 * type `nat` are different: like the iptables nat table they register with the NAT core, which
 * runs them all, in their priority order, at its own fixed place (dstnat -100 at prerouting and
 * output, srcnat 100 at input and postrouting), and only while a connection's NAT is undecided.
 * Checked on Linux 6.18: a `type nat hook prerouting priority -150` chain's `dnat` is seen by a
 * filter chain at -90 and not by one at -120.
 */
import type { AddrType, Hook, Ipv4, NatRequest, RejectWith } from '@netsim/netfilter';
import {
  baseChainsAt,
  type Hook as NftHook,
  type NftBaseChainRef,
  type NftChainResult,
  type NftConntrackView,
  type NftNatRequest,
  type NftPacket,
  type Ruleset,
  type Stmt,
  type Expr,
  type Source,
} from '@netsim/nftables';

/** A `filter` or `route` base chain and where it runs among the hook's fixed steps. */
export interface NftPlacedChain {
  readonly ref: NftBaseChainRef;
  /**
   * Its priority, or half a step more when it sits at the NAT core's priority but registered
   * before the NAT core (so the core, registered later, runs first).
   */
  readonly at: number;
}

/** The host's nft base chains at one hook: the ones that run at their own priority, and the NAT ones. */
export interface NftHookChains {
  /** `filter` and `route` chains, in the order they run. */
  readonly chains: readonly NftPlacedChain[];
  /** `nat` chains, in the order the NAT core runs them. */
  readonly nat: readonly NftBaseChainRef[];
}

const HOOK_NAMES: Readonly<Record<Hook, NftHook>> = {
  PREROUTING: 'prerouting',
  INPUT: 'input',
  FORWARD: 'forward',
  OUTPUT: 'output',
  POSTROUTING: 'postrouting',
};

export function nftHookName(hook: Hook): NftHook {
  return HOOK_NAMES[hook];
}

/**
 * Base chains by hook; hooks without any are absent. The NAT core registers with the first NAT
 * user: the iptables nat table when it exists (`iptablesNat`), else the first nft `nat` chain (of
 * any hook, in creation order). At equal priority the kernel runs the later registration first.
 */
export function indexNftHooks(rs: Ruleset, iptablesNat: boolean): ReadonlyMap<Hook, NftHookChains> {
  const order = new Map<object, number>();
  let firstNat = iptablesNat ? -1 : Number.POSITIVE_INFINITY;
  for (const t of rs.tables) {
    for (const c of t.chains) {
      order.set(c, order.size);
      if (c.base?.type === 'nat' && !t.dormant && firstNat === Number.POSITIVE_INFINITY) firstNat = order.size - 1;
    }
  }
  const out = new Map<Hook, NftHookChains>();
  for (const hook of Object.keys(HOOK_NAMES) as Hook[]) {
    const all = baseChainsAt(rs, HOOK_NAMES[hook]);
    if (all.length === 0) continue;
    const natPrio = hook === 'PREROUTING' || hook === 'OUTPUT' ? -100 : 100;
    const chains = all
      .filter((c) => c.type !== 'nat')
      .map((ref): NftPlacedChain => ({ ref, at: ref.priority === natPrio && (order.get(ref.chain) ?? 0) < firstNat ? ref.priority + 0.5 : ref.priority }))
      .sort((a, b) => a.at - b.at);
    out.set(hook, { chains, nat: all.filter((c) => c.type === 'nat') });
  }
  return out;
}

function exprNeedsCt(e: Expr): boolean {
  if (e.kind === 'ct') return true;
  if (e.kind === 'concat') return e.parts.some(exprNeedsCt);
  if (e.kind === 'binop') return exprNeedsCt(e.left);
  return false;
}

function sourceNeedsCt(s: Source | { readonly kind: 'range' }): boolean {
  if (s.kind === 'expr') return exprNeedsCt(s.expr);
  if (s.kind === 'map') return exprNeedsCt(s.lookup.key);
  return false;
}

function stmtNeedsCt(s: Stmt): boolean {
  switch (s.kind) {
    case 'match':
      return exprNeedsCt(s.left);
    case 'vmap':
      return exprNeedsCt(s.lookup.key);
    case 'meta-set':
      return sourceNeedsCt(s.source);
    case 'ct-set':
    case 'nat':
      return true;
    case 'set-update':
      return exprNeedsCt(s.key);
    case 'ct-count':
      return true;
    case 'field-set':
      return exprNeedsCt(s.target) || (s.source.kind !== 'text' && sourceNeedsCt(s.source));
    case 'notrack':
    case 'quota':
    case 'synproxy':
    case 'objref':
    case 'counter':
    case 'limit':
    case 'log':
    case 'reject':
    case 'verdict':
      return false;
  }
}

/**
 * Whether an nft ruleset makes the kernel track connections: a `nat` chain, a `ct` expression or
 * statement, or a NAT statement (each takes nf_conntrack for the namespace). `notrack` alone does
 * not (checked on Linux 6.18: a table with only `notrack` and marks leaves conntrack off).
 */
export function nftNeedsConntrack(rs: Ruleset): boolean {
  for (const t of rs.tables) {
    for (const c of t.chains) {
      if (c.base?.type === 'nat') return true;
      for (const r of c.rules) for (const s of r.stmts) if (stmtNeedsCt(s)) return true;
    }
  }
  return false;
}

/** The conntrack state of a packet as the `ct` expression reads it (no entry: `invalid`, or `untracked`). */
export function nftCtView(state: 'NEW' | 'ESTABLISHED' | 'RELATED' | 'INVALID' | 'UNTRACKED', entry: { readonly mark: number; readonly seenReply: boolean; readonly assured: boolean; readonly confirmed: boolean; readonly srcNat: boolean; readonly dstNat: boolean } | null): NftConntrackView {
  const s = state === 'NEW' ? 'new' : state === 'ESTABLISHED' ? 'established' : state === 'RELATED' ? 'related' : state === 'UNTRACKED' ? 'untracked' : 'invalid';
  if (entry === null || s === 'invalid' || s === 'untracked') return { state: s, status: 0, mark: 0 };
  const status = (entry.seenReply ? 2 : 0) | (entry.assured ? 4 : 0) | (entry.confirmed ? 8 : 0) | (entry.srcNat ? 16 : 0) | (entry.dstNat ? 32 : 0);
  return { state: s, status, mark: entry.mark };
}

/** `fib_addrtype` numbers (`RTN_*`), as `fib daddr type` compares them. */
const RTN: Readonly<Record<AddrType, number>> = {
  UNSPEC: 0,
  UNICAST: 1,
  LOCAL: 2,
  BROADCAST: 3,
  ANYCAST: 4,
  MULTICAST: 5,
  BLACKHOLE: 6,
  UNREACHABLE: 7,
  PROHIBIT: 8,
  THROW: 9,
  NAT: 10,
  XRESOLVE: 11,
};

export function rtnOf(t: AddrType): number {
  return RTN[t];
}

/** A datapath packet as nft reads it. */
export function nftPacketOf(
  p: { readonly src: Ipv4; readonly dst: Ipv4; readonly proto: number; readonly sport: number; readonly dport: number; readonly tcpFlags: number; readonly icmpType: number; readonly mark: number; readonly ttl: number; readonly lengthBytes: number },
  inIf: string | null,
  outIf: string | null,
  ifIndex: (name: string) => number,
): NftPacket {
  return {
    saddr: p.src,
    daddr: p.dst,
    protocol: p.proto,
    sport: p.sport,
    dport: p.dport,
    tcpFlags: p.tcpFlags,
    icmpType: p.icmpType,
    ...(inIf !== null && { iifname: inIf, iif: ifIndex(inIf) }),
    ...(outIf !== null && { oifname: outIf, oif: ifIndex(outIf) }),
    mark: p.mark,
    ttl: p.ttl,
    length: p.lengthBytes,
  };
}

/** The REJECT reply an nft `reject` statement sends (`reject` alone: port unreachable). */
export function nftRejectWith(r: NftChainResult['reject']): RejectWith {
  if (r === undefined) return 'icmp-port-unreachable';
  if (r.kind === 'tcp-reset') return 'tcp-reset';
  switch (r.code) {
    case 'net-unreachable':
    case 'no-route':
      return 'icmp-net-unreachable';
    case 'host-unreachable':
      return 'icmp-host-unreachable';
    case 'prot-unreachable':
      return 'icmp-proto-unreachable';
    case 'net-prohibited':
      return 'icmp-net-prohibited';
    case 'host-prohibited':
      return 'icmp-host-prohibited';
    case 'admin-prohibited':
      return 'icmp-admin-prohibited';
    default:
      return 'icmp-port-unreachable';
  }
}

/**
 * A NAT statement's request as the NAT core takes it. `redirect` is a DNAT to the incoming
 * interface's primary address (127.0.0.1 for locally generated packets), as `nf_nat_redirect_ipv4`
 * does; `undefined` when there is no such address (the kernel drops the packet).
 */
export function nftNatRequest(req: NftNatRequest, redirectAddr: () => Ipv4 | 0): NatRequest | undefined {
  const random = req.flags.includes('random');
  const randomFully = req.flags.includes('fully-random');
  const persistent = req.flags.includes('persistent');
  const ports = req.port !== undefined ? { minPort: req.port.lo, maxPort: req.port.hi } : {};
  switch (req.kind) {
    case 'dnat':
      return { kind: 'DNAT', to: { ...(req.addr !== undefined && { minIp: req.addr.lo as Ipv4, maxIp: req.addr.hi as Ipv4 }), ...ports }, random, persistent };
    case 'snat':
      return { kind: 'SNAT', to: { ...(req.addr !== undefined && { minIp: req.addr.lo as Ipv4, maxIp: req.addr.hi as Ipv4 }), ...ports }, random, randomFully, persistent };
    case 'masquerade':
      return { kind: 'MASQUERADE', ...(req.port !== undefined && { toPorts: { from: req.port.lo, to: req.port.hi } }), random, randomFully };
    case 'redirect': {
      const a = redirectAddr();
      if (a === 0) return undefined;
      return { kind: 'DNAT', to: { minIp: a, maxIp: a, ...ports }, random, persistent: false };
    }
  }
}
