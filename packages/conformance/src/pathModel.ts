/**
 * netsim's side of the netfilter-level comparison: the first packet of a flow walked through the
 * lab node's hooks with `@netsim/netfilter`'s evaluator (`evaluateHook`), and the outcome that
 * walk implies (counters, egress frames, local delivery, conntrack entry).
 *
 * This is not a kernel model. It is the minimum glue to put the evaluator in the kernel's place
 * for the cases the netfilter-level generator makes (see `generate.ts`): a fixed topology, an
 * empty conntrack table, rp_filter off, NAT to single addresses, no local TCP delivery. Each fact
 * it uses about the kernel outside netfilter (which TCP flags conntrack accepts as NEW, what a
 * REJECT sends back and which hooks that answer crosses) is written here once, with the reason,
 * and proven by the lab tests. The whole-host comparison (`@netsim/kernel`) replaces it.
 */
import {
  compile,
  createEvalState,
  evaluateHook,
  rewriteToRangeStart,
  REJECT_ICMP_CODE,
  seededRandom31,
  type AddrType,
  type CompiledRuleset,
  type ConntrackView,
  type EvalContext,
  type EvalResult,
  type Hook,
  type HookEvalOptions,
  type Ipv4,
  type Packet,
  type RejectWith,
  type Ruleset,
} from '@netsim/netfilter';
import type { Injection } from './lab.ts';
import { counterKey, describeEgress, sortKeys, type Outcome } from './outcome.ts';
import { PROTO_ICMP, PROTO_TCP, PROTO_UDP, TCP, type PacketSpec, type ParsedIpv4 } from './packet.ts';
import { broadcastOf, ifaceByName, ifaceOfPeer, lookupRoute, type Topology } from './topology.ts';

/** One hook the packet crossed, for the report. */
export interface PathStep {
  readonly hook: Hook;
  readonly packet: Packet;
  readonly result: EvalResult;
}

export interface Prediction extends Outcome {
  readonly steps: readonly PathStep[];
  /** The evaluator could not decide (an unknown match or target): the outcome is not predicted. */
  readonly unknown?: string;
}

/**
 * Conntrack's verdict on a flow's first packet. TCP: the kernel drops flag combinations outside
 * its valid set (PSH, ECE and CWR ignored) as INVALID, and of the valid ones starts a connection
 * only from a SYN (state SYN_SENT) or, with `nf_conntrack_tcp_loose=1` (the default), a bare ACK
 * picked up mid-stream (ESTABLISHED); a first SYN-ACK, FIN or RST is INVALID. UDP always starts
 * one; ICMP only from a query (echo request here).
 */
export function firstPacketConntrack(p: PacketSpec): { readonly state: 'NEW' | 'INVALID'; readonly tcpState?: string } {
  if (p.proto === PROTO_TCP) {
    const f = p.tcpFlags & ~(TCP.PSH | TCP.ECE | TCP.CWR) & 0x3f;
    if (f === TCP.SYN || f === (TCP.SYN | TCP.URG)) return { state: 'NEW', tcpState: 'SYN_SENT' };
    if (f === TCP.ACK || f === (TCP.ACK | TCP.URG)) return { state: 'NEW', tcpState: 'ESTABLISHED' };
    return { state: 'INVALID' };
  }
  if (p.proto === PROTO_ICMP) return p.icmpType === 8 ? { state: 'NEW' } : { state: 'INVALID' };
  return { state: 'NEW' };
}

interface LocalRoute {
  readonly addr: number;
  readonly mask: number;
  readonly type: AddrType;
  readonly dev: string;
}

/** The node's local routing table, as `addrtype` consults it. */
function localTable(t: Topology): LocalRoute[] {
  const routes: LocalRoute[] = [{ addr: 0x7f000000, mask: 0xff000000, type: 'LOCAL', dev: 'lo' }];
  for (const i of t.ifaces) {
    routes.push({ addr: i.addr, mask: 0xffffffff, type: 'LOCAL', dev: i.name });
    routes.push({ addr: broadcastOf(i), mask: 0xffffffff, type: 'BROADCAST', dev: i.name });
  }
  return routes;
}

/**
 * `addrtype` as the kernel answers it (inet_dev_addr_type): 0.0.0.0/8 and 255.255.255.255 are
 * BROADCAST and 224.0.0.0/4 MULTICAST whatever the interface; otherwise the local table's type,
 * which counts only when no interface is given or the route is on that interface; else UNICAST.
 */
