/**
 * One host's packet path, in the kernel's order (hook priorities raw -300, conntrack -200,
 * mangle -150, nat DNAT -100, filter 0, nat SNAT 100, conntrack confirm last):
 *
 * - received, for this host: PREROUTING (raw, conntrack, mangle, nat) → routing decision with
 *   martian checks and rp_filter → INPUT (mangle, filter, nat) → confirm → socket;
 * - received, forwarded: PREROUTING → routing decision (ip_forward of the incoming interface,
 *   rp_filter) → FORWARD (mangle, filter) → POSTROUTING (mangle, nat) → confirm → wire;
 * - sent by this host: routing → OUTPUT (raw, conntrack, mangle — re-route if the mark changed —,
 *   nat — re-route if the destination changed —, filter; every OUTPUT table sees the first
 *   route's interface, POSTROUTING the re-routed one) → POSTROUTING → confirm → wire, or
 *   back in through `lo` (PREROUTING raw/mangle, INPUT mangle/filter; nat already decided).
 *
 * nat chains are walked only while a connection's NAT for that manip type is undecided (its first
 * packet); afterwards the stored binding rewrites every packet in both directions. REJECT sends
 * its RST or ICMP error as a locally generated packet attached to the rejected packet's conntrack
 * entry, so the reply is un-NATed like the kernel's `nf_ct_attach` makes it.
 *
 * The hot path uses plain mutable packets; every decision is appended to the run's trace.
 */
import {
  evaluateTable,
  formatIpv4,
  formatRuleSpec,
  REJECT_ICMP_CODE,
  type AddrType,
  type ConntrackView,
  type EvalContext,
  type EvalResult,
  type Hook,
  type Ipv4,
  type NatRequest,
  type Packet,
  type RejectWith,
  type TableName,
  type UnknownPolicy,
} from '@netsim/netfilter';
import {
  TCP_ACK,
  TCP_RST,
  TCP_SYN,
  UDP_STREAM_AFTER_MS,
  formatCtEntry,
  icmpInvertible,
  icmpStartsConnection,
  invertTuple,
  tcpTimeoutSec,
  tcpTransition,
  tcpValidFlags,
  type CtDir,
  type CtEntry,
} from './conntrack.ts';
import { addrTypeOf, fibLookup, routeSource, selectSourceAddr, type FibResult } from './fib.ts';
import type { Host } from './host.ts';
import { manipIcmpError, manipPacket, setupNat, type Manip, type NatEnv, type RandomSource } from './nat.ts';
import {
  ICMP_DEST_UNREACH,
  PROTO_ICMP,
  PROTO_TCP,
  PROTO_UDP,
  copyPkt,
  icmpName,
  innerOf,
  isIcmpError,
  pktTuple,
  viewPkt,
  type Pkt,
  type PktOrigin,
} from './packet.ts';
import { effectiveAcceptLocal, effectiveRouteLocalnet, effectiveRpFilter } from './sysctl.ts';
import type { DropSite, MatchedRule, TraceStep } from './trace.ts';
import { evaluateBaseChain, formatNftPacket, formatNftTrace, iptablesPriority, type NftBaseChainRef, type NftChainResult, type NftPacket } from '@netsim/nftables';
import { nftCtView, nftHookName, nftNatRequest, nftPacketOf, nftRejectWith, rtnOf } from './nft.ts';

/** The conntrack state a packet carries through one host (`skb->_nfct` and its ctinfo). */
export interface SkbCt {
  entry: CtEntry | null;
  dir: CtDir;
  state: 'NEW' | 'ESTABLISHED' | 'RELATED' | 'INVALID' | 'UNTRACKED';
}

const NO_CT: SkbCt = { entry: null, dir: 'original', state: 'INVALID' };

/** What a run provides to the datapath: the clock, randomness, the trace and the wires. */
export interface RunCtx {
  readonly nowMs: number;
  readonly rng: RandomSource;
  /** `statistic --mode random` draws; receives the rule's 31-bit threshold (see EvalContext.random31). */
  readonly random31: (threshold31?: number) => number;
  readonly trace: TraceStep[];
  nextPktId(): number;
  /**
   * Puts a packet on the wire of `iface` toward `nexthop`. Returns false when no neighbour
   * answers for `nexthop` (the datapath then reports the failure as the kernel does).
   */
  transmit(host: Host, iface: string, nexthop: Ipv4, pkt: Pkt): boolean;
  /** Hands a packet that passed INPUT to the host's stack. */
  deliver(host: Host, pkt: Pkt, inIface: string, sk: SkbCt): void;
  /** Host-internal nesting (loopback, overlay, generated replies) in progress; starts at 0. */
  depth: number;
  /**
   * Record only drops, stack events and notes (what results are made of), not every walk,
   * route, conntrack step and hop: for callers that run many exchanges and read only outcomes.
   */
  readonly lean: boolean;
  /** What rule walks do at a rule they cannot evaluate (default `stop`). */
  readonly unknown?: UnknownPolicy;
  /** Per-module overrides of `unknown` (see `EvalOptions.unknownModules`). */
  readonly unknownModules?: Readonly<Record<string, UnknownPolicy>>;
}

/** Why a locally generated packet could not even be routed (what the sending call returns). */
export type SendError = { readonly errno: 'ENETUNREACH' | 'EHOSTUNREACH' | 'EACCES' | 'EINVAL'; readonly reason: string };

/** Outcome of a local send: the app gets an error only when routing fails at once. */
export type SendOutcome = { readonly ok: true } | ({ readonly ok: false } & SendError);

const MAX_NESTING = 16;

function ip(a: number): string {
  return formatIpv4(a);
}

function ends(p: { src: number; dst: number; sport: number; dport: number; proto: number }): string {
  return p.proto === PROTO_TCP || p.proto === PROTO_UDP ? `${ip(p.src)}:${p.sport} > ${ip(p.dst)}:${p.dport}` : `${ip(p.src)} > ${ip(p.dst)}`;
}

function drop(host: Host, pkt: Pkt, site: DropSite, reason: string, rc: RunCtx): void {
  rc.trace.push({ kind: 'drop', host: host.name, packet: viewPkt(pkt), site, reason });
}

// ---------------------------------------------------------------------------------------------
// netfilter tables

function nfPacket(p: Pkt, inIf: string | null, outIf: string | null): Packet {
  return {
    src: p.src,
    dst: p.dst,
    proto: p.proto,
    sport: p.sport,
    dport: p.dport,
    tcpFlags: p.tcpFlags,
    icmpType: p.icmpType,
    icmpCode: p.icmpCode,
    inIface: inIf,
    outIface: outIf,
    mark: p.mark,
    lengthBytes: p.lengthBytes,
    fragment: false,
    ttl: p.ttl,
  };
}

function ctView(sk: SkbCt): ConntrackView {
  const e = sk.entry;
  return { state: sk.state, dnat: e?.dstNat ?? false, snat: e?.srcNat ?? false, ctmark: e?.mark ?? 0 };
}

function evalCtx(host: Host, view: ConntrackView, rc: RunCtx): EvalContext {
  return {
    addrType(addr: Ipv4, iface: string | null): AddrType {
      // --limit-iface-in/out pass the interface: table local's routes on other devices do not count.
      return addrTypeOf(host.fib, addr, iface);
    },
    conntrack: view,
    random31: rc.random31,
    state: host.evalState,
    nowMs: rc.nowMs,
  };
}

function tableIsEmpty(host: Host, table: TableName, hook: Hook): boolean {
  const c = host.ruleset.tables[table].chains[hook];
  return c === undefined || (c.rules.length === 0 && c.policy !== 'DROP');
}

interface TableOutcome {
  readonly res: EvalResult;
  /** The last matched rule (for a drop site), if any. */
  readonly last: MatchedRule | null;
}

const ACCEPT_RESULT: EvalResult = { verdict: { kind: 'ACCEPT' }, mark: 0, ctmark: 0, notrack: false, traced: false, trace: [] };

