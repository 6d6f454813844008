/**
 * One packet through one host, alone: what `netsim trace --host` prints. A packet with an
 * incoming interface is received on it; one without is sent by the host itself. The host's own
 * stack is not run (no reply to a delivered SYN), but replies the datapath makes (REJECT's RST or
 * ICMP error, an ICMP error for no route) are traced through the host too. Whatever leaves an
 * interface is the egress: the host has no neighbours here, so every next hop answers.
 */
import { formatIpv4, type Ipv4, type Packet, type UnknownPolicy } from '@netsim/netfilter';
import { formatCtEntry } from './conntrack.ts';
import { hostReceive, hostSend, type RunCtx } from './datapath.ts';
import type { Host } from './host.ts';
import type { RandomSource } from './nat.ts';
import { PROTO_ICMP, PROTO_TCP, PROTO_UDP, isIcmpQueryType, type Pkt } from './packet.ts';
import { formatTrace, type MatchedRule, type TraceStep } from './trace.ts';

export interface HostTraceOptions {
  /** Simulated time of the packet (conntrack timeouts). Default 0. */
  readonly nowMs?: number;
  /** Randomness for SNAT ports and `statistic`. */
  readonly rng: RandomSource;
  /**
   * The `statistic --mode random` draws instead of `rng` (it gets the rule's threshold): how
   * `allBranches` from `@netsim/netfilter` enumerates every outcome of a host trace.
   */
  readonly random31?: (threshold31?: number) => number;
  /** What the rule walks do at a rule they cannot evaluate (default `stop`: the packet's fate is unknown). */
  readonly unknown?: UnknownPolicy;
  /**
   * Per-module overrides of `unknown`, keyed by the module the undecidable match belongs to:
   * `{ rpfilter: 'assume-match', socket: 'assume-nomatch' }` (see `EvalOptions.unknownModules`).
   */
  readonly unknownModules?: Readonly<Record<string, UnknownPolicy>>;
}

/** Where the traced packet left the host, as it looked on the wire. */
export interface Egress {
  readonly iface: string;
  readonly src: string;
  readonly dst: string;
  readonly sport: number;
  readonly dport: number;
  /** The next hop the route chose. */
  readonly nexthop: string;
}

export interface HostTraceResult {
  /**
   * `delivered` to a local socket, `forwarded` out of an interface after arriving on one, `sent`
   * out of an interface by the host itself, `dropped` (by a rule, a policy or a kernel check),
   * `rejected` (REJECT answered), or `unknown` (an undecidable rule stopped the walk).
   */
  readonly fate: 'delivered' | 'forwarded' | 'sent' | 'dropped' | 'rejected' | 'unknown';
  readonly egress: Egress | null;
  /** Every rule that matched, in order, `index` 1-based in its chain, `rule` the `-A` line. */
  readonly matched: readonly MatchedRule[];
  /** The conntrack table afterwards, as `conntrack -L` prints it. */
  readonly conntrack: readonly string[];
  /** Why the packet died, when it did. */
  readonly reason: string | null;
  /** The destination DNAT bound for the packet's connection (`ADDR:PORT`, `ADDR` without ports), or null. */
  readonly dnat: string | null;
  /** The source SNAT or MASQUERADE bound (`ADDR:PORT`, `ADDR` without ports), or null. */
  readonly snat: string | null;
  /** The source NAT was a MASQUERADE. */
  readonly masquerade: boolean;
  readonly trace: readonly TraceStep[];
}

/**
 * A packet to trace: the evaluator's {@link Packet}, plus the identifier of an ICMP query (echo,
 * timestamp, …), which conntrack keys echo flows by (default 0).
 */
export type HostPacket = Packet & { readonly icmpId?: number };

function contains(p: Pkt | null, id: number): boolean {
  for (let q = p; q !== null; q = q.encap) if (q.id === id) return true;
  return false;
}

/**
 * Traces `packet` through `host` and reports its fate.
 *
 * @example
 * const r = traceHostPacket(host, parsePacketSpec('tcp 192.0.2.10:40000 > 198.51.100.10:30080 in eth0'), { rng });
 * r.fate; // 'forwarded'
 */