export function addrTypeOf(t: Topology): (addr: Ipv4, iface: string | null) => AddrType {
  const table = localTable(t);
  return (addr, iface) => {
    const a = addr >>> 0;
    if (a >>> 24 === 0 || a === 0xffffffff) return 'BROADCAST';
    if (a >>> 28 === 0xe) return 'MULTICAST';
    for (const r of table) {
      if (((a & r.mask) >>> 0) === r.addr) return iface === null || iface === r.dev ? r.type : 'UNICAST';
    }
    return 'UNICAST';
  };
}

/** Addresses the node delivers locally: its own, loopback, and its subnets' broadcasts. */
export function isLocalDestination(t: Topology, addr: Ipv4): boolean {
  const type = addrTypeOf(t)(addr, null);
  return type === 'LOCAL' || type === 'BROADCAST';
}

function asParsed(p: Packet, icmpId: number): ParsedIpv4 {
  return {
    src: p.src,
    dst: p.dst,
    proto: p.proto,
    ttl: 64,
    totalLength: p.lengthBytes,
    sport: p.proto === PROTO_ICMP ? icmpId : p.sport,
    dport: p.proto === PROTO_ICMP ? icmpId : p.dport,
    tcpFlags: p.tcpFlags,
    icmpType: p.icmpType,
    icmpCode: p.icmpCode,
  };
}

/**
 * Whether a NAT mapping changed the packet. The kernel marks a connection DNAT (or SNAT), which
 * `--ctstate DNAT` tests, only when the mapping changes its tuple (nf_nat_setup_info): a DNAT to
 * the packet's own destination and port is a null binding.
 */
export function changesTuple(before: Packet, after: Packet): boolean {
  return before.src !== after.src || before.dst !== after.dst || before.sport !== after.sport || before.dport !== after.dport;
}

/**
 * The injection's first packet as netfilter sees it where it enters the node: the fields its
 * protocol has (ports for TCP/UDP, flags for TCP, type and code for ICMP), the ingress interface
 * of the peer it comes from, the mark a local sender sets.
 */
export function injectedPacket(inj: Injection, topology: Topology): Packet {
  const p = inj.packet;
  return {
    src: p.src,
    dst: p.dst,
    proto: p.proto,
    sport: p.proto === PROTO_ICMP ? 0 : p.sport,
    dport: p.proto === PROTO_ICMP ? 0 : p.dport,
    tcpFlags: p.proto === PROTO_TCP ? p.tcpFlags : 0,
    icmpType: p.proto === PROTO_ICMP ? p.icmpType : 0,
    icmpCode: p.proto === PROTO_ICMP ? p.icmpCode : 0,
    inIface: inj.kind === 'ingress' ? ifaceOfPeer(topology, inj.peer).name : null,
    outIface: null,
    mark: inj.kind === 'local' ? inj.mark >>> 0 : 0,
    lengthBytes: 20 + (p.proto === PROTO_TCP ? 20 : 12),
    fragment: false,
  };
}

/**
 * netsim's prediction for the first packet of a flow injected into the lab node with `ruleset`
 * loaded and conntrack empty.
 */
export function predict(ruleset: Ruleset, injection: Injection, topology: Topology): Prediction {
  return new Walker(compile(ruleset), topology).run(injection);
}

class Walker {
  private readonly counters: { [key: string]: number } = {};
  private readonly steps: PathStep[] = [];
  private readonly egress: string[] = [];
  private readonly addrType: (addr: Ipv4, iface: string | null) => AddrType;
  private readonly state = createEvalState();

  constructor(
    private readonly rs: CompiledRuleset,
    private readonly topology: Topology,
  ) {
    this.addrType = addrTypeOf(topology);
  }

  private hook(hook: Hook, packet: Packet, view: ConntrackView, opts: HookEvalOptions = {}): EvalResult {
    const ctx: EvalContext = { addrType: this.addrType, conntrack: view, random31: seededRandom31(1), state: this.state };
    const result = evaluateHook(this.rs, hook, packet, ctx, opts);
    for (const e of result.trace) {
      if (e.kind === 'rule' && e.outcome === 'match') this.bump(counterKey(e.table, e.chain, e.index));
      else if (e.kind === 'policy') this.bump(counterKey(e.table, e.chain, 'policy'));
    }
    this.steps.push({ hook, packet, result });
    return result;
  }

  private bump(key: string): void {
    this.counters[key] = (this.counters[key] ?? 0) + 1;
  }

  private done(o: { delivered?: boolean; conntrack?: string[]; unknown?: string }): Prediction {
    const base: Prediction = {
      counters: sortKeys(this.counters),
      egress: this.egress,
      delivered: o.delivered ?? false,
      conntrack: o.conntrack ?? [],
      steps: this.steps,
    };
    return o.unknown === undefined ? base : { ...base, unknown: o.unknown };
  }