/** Walks one table at one hook, applies marks, records the walk. */
function runTable(host: Host, table: TableName, hook: Hook, pkt: Pkt, inIf: string | null, outIf: string | null, view: ConntrackView, sk: SkbCt, rc: RunCtx): TableOutcome {
  if (tableIsEmpty(host, table, hook)) return { res: { ...ACCEPT_RESULT, mark: pkt.mark, ctmark: sk.entry?.mark ?? 0 }, last: null };
  const res = evaluateTable(host.compiled, table, hook, nfPacket(pkt, inIf, outIf), evalCtx(host, view, rc), {
    ...(rc.unknown !== undefined ? { unknown: rc.unknown } : {}),
    ...(rc.unknownModules !== undefined ? { unknownModules: rc.unknownModules } : {}),
  });
  pkt.mark = res.mark;
  if (sk.entry !== null) sk.entry.mark = res.ctmark;
  if (rc.lean) return { res, last: res.verdict.kind === 'ACCEPT' ? null : lastMatched(host, res) };
  const matched: MatchedRule[] = [];
  let examined = 0;
  for (const t of res.trace) {
    if (t.kind === 'rule') {
      examined++;
      if (t.outcome === 'match' || t.assumed === 'match') matched.push(matchedRule(host, t));
    } else if (t.kind === 'skip') examined += t.to - t.from + 1;
  }
  rc.trace.push({ kind: 'table', host: host.name, hook, table, verdict: verdictText(res), matched, examined });
  return { res, last: matched.length > 0 ? (matched[matched.length - 1] ?? null) : null };
}

function matchedRule(host: Host, t: { table: TableName; chain: string; index: number }): MatchedRule {
  const rule = host.ruleset.tables[t.table].chains[t.chain]?.rules[t.index - 1];
  return { table: t.table, chain: t.chain, index: t.index, rule: rule === undefined ? `-A ${t.chain} (rule ${t.index})` : `-A ${t.chain} ${formatRuleSpec(rule)}` };
}

/** The last rule that matched in a walk (for a drop site), formatting only that one. */
function lastMatched(host: Host, res: EvalResult): MatchedRule | null {
  for (let i = res.trace.length - 1; i >= 0; i--) {
    const t = res.trace[i];
    if (t?.kind === 'rule' && (t.outcome === 'match' || t.assumed === 'match')) return matchedRule(host, t);
  }
  return null;
}

function verdictText(res: EvalResult): string {
  const v = res.verdict;
  switch (v.kind) {
    case 'ACCEPT':
      return res.nat !== undefined ? `ACCEPT (${res.nat.kind})` : 'ACCEPT';
    case 'DROP':
      return v.byPolicy ? 'DROP (policy)' : 'DROP';
    case 'REJECT':
      return `REJECT --reject-with ${v.with}`;
    case 'unknown':
      return `UNKNOWN (${v.reason})`;
  }
}

/**
 * Handles a non-ACCEPT verdict. Returns true when the packet may go on. REJECT sends its reply;
 * an undecidable rule stops the packet with the reason in the trace.
 */
function verdictGoesOn(host: Host, table: TableName, hook: Hook, out: TableOutcome, pkt: Pkt, sk: SkbCt, rc: RunCtx): boolean {
  const v = out.res.verdict;
  switch (v.kind) {
    case 'ACCEPT':
      return true;
    case 'DROP': {
      const chain = v.byPolicy ? hook : (out.last?.chain ?? hook);
      drop(
        host,
        pkt,
        { stage: 'hook', verdict: 'DROP', hook, table, chain, index: v.byPolicy ? null : (out.last?.index ?? null), rule: v.byPolicy ? null : (out.last?.rule ?? null) },
        v.byPolicy ? `${table} ${hook} policy DROP` : `${table} ${chain} rule ${out.last?.index ?? '?'}: DROP`,
        rc,
      );
      return false;
    }
    case 'REJECT':
      drop(
        host,
        pkt,
        { stage: 'hook', verdict: 'REJECT', hook, table, chain: out.last?.chain ?? hook, index: out.last?.index ?? null, rule: out.last?.rule ?? null },
        `${table} ${out.last?.chain ?? hook} rule ${out.last?.index ?? '?'}: REJECT --reject-with ${v.with}`,
        rc,
      );
      rejectReply(host, pkt, v.with, sk, rc);
      return false;
    case 'unknown':
      drop(
        host,
        pkt,
        { stage: 'hook', verdict: 'unknown', hook, table, chain: v.at.chain, index: v.at.index, rule: out.last?.rule ?? null },
        `undecidable rule ${v.at.table} ${v.at.chain} #${v.at.index}: ${v.reason} (fate unknown)`,
        rc,
      );
      return false;
  }
}

/** raw/mangle/filter tables of a hook (nat is handled by {@link natHook}). */
function runPlain(host: Host, table: TableName, hook: Hook, pkt: Pkt, inIf: string | null, outIf: string | null, sk: SkbCt, rc: RunCtx, view?: ConntrackView): boolean {
  const out = runTable(host, table, hook, pkt, inIf, outIf, view ?? ctView(sk), sk, rc);
  return verdictGoesOn(host, table, hook, out, pkt, sk, rc);
}


// ---------------------------------------------------------------------------------------------
// nftables base chains

/** What nft chains before conntrack asked for: `notrack` (the packet stays untracked). */
interface NftPre {
  notrack: boolean;
}

function nftPacket(host: Host, pkt: Pkt, inIf: string | null, outIf: string | null): NftPacket {
  return nftPacketOf(pkt, inIf, outIf, (n) => host.fib.ifaces.get(n)?.index ?? 0);
}

function hex8(n: number): string {
  return (n >>> 0).toString(16).padStart(8, '0');
}

/** Runs one nft base chain on the packet: applies `meta mark set` / `ct mark set`, records the walk. */
function runNftChain(host: Host, hook: Hook, ref: NftBaseChainRef, pkt: Pkt, inIf: string | null, outIf: string | null, sk: SkbCt, rc: RunCtx): NftChainResult {
  const packet = nftPacket(host, pkt, inIf, outIf);
  const r = evaluateBaseChain(
    ref,
    packet,
    {
      hook: nftHookName(hook),
      conntrack: nftCtView(sk.state, sk.entry),
      fibAddrType: (a) => rtnOf(addrTypeOf(host.fib, a)),
      random32: () => rc.rng.int(0x100000000),
      trace: true,
    },
    host.nftState,
  );
  pkt.mark = r.mark;
  if (r.ctMark !== undefined && sk.entry !== null) sk.entry.mark = r.ctMark;
  if (!rc.lean) {
    const id = `trace id ${hex8(pkt.id)}`;
    const head = `${id} ${ref.family} ${ref.table.name} ${ref.chain.name}`;
    const lines = [`${head} packet: ${formatNftPacket(packet)}`, ...formatNftTrace(r.trace).split('\n').filter((l) => l !== '').map((l) => `${id} ${l}`)];
    const verdict = r.verdict === 'unsupported' ? `unsupported (${r.unsupported ?? '?'})` : r.nat !== undefined ? `accept (${r.nat.kind})` : r.verdict;
    rc.trace.push({ kind: 'nft', host: host.name, hook, family: ref.family, table: ref.table.name, chain: ref.chain.name, priority: ref.priority, verdict, lines });
  }
  return r;
}