export function traceHostPacket(host: Host, packet: HostPacket, opts: HostTraceOptions): HostTraceResult {
  const trace: TraceStep[] = [];
  let nextId = 2;
  let egress: Egress | null = null;
  let delivered = false;
  const rc: RunCtx = {
    nowMs: opts.nowMs ?? 0,
    rng: opts.rng,
    random31: opts.random31 ?? (() => opts.rng.int(0x80000000)),
    trace,
    nextPktId: () => nextId++,
    transmit: (_h, iface: string, nexthop: Ipv4, p: Pkt) => {
      if (egress === null && contains(p, 1)) {
        egress = { iface, src: formatIpv4(p.src), dst: formatIpv4(p.dst), sport: p.sport, dport: p.dport, nexthop: formatIpv4(nexthop) };
      }
      return true;
    },
    deliver: (_h, p: Pkt) => {
      if (p.id === 1) delivered = true;
    },
    depth: 0,
    lean: false,
    ...(opts.unknown !== undefined ? { unknown: opts.unknown } : {}),
    ...(opts.unknownModules !== undefined ? { unknownModules: opts.unknownModules } : {}),
  };
  const pkt: Pkt = {
    id: 1,
    src: packet.src,
    dst: packet.dst,
    proto: packet.proto,
    sport: packet.proto === PROTO_TCP || packet.proto === PROTO_UDP ? packet.sport : 0,
    dport: packet.proto === PROTO_TCP || packet.proto === PROTO_UDP ? packet.dport : 0,
    tcpFlags: packet.tcpFlags,
    icmpType: packet.icmpType,
    icmpCode: packet.icmpCode,
    icmpId: packet.proto === PROTO_ICMP && isIcmpQueryType(packet.icmpType) ? (packet.icmpId ?? 0) : 0,
    mark: packet.mark,
    lengthBytes: packet.lengthBytes,
    ttl: 64,
    inner: null,
    encap: null,
    origin: { host: 'trace', why: '--packet' },
  };
  let sendError: string | null = null;
  if (packet.inIface !== null) hostReceive(host, pkt, packet.inIface, 'wire', rc);
  else {
    const r = hostSend(host, pkt, rc, packet.outIface !== null ? { oif: packet.outIface } : {});
    if (!r.ok) sendError = `${r.errno} (${r.reason})`;
  }
  const matched = trace.flatMap((s) => (s.kind === 'table' ? s.matched : []));
  const firstDrop = trace.find((s) => s.kind === 'drop' && s.packet.id === 1);
  const drop = firstDrop?.kind === 'drop' ? firstDrop : undefined;
  let fate: HostTraceResult['fate'];
  if (delivered) fate = 'delivered';
  else if (egress !== null) fate = packet.inIface !== null ? 'forwarded' : 'sent';
  else if ((drop?.site.stage === 'hook' && drop.site.verdict === 'REJECT') || (drop?.site.stage === 'nft' && drop.site.verdict === 'reject')) fate = 'rejected';
  else if ((drop?.site.stage === 'hook' && drop.site.verdict === 'unknown') || (drop?.site.stage === 'nft' && drop.site.verdict === 'unsupported')) fate = 'unknown';
  else fate = 'dropped';
  const nowMs = opts.nowMs ?? 0;
  const ported = packet.proto === PROTO_TCP || packet.proto === PROTO_UDP;
  const bound = (manip: 'src' | 'dst') => trace.find((s) => s.kind === 'nat' && s.host === host.name && s.manip === manip && s.action === 'bound');
  const boundTo = (manip: 'src' | 'dst'): string | null => {
    const b = bound(manip);
    if (b?.kind !== 'nat') return null;
    return ported ? b.to : (b.to.split(':')[0] ?? b.to);
  };
  const src = bound('src');
  return {
    fate,
    egress,
    matched,
    conntrack: host.conntrack.list(nowMs).map((e) => formatCtEntry(e, nowMs)),
    reason: drop?.reason ?? sendError,
    dnat: boundTo('dst'),
    snat: boundTo('src'),
    masquerade: src?.kind === 'nat' && src.target === 'MASQUERADE',
    trace,
  };
}

/** The human report: each decision in order, then the fate, the egress and the conntrack table. */
export function formatHostTrace(r: HostTraceResult): string {
  const e = r.egress;
  const lines = [
    formatTrace(r.trace),
    `fate: ${r.fate}${r.reason !== null ? ` (${r.reason})` : ''}`,
    `egress: ${e === null ? 'none' : `${e.iface} ${e.src}${e.sport !== 0 ? `:${e.sport}` : ''} > ${e.dst}${e.dport !== 0 ? `:${e.dport}` : ''} via ${e.nexthop}`}`,
    `nat: ${r.dnat === null && r.snat === null ? 'none' : [r.dnat !== null ? `DNAT to ${r.dnat}` : '', r.snat !== null ? `${r.masquerade ? 'MASQUERADE' : 'SNAT'} to ${r.snat}` : ''].filter((x) => x !== '').join(', ')}`,
    'conntrack:',
    ...r.conntrack.map((l) => `  ${l}`),
  ];
  return `${lines.join('\n')}\n`;
}