  run(inj: Injection): Prediction {
    const spec = inj.packet;
    const first = firstPacketConntrack(spec);
    const base = injectedPacket(inj, this.topology);
    let view: ConntrackView = { state: first.state, dnat: false, snat: false, ctmark: 0 };
    let pkt: Packet;
    let inIface: string | null;
    let outIface: string;

    if (inj.kind === 'ingress') {
      inIface = ifaceOfPeer(this.topology, inj.peer).name;
      pkt = { ...base, inIface };
      const pre = this.hook('PREROUTING', pkt, view);
      if (pre.notrack) view = { ...view, state: 'UNTRACKED' };
      view = { ...view, ctmark: pre.ctmark };
      if (pre.verdict.kind === 'unknown') return this.done({ unknown: pre.verdict.reason });
      if (pre.verdict.kind !== 'ACCEPT') return this.done({});
      pkt = { ...pkt, mark: pre.mark };
      if (pre.nat?.kind === 'DNAT') {
        const before = pkt;
        pkt = rewriteToRangeStart(pkt, pre.nat);
        view = { ...view, dnat: view.dnat || changesTuple(before, pkt) };
      }
      if (isLocalDestination(this.topology, pkt.dst)) {
        const input = this.hook('INPUT', { ...pkt, outIface: null }, view);
        if (input.verdict.kind === 'unknown') return this.done({ unknown: input.verdict.reason });
        view = { ...view, ctmark: input.ctmark };
        if (input.verdict.kind === 'REJECT') return this.reject(pkt, input.verdict.with, view, spec.icmpId, true);
        if (input.verdict.kind !== 'ACCEPT') return this.done({});
        let delivered = pkt;
        if (input.nat !== undefined && input.nat.kind === 'SNAT' && input.nat.to?.minIp !== undefined) delivered = { ...pkt, src: input.nat.to.minIp };
        return this.done({ delivered: true, conntrack: this.entry(spec, first, view, delivered) });
      }
      outIface = lookupRoute(this.topology, pkt.dst).dev;
      const fwd = this.hook('FORWARD', { ...pkt, outIface }, view);
      if (fwd.verdict.kind === 'unknown') return this.done({ unknown: fwd.verdict.reason });
      view = { ...view, ctmark: fwd.ctmark };
      if (fwd.verdict.kind === 'REJECT') return this.reject(pkt, fwd.verdict.with, view, spec.icmpId, false);
      if (fwd.verdict.kind !== 'ACCEPT') return this.done({});
      pkt = { ...pkt, mark: fwd.mark, outIface };
    } else {
      inIface = null;
      outIface = lookupRoute(this.topology, base.dst).dev;
      pkt = { ...base, outIface };
      const out = this.hook('OUTPUT', pkt, view);
      if (out.notrack) view = { ...view, state: 'UNTRACKED' };
      view = { ...view, ctmark: out.ctmark };
      if (out.verdict.kind === 'unknown') return this.done({ unknown: out.verdict.reason });
      if (out.verdict.kind !== 'ACCEPT') return this.done({});
      pkt = { ...pkt, mark: out.mark };
      if (out.nat?.kind === 'DNAT') {
        const before = pkt;
        pkt = rewriteToRangeStart(pkt, out.nat);
        view = { ...view, dnat: view.dnat || changesTuple(before, pkt) };
        // The kernel routes the packet again when OUTPUT's DNAT changed its destination.
        outIface = lookupRoute(this.topology, pkt.dst).dev;
        pkt = { ...pkt, outIface };
      }
    }

    const post = this.hook('POSTROUTING', { ...pkt, inIface, outIface }, view);
    if (post.verdict.kind === 'unknown') return this.done({ unknown: post.verdict.reason });
    view = { ...view, ctmark: post.ctmark };
    if (post.verdict.kind !== 'ACCEPT') return this.done({});
    if (post.nat !== undefined) {
      if (post.nat.kind === 'MASQUERADE') {
        const dev = ifaceByName(this.topology, outIface);
        if (dev === undefined) return this.done({ unknown: `MASQUERADE out of ${outIface}, which has no address in the topology` });
        pkt = { ...pkt, src: dev.addr };
      } else if (post.nat.kind === 'SNAT' && post.nat.to?.minIp !== undefined) {
        pkt = { ...pkt, src: post.nat.to.minIp };
      }
    }
    this.egress.push(describeEgress(outIface, asParsed(pkt, spec.icmpId)));
    return this.done({ conntrack: this.entry(spec, first, view, pkt) });
  }