/** Handles an nft chain's verdict: true when the packet goes on; drop, reject (with its reply) or unsupported end it. */
function nftGoesOn(host: Host, hook: Hook, ref: NftBaseChainRef, r: NftChainResult, pkt: Pkt, sk: SkbCt, rc: RunCtx): boolean {
  if (r.verdict === 'accept') return true;
  let last: { handle: number; rule: string; chain: string } | null = null;
  const t = r.trace[r.trace.length - 1];
  if (t?.kind === 'rule') last = { handle: t.handle ?? 0, rule: t.rule ?? '', chain: t.chain };
  const chain = last?.chain ?? ref.chain.name;
  const where = `nft ${ref.family} ${ref.table.name} ${chain}`;
  const site: DropSite = { stage: 'nft', verdict: r.verdict, hook, family: ref.family, table: ref.table.name, chain, handle: last?.handle ?? null, rule: last?.rule ?? null };
  switch (r.verdict) {
    case 'drop':
      drop(host, pkt, site, last === null ? `${where} policy drop` : `${where} rule ${last.rule}: drop`, rc);
      return false;
    case 'reject': {
      const how = nftRejectWith(r.reject);
      drop(host, pkt, site, `${where} rule ${last?.rule ?? '?'}: reject (${how})`, rc);
      // At PREROUTING the packet has no route yet: the kernel answers even one sent to a broadcast address.
      rejectReply(host, pkt, how, sk, rc, hook === 'PREROUTING');
      return false;
    }
    case 'unsupported':
      drop(host, pkt, site, `${where}: ${r.unsupported ?? 'unsupported'} (fate unknown)`, rc);
      return false;
  }
}

/**
 * The host's nft base chains (not `nat` ones) at `hook` whose place is in (lo, hi], in order: a
 * chain at the priority of an iptables table runs before it (it registered later), one at -200
 * after conntrack (which registers when the ruleset first needs it).
 * `pre` collects `notrack` from chains before conntrack; `reroute` runs after a `route` chain
 * changed the mark or the destination of a locally generated packet. Returns false when the packet dies.
 */
function runNft(
  host: Host,
  hook: Hook,
  lo: number,
  hi: number,
  pkt: Pkt,
  inIf: string | null,
  outIf: string | null,
  sk: SkbCt,
  rc: RunCtx,
  pre?: NftPre,
  reroute?: () => boolean,
): boolean {
  const at = host.nftChainsAt(hook);
  if (at === undefined) return true;
  for (const { ref, at: place } of at.chains) {
    if (place <= lo) continue;
    if (place > hi) break;
    const markBefore = pkt.mark;
    const dstBefore = pkt.dst;
    const r = runNftChain(host, hook, ref, pkt, inIf, outIf, sk, rc);
    if (r.notrack && pre !== undefined) pre.notrack = true;
    if (!nftGoesOn(host, hook, ref, r, pkt, sk, rc)) return false;
    if (reroute !== undefined && ref.type === 'route' && (pkt.mark !== markBefore || pkt.dst !== dstBefore) && !reroute()) return false;
  }
  return true;
}

const NFT_ALL = Number.POSITIVE_INFINITY;
/** Just before conntrack's -200: a chain at -200 itself runs after conntrack. */
const BEFORE_CT = -201;

// ---------------------------------------------------------------------------------------------
// conntrack

function ctTrace(host: Host, event: Extract<TraceStep, { kind: 'conntrack' }>['event'], e: CtEntry | null, rc: RunCtx, dir?: CtDir, detail?: string): void {
  if (rc.lean) return;
  rc.trace.push({
    kind: 'conntrack',
    host: host.name,
    event,
    entry: e === null ? null : formatCtEntry(e, rc.nowMs),
    ...(dir !== undefined ? { dir } : {}),
    ...(detail !== undefined ? { detail } : {}),
  });
}

const ICMP_TIMEOUT_SEC = 30;
const GENERIC_TIMEOUT_SEC = 600;

function newEntry(host: Host, pkt: Pkt, rc: RunCtx): SkbCt {
  const t = host.config.sysctls.ctTimeouts;
  const tuple = pktTuple(pkt);
  if (pkt.proto === PROTO_TCP) {
    const next = tcpTransition('NONE', 'original', pkt.tcpFlags);
    if (next === 'IV' || next === 'IG') {
      ctTrace(host, 'invalid', null, rc, undefined, `(a ${flagsText(pkt.tcpFlags)} segment cannot start a connection)`);
      return { entry: null, dir: 'original', state: 'INVALID' };
    }
    // tcp_new: only a SYN starts a connection unless nf_conntrack_tcp_loose lets an ACK pick one up.
    if (next !== 'SYN_SENT' && host.config.sysctls.tcpLoose === 0) {
      ctTrace(host, 'invalid', null, rc, undefined, `(a mid-stream ${flagsText(pkt.tcpFlags)} starts nothing with nf_conntrack_tcp_loose=0)`);
      return { entry: null, dir: 'original', state: 'INVALID' };
    }
    const e = host.conntrack.create(tuple, rc.nowMs, tcpTimeoutSec(next, t));
    e.tcpState = next;
    ctTrace(host, 'new', e, rc, 'original');
    return { entry: e, dir: 'original', state: 'NEW' };
  }
  if (pkt.proto === PROTO_ICMP && !icmpStartsConnection(pkt.icmpType)) {
    // init_conntrack cannot invert the tuple of a type without a reply type; icmp_packet refuses
    // a reply type (an echo reply, …) as the first packet. Either way the packet has no entry.
    const why = icmpInvertible(pkt.icmpType) ? `an ICMP ${icmpName(pkt.icmpType, pkt.icmpCode)} cannot start a connection` : `ICMP ${icmpName(pkt.icmpType, pkt.icmpCode)} is not tracked`;
    ctTrace(host, 'invalid', null, rc, undefined, `(${why})`);
    return { entry: null, dir: 'original', state: 'INVALID' };
  }
  const timeout = pkt.proto === PROTO_UDP ? t.udp : pkt.proto === PROTO_ICMP ? ICMP_TIMEOUT_SEC : GENERIC_TIMEOUT_SEC;
  const e = host.conntrack.create(tuple, rc.nowMs, timeout);
  ctTrace(host, 'new', e, rc, 'original');
  return { entry: e, dir: 'original', state: 'NEW' };
}

function flagsText(f: number): string {
  const parts: string[] = [];
  if ((f & TCP_SYN) !== 0) parts.push('SYN');
  if ((f & 0x01) !== 0) parts.push('FIN');
  if ((f & TCP_RST) !== 0) parts.push('RST');
  if ((f & 0x08) !== 0) parts.push('PSH');
  if ((f & TCP_ACK) !== 0) parts.push('ACK');
  if ((f & 0x20) !== 0) parts.push('URG');
  if ((f & 0x40) !== 0) parts.push('ECE');
  if ((f & 0x80) !== 0) parts.push('CWR');
  return parts.length === 0 ? 'flagless' : parts.join(',');
}

/** `nf_conntrack_in`: classify the packet, create or update its entry. */
function conntrackIn(host: Host, pkt: Pkt, notrack: boolean, rc: RunCtx): SkbCt {
  if (notrack) {
    ctTrace(host, 'untracked', null, rc, undefined, '(NOTRACK in raw)');
    return { entry: null, dir: 'original', state: 'UNTRACKED' };
  }
  const table = host.conntrack;
  if (isIcmpError(pkt) && pkt.inner !== null) {
    const inner = pkt.inner;
    const hit = table.find(invertTuple({ src: inner.src, dst: inner.dst, proto: inner.proto, sport: inner.sport, dport: inner.dport }), rc.nowMs);
    if (hit === undefined) {
      ctTrace(host, 'invalid', null, rc, undefined, '(ICMP error about no known connection)');
      return { entry: null, dir: 'original', state: 'INVALID' };
    }
    ctTrace(host, 'related', hit.entry, rc, hit.dir);
    return { entry: hit.entry, dir: hit.dir, state: 'RELATED' };
  }
  const hit = table.find(pktTuple(pkt), rc.nowMs);
  if (pkt.proto === PROTO_TCP && !tcpValidFlags(pkt.tcpFlags)) {
    // tcp_error runs before the state machine, for a known connection too: nothing changes.
    ctTrace(host, 'invalid', hit?.entry ?? null, rc, hit?.dir, `(invalid TCP flag combination ${flagsText(pkt.tcpFlags)})`);
    return { entry: null, dir: 'original', state: 'INVALID' };
  }
  if (hit === undefined) return newEntry(host, pkt, rc);
  const e = hit.entry;
  const dir = hit.dir;
  const timeouts = host.config.sysctls.ctTimeouts;
  const state: SkbCt['state'] = dir === 'reply' || e.seenReply ? 'ESTABLISHED' : 'NEW';
  if (pkt.proto === PROTO_TCP && e.tcpState !== null) {
    const old = e.tcpState;
    const next = tcpTransition(old, dir, pkt.tcpFlags);
    if (next === 'IV') {
      ctTrace(host, 'invalid', e, rc, dir, `(${flagsText(pkt.tcpFlags)} is not valid in ${old})`);
      return { entry: null, dir: 'original', state: 'INVALID' };
    }
    if (next !== 'IG') {
      const isSyn = (pkt.tcpFlags & (TCP_SYN | TCP_ACK | TCP_RST)) === TCP_SYN;
      if (dir === 'original' && isSyn && (old === 'TIME_WAIT' || old === 'CLOSE')) {
        // A new SYN on a closed connection's tuple: the kernel kills the old entry and looks again.
        table.remove(e);
        ctTrace(host, 'reopened', e, rc, dir, '(SYN on a closed connection: old entry removed)');
        return newEntry(host, pkt, rc);
      }
      if (!e.seenReply && (pkt.tcpFlags & TCP_RST) !== 0) {
        // "If only reply is a RST, we can consider ourselves not to have an established connection."
        table.remove(e);
        ctTrace(host, 'destroyed', e, rc, dir, '(RST before any reply)');
        return { entry: e, dir, state };
      }
      e.tcpState = next;
      e.expiresMs = rc.nowMs + tcpTimeoutSec(next, timeouts) * 1000;
      if (!e.assured && (old === 'SYN_RECV' || old === 'ESTABLISHED') && next === 'ESTABLISHED') e.assured = true;
    }
  } else if (pkt.proto === PROTO_UDP) {
    let timeout = timeouts.udp;
    if (e.seenReply && rc.nowMs > e.createdMs + UDP_STREAM_AFTER_MS) {
      timeout = timeouts.udpStream;
      e.assured = true;
    }
    e.expiresMs = rc.nowMs + timeout * 1000;
  } else {
    e.expiresMs = rc.nowMs + (pkt.proto === PROTO_ICMP ? ICMP_TIMEOUT_SEC : GENERIC_TIMEOUT_SEC) * 1000;
  }
  if (dir === 'reply') e.seenReply = true;
  ctTrace(host, 'established', e, rc, dir);
  return { entry: e, dir, state };
}

/** `nf_conntrack_confirm`: an original-direction packet's new entry enters the table. */
function confirm(host: Host, pkt: Pkt, sk: SkbCt, rc: RunCtx): boolean {
  const e = sk.entry;
  if (e === null || e.confirmed || e.dying || sk.dir !== 'original') return true;
  if (!host.conntrack.confirm(e, rc.nowMs)) {
    drop(host, pkt, { stage: 'conntrack', check: 'insert-failed' }, 'conntrack insert failed: another entry holds this tuple', rc);
    return false;
  }
  ctTrace(host, 'confirmed', e, rc, 'original');
  return true;
}

// ---------------------------------------------------------------------------------------------
// NAT

function natEnv(host: Host, rc: RunCtx): NatEnv {
  return {
    table: host.conntrack,
    rng: rc.rng,
    nowMs: rc.nowMs,
    masqueradeAddr: (outIface, nexthop) => selectSourceAddr(host.fib, outIface, nexthop, 'global'),
  };
}

/**
 * The nat table at one hook: walks the chain only while the connection's NAT for this manip is
 * undecided and the packet is NEW or RELATED (`nf_nat_inet_fn`), then rewrites the packet from
 * the binding. Returns false when the packet dies here.
 */
function natHook(host: Host, hook: Hook, manip: Manip, pkt: Pkt, inIf: string | null, outIf: string | null, nexthop: Ipv4, sk: SkbCt, rc: RunCtx): boolean {
  const e = sk.entry;
  const nftNat = host.nftChainsAt(hook)?.nat ?? NO_REFS;
  const empty = nftNat.length === 0 && tableIsEmpty(host, 'nat', hook);
  if (e === null) {
    if (!rc.lean && !empty) rc.trace.push({ kind: 'nat-skip', host: host.name, hook, reason: 'no-conntrack' });
    return true;
  }
  const decided = manip === 'src' ? e.natDoneSrc : e.natDoneDst;
  // nf_nat_ipv4_fn: a RELATED ICMP packet (an error about the connection) is only translated,
  // never walked through the nat chains, even while the connection's NAT is undecided.
  const relatedIcmp = sk.state === 'RELATED' && pkt.proto === PROTO_ICMP;
  if (!decided && !relatedIcmp && (sk.state === 'NEW' || sk.state === 'RELATED')) {
    if (empty) {
      // An empty chain decides "no NAT" without a walk worth reporting.
      setupNat(e, manip, undefined, natEnv(host, rc), { iface: outIf, nexthop });
      applyNat(host, hook, manip, pkt, sk, rc);
      return true;
    }
    const before = rc.lean ? '' : manip === 'src' ? `${ip(pkt.src)}:${pkt.sport}` : `${ip(pkt.dst)}:${pkt.dport}`;
    const walk = natCoreWalk(host, hook, nftNat, pkt, inIf, outIf, sk, rc);
    if (walk === null) return false;
    const res = setupNat(e, manip, walk.req, natEnv(host, rc), { iface: outIf, nexthop });
    if (!res.ok) {
      drop(host, pkt, { stage: 'nat', check: 'masquerade-no-address' }, `MASQUERADE: no address to use on ${outIf ?? '?'}`, rc);
      return false;
    }
    if (!rc.lean) {
      const after = invertTuple(e.reply);
      const to = manip === 'src' ? `${ip(after.src)}:${after.sport}` : `${ip(after.dst)}:${after.dport}`;
      rc.trace.push({
        kind: 'nat',
        host: host.name,
        hook,
        manip,
        action: res.kind === 'none' ? 'null-binding' : 'bound',
        from: before,
        to,
        ...(res.kind !== 'none' ? { target: res.kind } : {}),
      });
    }
  } else if (!empty && decided) {
    if (!rc.lean) rc.trace.push({ kind: 'nat-skip', host: host.name, hook, reason: 'binding-exists' });
    if (manip === 'src' && hook === 'POSTROUTING' && e.masqIface !== null && sk.dir === 'original' && outIf !== e.masqIface) {
      // nf_nat_oif_changed: a masqueraded flow now leaves by another interface.
      host.conntrack.remove(e);
      ctTrace(host, 'destroyed', e, rc, sk.dir, `(masqueraded via ${e.masqIface}, now leaving by ${outIf ?? '?'})`);
      drop(host, pkt, { stage: 'conntrack', check: 'masquerade-oif-changed' }, 'MASQUERADE binding made for another output interface', rc);
      return false;
    }
  }
  applyNat(host, hook, manip, pkt, sk, rc);
  return true;
}

const NO_REFS: readonly NftBaseChainRef[] = [];

/**
 * `nf_nat_inet_fn`'s walk of a connection's first packet: the iptables nat table and the nft
 * `nat` chains at this hook, in priority order (an nft chain first at a tie: it registered later), until one asks for NAT;
 * one that drops ends the packet. Returns the request (undefined: no NAT), or null when the packet died.
 */