  /** The conntrack entry a tracked, accepted first packet leaves: original tuple, then the reply. */
  private entry(spec: PacketSpec, first: ReturnType<typeof firstPacketConntrack>, view: ConntrackView, final: Packet): string[] {
    if (view.state !== 'NEW') return [];
    const ip = (a: number): string => `${(a >>> 24) & 255}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}`;
    const mark = `mark=${view.ctmark >>> 0}`;
    if (spec.proto === PROTO_ICMP) {
      return [`icmp type=${spec.icmpType} ${ip(spec.src)}>${ip(spec.dst)} id=${spec.icmpId} reply ${ip(final.dst)}>${ip(final.src)} id=${spec.icmpId} unreplied ${mark}`];
    }
    const proto = spec.proto === PROTO_UDP ? 'udp' : `tcp ${first.tcpState ?? '?'}`;
    return [`${proto} ${ip(spec.src)}:${spec.sport}>${ip(spec.dst)}:${spec.dport} reply ${ip(final.dst)}:${final.dport}>${ip(final.src)}:${final.sport} unreplied ${mark}`];
  }

  /**
   * A REJECT in INPUT or FORWARD (the generator keeps the nat table and every OUTPUT and
   * POSTROUTING chain empty in cases that may reject). What the kernel sends back, and the hooks
   * that answer crosses as a locally generated packet:
   * - `tcp-reset`: no answer to a RST; else a RST from the rejected packet's destination (with ACK
   *   when the packet had none). It carries the rejected packet's conntrack entry as RELATED
   *   (nf_ct_attach), so nat OUTPUT is skipped (the destination binding was made in PREROUTING)
   *   but nat POSTROUTING runs (no source binding yet); without an entry it is INVALID: no nat.
   * - ICMP: no answer when the packet was addressed to a broadcast; else destination
   *   unreachable from the node's own address (the rejected destination if local, else the
   *   address of the interface towards the source), quoting the packet; conntrack finds no
   *   confirmed flow for it, so it is INVALID and skips nat.
   */
  private reject(pkt: Packet, withWhat: RejectWith, view: ConntrackView, icmpId: number, local: boolean): Prediction {
    const back = lookupRoute(this.topology, pkt.src).dev;
    const respond = (answer: Packet, tracked: boolean): void => {
      const invalid: ConntrackView = { state: tracked ? 'RELATED' : 'INVALID', dnat: false, snat: false, ctmark: 0 };
      // The connection's destination binding was made in PREROUTING: nat OUTPUT does not run again.
      const out = this.hook('OUTPUT', { ...answer, inIface: null, outIface: back }, invalid, { skipNat: true });
      if (out.verdict.kind !== 'ACCEPT') return;
      const post = this.hook('POSTROUTING', { ...answer, mark: out.mark, inIface: null, outIface: back }, invalid);
      if (post.verdict.kind !== 'ACCEPT') return;
      this.egress.push(describeEgress(back, asParsed(answer, icmpId)));
    };
    const blank: Packet = { ...pkt, mark: 0, fragment: false, icmpType: 0, icmpCode: 0, tcpFlags: 0, sport: 0, dport: 0 };
    if (withWhat === 'tcp-reset') {
      if (pkt.proto === PROTO_TCP && (pkt.tcpFlags & TCP.RST) === 0) {
        const flags = (pkt.tcpFlags & TCP.ACK) !== 0 ? TCP.RST : TCP.RST | TCP.ACK;
        respond({ ...blank, proto: PROTO_TCP, src: pkt.dst, dst: pkt.src, sport: pkt.dport, dport: pkt.sport, tcpFlags: flags, lengthBytes: 40 }, view.state === 'NEW');
      }
      return this.done({});
    }
    const broadcast = this.addrType(pkt.dst, null) === 'BROADCAST';
    if (!broadcast) {
      const from = local ? pkt.dst : (ifaceByName(this.topology, back)?.addr ?? pkt.dst);
      const answer: Packet = { ...blank, proto: PROTO_ICMP, src: from, dst: pkt.src, icmpType: 3, icmpCode: REJECT_ICMP_CODE[withWhat], lengthBytes: 28 + pkt.lengthBytes };
      const before = this.egress.length;
      respond(answer, false);
      if (this.egress.length > before) {
        const quoted = describeEgress('', asParsed(pkt, icmpId)).trimStart();
        this.egress[before] = `${this.egress[before]} quoting ${quoted}`;
      }
    }
    return this.done({});
  }
}