function natCoreWalk(host: Host, hook: Hook, nftNat: readonly NftBaseChainRef[], pkt: Pkt, inIf: string | null, outIf: string | null, sk: SkbCt, rc: RunCtx): { req: NatRequest | undefined } | null {
  const iptPrio = iptablesPriority('nat', nftHookName(hook));
  let iptPending = !tableIsEmpty(host, 'nat', hook);
  const runIptables = (): { req: NatRequest | undefined } | null => {
    iptPending = false;
    const out = runTable(host, 'nat', hook, pkt, inIf, outIf, ctView(sk), sk, rc);
    if (!verdictGoesOn(host, 'nat', hook, out, pkt, sk, rc)) return null;
    return { req: out.res.nat };
  };
  for (const ref of nftNat) {
    if (iptPending && iptPrio < ref.priority) {
      const w = runIptables();
      if (w === null || w.req !== undefined) return w;
    }
    const r = runNftChain(host, hook, ref, pkt, inIf, outIf, sk, rc);
    if (!nftGoesOn(host, hook, ref, r, pkt, sk, rc)) return null;
    if (r.nat !== undefined) {
      const req = nftNatRequest(r.nat, () => (hook === 'OUTPUT' ? (0x7f000001 as Ipv4) : ((inIf === null ? undefined : host.fib.ifaces.get(inIf)?.addrs[0]?.addr) ?? 0)));
      if (req === undefined) {
        drop(host, pkt, { stage: 'nat', check: 'masquerade-no-address' }, `redirect: no address on ${inIf ?? '?'}`, rc);
        return null;
      }
      return { req };
    }
  }
  return iptPending ? runIptables() : { req: undefined };
}

function applyNat(host: Host, hook: Hook, manip: Manip, pkt: Pkt, sk: SkbCt, rc: RunCtx): void {
  const e = sk.entry;
  if (e === null) return;
  const before = rc.lean ? '' : ends(pkt);
  let changed: boolean;
  if (sk.state === 'RELATED' && isIcmpError(pkt) && pkt.inner !== null) {
    changed = manipIcmpError(pkt, pkt.inner, e, sk.dir, manip);
  } else {
    changed = manipPacket(pkt, e, sk.dir, manip);
  }
  if (changed && !rc.lean) rc.trace.push({ kind: 'nat', host: host.name, hook, manip, action: 'rewrite', from: before, to: ends(pkt) });
}

// ---------------------------------------------------------------------------------------------
// routing

type InputDecision =
  | { readonly kind: 'local' }
  | { readonly kind: 'forward'; readonly outIf: string; readonly nexthop: Ipv4 }
  | { readonly kind: 'dropped' };

function isLoopbackAddr(a: number): boolean {
  return a >>> 24 === 127;
}

function routeTrace(host: Host, lookup: 'input' | 'output' | 'reroute', pkt: Pkt, r: FibResult, rc: RunCtx): void {
  if (rc.lean) return;
  const result =
    r.kind === 'route'
      ? `${r.route.type}${r.route.via !== undefined ? ` via ${ip(r.route.via)}` : ''}${r.route.dev !== undefined ? ` dev ${r.route.dev}` : ''} (table ${r.route.table}, rule ${r.rulePriority})`
      : r.error === 'none'
        ? 'no route'
        : `${r.error} route`;
  rc.trace.push({
    kind: 'route',
    host: host.name,
    lookup,
    dst: ip(pkt.dst),
    src: ip(pkt.src),
    result,
    iface: r.kind === 'route' ? (r.route.type === 'local' ? 'lo' : (r.route.dev ?? null)) : null,
    nexthop: r.kind === 'route' && r.route.type !== 'local' ? ip(r.nexthop) : null,
  });
}

/**
 * `fib_validate_source`: rp_filter and the local-source check, for a packet from `src` to `dst`
 * that arrived on `inIf`. `oif` is the forward route's device (the reverse lookup's iif).
 */
function validateSource(host: Host, pkt: Pkt, inIf: string, oif: string | null, rc: RunCtx): boolean {
  const fib = host.fib;
  const iface = fib.ifaces.get(inIf);
  if (iface === undefined) return false;
  const sysctls = host.config.sysctls;
  const rp = effectiveRpFilter(sysctls, iface.conf);
  const acceptLocal = effectiveAcceptLocal(sysctls, iface.conf);
  const push = (pass: boolean, detail: string): boolean => {
    if (!rc.lean) rc.trace.push({ kind: 'rp_filter', host: host.name, iface: inIf, mode: rp.mode, value: rp.value, pass, detail });
    if (!pass) {
      drop(host, pkt, { stage: 'routing', check: detail.startsWith('martian') ? 'martian-source' : 'rp_filter' }, `${detail} (rp_filter=${rp.value} on ${inIf})`, rc);
    }
    return pass;
  };
  if (rp.mode === 'off') {
    if (!acceptLocal && fib.localAddrs.has(pkt.src)) return push(false, `martian source: ${ip(pkt.src)} is this host's own address`);
    return true;
  }
  const r = fibLookup(fib, { dst: pkt.src, src: pkt.dst, iif: oif ?? 'lo', oif: null, mark: iface.conf.srcValidMark !== 0 || sysctls.all.srcValidMark !== 0 ? pkt.mark : 0 });
  if (r.kind !== 'route') return push(false, `no route back to ${ip(pkt.src)}`);
  if (r.route.type !== 'unicast' && !(r.route.type === 'local' && acceptLocal)) {
    return push(false, `martian source: the route back to ${ip(pkt.src)} is ${r.route.type}`);
  }
  const back = r.route.dev ?? '?';
  if (back === inIf) return push(true, `route back to ${ip(pkt.src)} leaves by ${inIf}`);
  if (rp.mode === 'strict') return push(false, `route back to ${ip(pkt.src)} leaves by ${back}, not ${inIf}`);
  return push(true, `route back to ${ip(pkt.src)} exists (via ${back})`);
}

/**
 * `brd_input`: a broadcast for this host (a subnet broadcast route in table local, or the limited
 * broadcast) is local input once its source passes validation (skipped for source 0.0.0.0);
 * directed-broadcast forwarding (`bc_forwarding`) is not modelled.
 */
function broadcastInput(host: Host, pkt: Pkt, inIf: string, rc: RunCtx): InputDecision {
  if (pkt.src !== 0 && !validateSource(host, pkt, inIf, null, rc)) return { kind: 'dropped' };
  return { kind: 'local' };
}

/**
 * Whether a packet to `dst` is routed as a broadcast here (`RTCF_BROADCAST`): the stack and
 * `icmp_send` never answer one, nor does REJECT.
 */
export function isBroadcastFor(host: Host, dst: Ipv4): boolean {
  return dst === 0xffffffff || (dst >>> 24 !== 0 && dst >>> 28 !== 14 && addrTypeOf(host.fib, dst) === 'BROADCAST');
}

/** `ip_route_input_slow`: martians, FIB lookup, forwarding and rp_filter. */
function inputRoute(host: Host, pkt: Pkt, inIf: string, sk: SkbCt, rc: RunCtx): InputDecision {
  const fib = host.fib;
  const iface = fib.ifaces.get(inIf);
  if (iface === undefined) return { kind: 'dropped' };
  const sysctls = host.config.sysctls;
  const martian = (check: 'martian-source' | 'martian-destination', why: string): InputDecision => {
    drop(host, pkt, { stage: 'routing', check }, why, rc);
    return { kind: 'dropped' };
  };
  const s = pkt.src;
  if (s >>> 28 === 14 || s === 0xffffffff) return martian('martian-source', `martian source ${ip(s)}`);
  // The limited broadcast (and 0.0.0.0 from 0.0.0.0) is local input without a route look-up.
  if (pkt.dst === 0xffffffff || (s === 0 && pkt.dst === 0)) return broadcastInput(host, pkt, inIf, rc);
  if (s >>> 24 === 0) return martian('martian-source', `martian source ${ip(s)}`);
  if (pkt.dst >>> 24 === 0) return martian('martian-destination', `martian destination ${ip(pkt.dst)}`);
  const localnet = effectiveRouteLocalnet(sysctls, iface.conf);
  if (isLoopbackAddr(pkt.dst) && !localnet) return martian('martian-destination', `martian destination ${ip(pkt.dst)} on ${inIf} (route_localnet=0)`);
  if (!isLoopbackAddr(pkt.dst) && isLoopbackAddr(s) && !localnet) return martian('martian-source', `martian source ${ip(s)} on ${inIf} (route_localnet=0)`);

  const r = fibLookup(fib, { dst: pkt.dst, src: pkt.src, iif: inIf, oif: null, mark: pkt.mark });
  routeTrace(host, 'input', pkt, r, rc);
  const forwarding = iface.conf.forwarding !== 0;
  if (r.kind === 'error') {
    if (!forwarding) {
      drop(host, pkt, { stage: 'routing', check: 'no-route' }, `no route to ${ip(pkt.dst)} and forwarding is off on ${inIf}: dropped silently`, rc);
      return { kind: 'dropped' };
    }
    switch (r.error) {
      case 'none':
        drop(host, pkt, { stage: 'routing', check: 'no-route' }, `no route to ${ip(pkt.dst)}`, rc);
        icmpError(host, pkt, 0, sk, rc);
        break;
      case 'unreachable':
        drop(host, pkt, { stage: 'routing', check: 'unreachable-route' }, `unreachable route to ${ip(pkt.dst)}`, rc);
        icmpError(host, pkt, 1, sk, rc);
        break;
      case 'prohibit':
        drop(host, pkt, { stage: 'routing', check: 'prohibit-route' }, `prohibit route to ${ip(pkt.dst)}`, rc);
        icmpError(host, pkt, 13, sk, rc);
        break;
      case 'blackhole':
        drop(host, pkt, { stage: 'routing', check: 'blackhole' }, `blackhole route to ${ip(pkt.dst)}`, rc);
        break;
    }
    return { kind: 'dropped' };
  }
  if (r.route.type === 'local') return validateSource(host, pkt, inIf, null, rc) ? { kind: 'local' } : { kind: 'dropped' };
  if (r.route.type === 'broadcast') return broadcastInput(host, pkt, inIf, rc);
  if (!forwarding) {
    drop(host, pkt, { stage: 'routing', check: 'ip_forward' }, `not for this host and forwarding is off on ${inIf} (ip_forward=0)`, rc);
    return { kind: 'dropped' };
  }
  const outIf = r.route.dev ?? inIf;
  if (!validateSource(host, pkt, inIf, outIf, rc)) return { kind: 'dropped' };
  return { kind: 'forward', outIf, nexthop: r.nexthop };
}

// ---------------------------------------------------------------------------------------------
// the paths

/**
 * A packet arrives on `inIf` (off a wire, or unwrapped from an overlay device): PREROUTING, the
 * routing decision, then local delivery or forwarding.
 */
export function hostReceive(host: Host, pkt: Pkt, inIf: string, via: 'wire' | 'overlay', rc: RunCtx): void {
  if (!rc.lean) rc.trace.push({ kind: 'enter', host: host.name, via, iface: inIf, packet: viewPkt(pkt) });
  const iface = host.fib.ifaces.get(inIf);
  if (iface === undefined || !iface.up) {
    drop(host, pkt, { stage: 'neighbour', check: 'link-down' }, `${inIf} is down`, rc);
    return;
  }
  const pre: NftPre = { notrack: false };
  if (!runNft(host, 'PREROUTING', -NFT_ALL, -300, pkt, inIf, null, NO_CT, rc, pre)) return;
  const raw = runTable(host, 'raw', 'PREROUTING', pkt, inIf, null, NO_CT_VIEW, NO_CT, rc);
  if (!verdictGoesOn(host, 'raw', 'PREROUTING', raw, pkt, NO_CT, rc)) return;
  if (!runNft(host, 'PREROUTING', -300, BEFORE_CT, pkt, inIf, null, NO_CT, rc, pre)) return;
  const sk = host.tracking ? conntrackIn(host, pkt, raw.res.notrack || pre.notrack, rc) : NO_CT;
  if (!runNft(host, 'PREROUTING', BEFORE_CT, -150, pkt, inIf, null, sk, rc)) return;
  if (!runPlain(host, 'mangle', 'PREROUTING', pkt, inIf, null, sk, rc)) return;
  if (!runNft(host, 'PREROUTING', -150, -100, pkt, inIf, null, sk, rc)) return;
  if (!natHook(host, 'PREROUTING', 'dst', pkt, inIf, null, 0 as Ipv4, sk, rc)) return;
  if (!runNft(host, 'PREROUTING', -100, NFT_ALL, pkt, inIf, null, sk, rc)) return;
  const d = inputRoute(host, pkt, inIf, sk, rc);
  if (d.kind === 'local') localIn(host, pkt, inIf, sk, rc);
  else if (d.kind === 'forward') forward(host, pkt, inIf, d.outIf, d.nexthop, sk, rc);
}

const NO_CT_VIEW: ConntrackView = { state: 'INVALID', dnat: false, snat: false, ctmark: 0 };

function localIn(host: Host, pkt: Pkt, inIf: string, sk: SkbCt, rc: RunCtx): void {
  if (!runNft(host, 'INPUT', -NFT_ALL, -150, pkt, inIf, null, sk, rc)) return;
  if (!runPlain(host, 'mangle', 'INPUT', pkt, inIf, null, sk, rc)) return;
  if (!runNft(host, 'INPUT', -150, 0, pkt, inIf, null, sk, rc)) return;
  if (!runPlain(host, 'filter', 'INPUT', pkt, inIf, null, sk, rc)) return;
  if (!runNft(host, 'INPUT', 0, 100, pkt, inIf, null, sk, rc)) return;
  if (!natHook(host, 'INPUT', 'src', pkt, inIf, null, 0 as Ipv4, sk, rc)) return;
  if (!runNft(host, 'INPUT', 100, NFT_ALL, pkt, inIf, null, sk, rc)) return;
  if (!confirm(host, pkt, sk, rc)) return;
  if (!rc.lean) rc.trace.push({ kind: 'fate', host: host.name, fate: 'delivered', iface: inIf, packet: viewPkt(pkt) });
  // An overlay device's UDP socket takes encapsulated packets and unwraps them.
  if (pkt.proto === PROTO_UDP && pkt.encap !== null) {
    for (const i of host.fib.ifaces.values()) {
      if (i.overlay !== undefined && i.up && i.overlay.port === pkt.dport) {
        const inner = pkt.encap;
        const copy = copyPkt(inner, inner.id);
        nested(rc, () => hostReceive(host, copy, i.name, 'overlay', rc));
        return;
      }
    }
  }
  rc.deliver(host, pkt, inIf, sk);
}

function forward(host: Host, pkt: Pkt, inIf: string, outIf: string, nexthop: Ipv4, sk: SkbCt, rc: RunCtx): void {
  if (pkt.ttl <= 1) {
    drop(host, pkt, { stage: 'routing', check: 'no-route' }, 'TTL exceeded', rc);
    icmpErrorTyped(host, pkt, 11, 0, sk, rc);
    return;
  }
  pkt.ttl--;
  if (!runNft(host, 'FORWARD', -NFT_ALL, -150, pkt, inIf, outIf, sk, rc)) return;
  if (!runPlain(host, 'mangle', 'FORWARD', pkt, inIf, outIf, sk, rc)) return;
  if (!runNft(host, 'FORWARD', -150, 0, pkt, inIf, outIf, sk, rc)) return;
  if (!runPlain(host, 'filter', 'FORWARD', pkt, inIf, outIf, sk, rc)) return;
  if (!runNft(host, 'FORWARD', 0, NFT_ALL, pkt, inIf, outIf, sk, rc)) return;
  postrouting(host, pkt, inIf, outIf, nexthop, false, sk, rc);
}

function postrouting(host: Host, pkt: Pkt, inIf: string | null, outIf: string, nexthop: Ipv4, local: boolean, sk: SkbCt, rc: RunCtx): void {
  const devOut = local ? 'lo' : outIf;
  if (!runNft(host, 'POSTROUTING', -NFT_ALL, -150, pkt, inIf, devOut, sk, rc)) return;
  if (!runPlain(host, 'mangle', 'POSTROUTING', pkt, inIf, devOut, sk, rc)) return;
  if (!runNft(host, 'POSTROUTING', -150, 100, pkt, inIf, devOut, sk, rc)) return;
  if (!natHook(host, 'POSTROUTING', 'src', pkt, inIf, devOut, nexthop, sk, rc)) return;
  if (!runNft(host, 'POSTROUTING', 100, NFT_ALL, pkt, inIf, devOut, sk, rc)) return;
  if (!confirm(host, pkt, sk, rc)) return;
  if (local) {
    nested(rc, () => loopbackIn(host, pkt, sk, rc));
    return;
  }
  xmit(host, pkt, outIf, nexthop, sk, rc);
}

function xmit(host: Host, pkt: Pkt, outIf: string, nexthop: Ipv4, sk: SkbCt, rc: RunCtx): void {
  const iface = host.fib.ifaces.get(outIf);
  if (iface === undefined || !iface.up) {
    drop(host, pkt, { stage: 'neighbour', check: 'link-down' }, `${outIf} is down`, rc);
    return;
  }
  if (!rc.lean) rc.trace.push({ kind: 'fate', host: host.name, fate: 'transmitted', iface: outIf, packet: viewPkt(pkt) });
  if (iface.overlay !== undefined) {
    const ov = iface.overlay;
    const peer = ov.fdb.find((f) => f.nexthop === nexthop);
    if (peer === undefined) {
      drop(host, pkt, { stage: 'overlay', check: 'no-fdb-entry' }, `${outIf}: no underlay address known for ${ip(nexthop)}`, rc);
      return;
    }
    const outer: Pkt = {
      id: rc.nextPktId(),
      src: ov.local ?? (0 as Ipv4),
      dst: peer.underlay,
      proto: PROTO_UDP,
      sport: overlaySourcePort(pkt, host.config.sysctls.localPortRange),
      dport: ov.port,
      tcpFlags: 0,
      icmpType: 0,
      icmpCode: 0,
      icmpId: 0,
      mark: 0,
      lengthBytes: pkt.lengthBytes + 50,
      ttl: 64,
      inner: null,
      encap: pkt,
      origin: { host: host.name, why: `${outIf} encapsulation` },
    };
    if (!rc.lean) rc.trace.push({ kind: 'encap', host: host.name, iface: outIf, underlay: ip(peer.underlay), packet: viewPkt(pkt) });
    nested(rc, () => hostSend(host, outer, rc, {}));
    return;
  }
  if (!rc.transmit(host, outIf, nexthop, pkt)) {
    drop(host, pkt, { stage: 'neighbour', check: 'no-neighbour' }, `no neighbour answers for ${ip(nexthop)} on ${outIf}`, rc);
    icmpErrorTyped(host, pkt, ICMP_DEST_UNREACH, 1, sk, rc);
  }
}

/** vxlan picks the outer source port by hashing the inner flow into the local port range. */
function overlaySourcePort(p: Pkt, range: readonly [number, number]): number {
  let h = (p.src ^ Math.imul(p.dst, 0x9e3779b1) ^ (p.sport << 16) ^ p.dport ^ (p.proto << 8)) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> 0;
  h = (h ^ (h >>> 12)) >>> 0;
  return range[0] + (h % (range[1] - range[0] + 1));
}

/** A locally generated packet looped back through `lo`: PREROUTING, then INPUT. */
function loopbackIn(host: Host, pkt: Pkt, sk: SkbCt, rc: RunCtx): void {
  if (!rc.lean) rc.trace.push({ kind: 'enter', host: host.name, via: 'loopback', iface: 'lo', packet: viewPkt(pkt) });
  if (!runNft(host, 'PREROUTING', -NFT_ALL, -300, pkt, 'lo', null, sk, rc)) return;
  if (!runPlain(host, 'raw', 'PREROUTING', pkt, 'lo', null, sk, rc)) return;
  if (!runNft(host, 'PREROUTING', -300, -150, pkt, 'lo', null, sk, rc)) return;
  if (!runPlain(host, 'mangle', 'PREROUTING', pkt, 'lo', null, sk, rc)) return;
  if (!runNft(host, 'PREROUTING', -150, -100, pkt, 'lo', null, sk, rc)) return;
  if (!natHook(host, 'PREROUTING', 'dst', pkt, 'lo', null, 0 as Ipv4, sk, rc)) return;
  if (!runNft(host, 'PREROUTING', -100, NFT_ALL, pkt, 'lo', null, sk, rc)) return;
  localIn(host, pkt, 'lo', sk, rc);
}

/** Options of {@link hostSend}. */
export interface SendOptions {
  /** The conntrack entry of the packet this one answers (REJECT, ICMP errors): `nf_ct_attach`. */
  readonly attach?: SkbCt;
  /** `SO_BINDTODEVICE`. */
  readonly oif?: string;
}

function outputLookup(host: Host, pkt: Pkt, oif: string | null): FibResult {
  return fibLookup(host.fib, { dst: pkt.dst, src: pkt.src, iif: 'lo', oif, mark: pkt.mark });
}

const ROUTE_ERRNO: { readonly [K in 'none' | 'unreachable' | 'prohibit' | 'blackhole']: SendError['errno'] } = {
  none: 'ENETUNREACH',
  unreachable: 'EHOSTUNREACH',
  prohibit: 'EACCES',
  blackhole: 'EINVAL',
};

/**
 * A packet sent by this host: output routing (choosing the source when it is 0), OUTPUT,
 * re-routing after a mark or destination change, POSTROUTING, then the wire or `lo`.
 */
export function hostSend(host: Host, pkt: Pkt, rc: RunCtx, opts: SendOptions): SendOutcome {
  const first = outputLookup(host, pkt, opts.oif ?? null);
  if (first.kind === 'error') {
    routeTrace(host, 'output', pkt, first, rc);
    const errno = ROUTE_ERRNO[first.error];
    const check = first.error === 'none' ? 'no-route' : first.error === 'blackhole' ? 'blackhole' : first.error === 'unreachable' ? 'unreachable-route' : 'prohibit-route';
    drop(host, pkt, { stage: 'routing', check }, `output route: ${errno}`, rc);
    return { ok: false, errno, reason: first.error === 'none' ? 'Network is unreachable' : `${first.error} route` };
  }
  let r: FibResult & { kind: 'route' } = first;
  if (pkt.src === 0) {
    const s = routeSource(host.fib, r);
    pkt.src = (s === 0 ? pkt.dst : s);
  }
  if (!rc.lean) rc.trace.push({ kind: 'enter', host: host.name, via: 'local', iface: null, packet: viewPkt(pkt) });
  routeTrace(host, 'output', pkt, r, rc);
  const attach = opts.attach;
  const rawView = attach !== undefined ? ctView(attach) : NO_CT_VIEW;
  const outIf0 = r.route.type === 'local' ? 'lo' : (r.route.dev ?? 'lo');
  const pre: NftPre = { notrack: false };
  // An nft `type route` chain that changes the mark or the destination re-routes, as mangle does.
  const rerouteNft = (): boolean => {
    const rr = reroute(host, pkt, sk, rc);
    if (rr === null) return false;
    r = rr;
    return true;
  };
  let sk: SkbCt = attach ?? NO_CT;
  if (!runNft(host, 'OUTPUT', -NFT_ALL, -300, pkt, null, outIf0, sk, rc, pre, rerouteNft)) return { ok: true };
  const raw = runTable(host, 'raw', 'OUTPUT', pkt, null, outIf0, rawView, attach ?? NO_CT, rc);
  if (!verdictGoesOn(host, 'raw', 'OUTPUT', raw, pkt, attach ?? NO_CT, rc)) return { ok: true };
  if (!runNft(host, 'OUTPUT', -300, BEFORE_CT, pkt, null, outIf0, sk, rc, pre, rerouteNft)) return { ok: true };
  if (attach !== undefined) {
    sk = attach;
    if (attach.entry !== null) ctTrace(host, 'related', attach.entry, rc, attach.dir, '(attached to the packet it answers)');
  } else {
    sk = host.tracking ? conntrackIn(host, pkt, raw.res.notrack || pre.notrack, rc) : NO_CT;
  }
  if (!runNft(host, 'OUTPUT', BEFORE_CT, -150, pkt, null, outIf0, sk, rc, undefined, rerouteNft)) return { ok: true };
  // The whole OUTPUT hook sees the interface of the first route (`nf_hook_state.out` is set when
  // the hook starts): a re-route after mangle or nat changes only what POSTROUTING sees.
  const markBefore = pkt.mark;
  if (!runPlain(host, 'mangle', 'OUTPUT', pkt, null, outIf0, sk, rc)) return { ok: true };
  if (pkt.mark !== markBefore) {
    const rr = reroute(host, pkt, sk, rc);
    if (rr === null) return { ok: true };
    r = rr;
  }
  if (!runNft(host, 'OUTPUT', -150, -100, pkt, null, outIf0, sk, rc, undefined, rerouteNft)) return { ok: true };
  const dstBeforeNat = pkt.dst;
  if (!natHook(host, 'OUTPUT', 'dst', pkt, null, outIf0, 0 as Ipv4, sk, rc)) return { ok: true };
  if (pkt.dst !== dstBeforeNat) {
    const rr = reroute(host, pkt, sk, rc);
    if (rr === null) return { ok: true };
    r = rr;
  }
  if (!runNft(host, 'OUTPUT', -100, 0, pkt, null, outIf0, sk, rc, undefined, rerouteNft)) return { ok: true };
  if (!runPlain(host, 'filter', 'OUTPUT', pkt, null, outIf0, sk, rc)) return { ok: true };
  if (!runNft(host, 'OUTPUT', 0, NFT_ALL, pkt, null, outIf0, sk, rc, undefined, rerouteNft)) return { ok: true };
  const local = r.route.type === 'local';
  const outIf = local ? 'lo' : (r.route.dev ?? 'lo');
  postrouting(host, pkt, null, outIf, r.nexthop, local, sk, rc);
  return { ok: true };
}

/** `ip_route_me_harder` after OUTPUT changed the mark or the destination. */
function reroute(host: Host, pkt: Pkt, _sk: SkbCt, rc: RunCtx): (FibResult & { kind: 'route' }) | null {
  const r = outputLookup(host, pkt, null);
  routeTrace(host, 'reroute', pkt, r, rc);
  if (r.kind !== 'route') {
    drop(host, pkt, { stage: 'routing', check: 'reroute' }, `re-route after OUTPUT: no route to ${ip(pkt.dst)}`, rc);
    return null;
  }
  if (isLoopbackAddr(pkt.src) && r.route.type !== 'local') {
    const dev = r.route.dev === undefined ? undefined : host.fib.ifaces.get(r.route.dev);
    if (dev === undefined || !effectiveRouteLocalnet(host.config.sysctls, dev.conf)) {
      drop(host, pkt, { stage: 'routing', check: 'reroute' }, `re-route: source ${ip(pkt.src)} may not leave by ${r.route.dev ?? '?'} (route_localnet=0)`, rc);
      return null;
    }
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// replies the host itself generates

function opposite(d: CtDir): CtDir {
  return d === 'original' ? 'reply' : 'original';
}

function attachFor(sk: SkbCt): SkbCt | undefined {
  return sk.entry === null ? undefined : { entry: sk.entry, dir: opposite(sk.dir), state: 'RELATED' };
}

/** The REJECT target's reply (`nf_send_reset` / `nf_send_unreach`). */
function rejectReply(host: Host, pkt: Pkt, how: RejectWith, sk: SkbCt, rc: RunCtx, unrouted = false): void {
  if (how === 'tcp-reset') {
    if (pkt.proto !== PROTO_TCP || (pkt.tcpFlags & TCP_RST) !== 0 || (!unrouted && isBroadcastFor(host, pkt.dst))) return;
    const rst = tcpReset(pkt, rc.nextPktId(), { host: host.name, why: rejectWhy(sk, rc) });
    rc.trace.push({ kind: 'stack', host: host.name, event: 'reject-rst', detail: `REJECT answers with ${flagsText(rst.tcpFlags)} ${ends(rst)}` });
    const a = attachFor(sk);
    // nf_send_reset marks the rejected packet's connection closing (nf_ct_set_closing): a
    // confirmed entry, e.g. of a local SYN looped to the host's own address and rejected in
    // INPUT, stays in CLOSE for the close timeout.
    const e = sk.entry;
    if (e !== null && e.tcpState !== null && !e.dying) {
      e.tcpState = 'CLOSE';
      e.expiresMs = rc.nowMs + tcpTimeoutSec('CLOSE', host.config.sysctls.ctTimeouts) * 1000;
      ctTrace(host, 'closing', e, rc, sk.dir, '(REJECT --reject-with tcp-reset closes the connection)');
    }
    nested(rc, () => hostSend(host, rst, rc, a !== undefined ? { attach: a } : {}));
    return;
  }
  icmpErrorTyped(host, pkt, ICMP_DEST_UNREACH, REJECT_ICMP_CODE[how], sk, rc, undefined, unrouted);
}

/** The RST answering `p`: RST with the peer's ACK number, or RST+ACK when `p` had no ACK. */
export function tcpReset(p: Pkt, id: number, origin: PktOrigin): Pkt {
  return {
    id,
    src: p.dst,
    dst: p.src,
    proto: PROTO_TCP,
    sport: p.dport,
    dport: p.sport,
    tcpFlags: (p.tcpFlags & TCP_ACK) !== 0 ? TCP_RST : TCP_RST | TCP_ACK,
    icmpType: 0,
    icmpCode: 0,
    icmpId: 0,
    mark: 0,
    lengthBytes: 40,
    ttl: 64,
    inner: null,
    encap: null,
    origin,
  };
}

/** The drop step REJECT just recorded, as words for the reply's origin. */
function rejectWhy(_sk: SkbCt, rc: RunCtx): string {
  for (let i = rc.trace.length - 1; i >= 0; i--) {
    const s = rc.trace[i];
    if (s?.kind === 'drop') return s.reason;
  }
  return 'REJECT';
}

function icmpError(host: Host, pkt: Pkt, code: number, sk: SkbCt, rc: RunCtx): void {
  icmpErrorTyped(host, pkt, ICMP_DEST_UNREACH, code, sk, rc);
}

/**
 * `icmp_send`: an ICMP error about `pkt` back to its source, attached to its conntrack entry.
 * Never about another ICMP error or a broadcast. The source is the address the packet was sent to
 * when it was for this host, else the one routing picks.
 */
export function icmpErrorTyped(host: Host, pkt: Pkt, type: number, code: number, sk: SkbCt, rc: RunCtx, why?: string, unrouted = false): void {
  if (isIcmpError(pkt) || pkt.dst >>> 28 === 14 || (!unrouted && isBroadcastFor(host, pkt.dst))) return;
  // Unrouted (an nft reject at PREROUTING): the kernel gives the error the route back to the
  // sender, not a local one, so routing picks the source.
  const forUs = !unrouted && host.fib.localAddrs.has(pkt.dst);
  const err: Pkt = {
    id: rc.nextPktId(),
    src: forUs ? pkt.dst : (0 as Ipv4),
    dst: pkt.src,
    proto: PROTO_ICMP,
    sport: 0,
    dport: 0,
    tcpFlags: 0,
    icmpType: type,
    icmpCode: code,
    icmpId: 0,
    mark: 0,
    lengthBytes: 56,
    ttl: 64,
    inner: innerOf(pkt),
    encap: null,
    origin: { host: host.name, why: why ?? rejectWhy(sk, rc) },
  };
  rc.trace.push({ kind: 'stack', host: host.name, event: 'icmp-error', detail: `sends ${type === ICMP_DEST_UNREACH ? `destination unreachable (code ${code})` : `ICMP type ${type}`} about ${ends(pkt)}` });
  const a = attachFor(sk);
  nested(rc, () => hostSend(host, err, rc, a !== undefined ? { attach: a } : {}));
}

/** Bounds host-internal recursion (loopback, overlay, replies) so a misconfiguration cannot loop forever. */
function nested(rc: RunCtx, f: () => unknown): void {
  if (rc.depth >= MAX_NESTING) throw new Error('datapath: nesting limit reached (a packet loops inside one host)');
  rc.depth++;
  try {
    f();
  } finally {
    rc.depth--;
  }
}
