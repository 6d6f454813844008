/**
 * The packet as the kernel datapath carries it. Each host works on its own copy (the wire copies),
 * so hooks may rewrite fields in place: this is the hot path and it uses plain mutable objects.
 */
import { formatIpv4, type Ipv4 } from '@netsim/netfilter';
import { TCP_ACK, TCP_FIN, TCP_PSH, TCP_RST, TCP_SYN, icmpTypeCode, type Tuple } from './conntrack.ts';

export const PROTO_ICMP = 1;
export const PROTO_TCP = 6;
export const PROTO_UDP = 17;

/** ICMP types that carry an embedded header (errors). */
export const ICMP_DEST_UNREACH = 3;
export const ICMP_TIME_EXCEEDED = 11;
export const ICMP_ECHO_REPLY = 0;
export const ICMP_ECHO = 8;

/**
 * The embedded IP/transport header of an ICMP error. For an embedded ICMP query (an echo
 * request, …) `sport` and `dport` hold its conntrack key as a {@link Tuple} does: the
 * identifier, and `type << 8 | code`.
 */
export interface InnerHeader {
  src: Ipv4;
  dst: Ipv4;
  proto: number;
  sport: number;
  dport: number;
}

export interface Pkt {
  /** Sequence number within one network run, for traces. */
  readonly id: number;
  src: Ipv4;
  dst: Ipv4;
  proto: number;
  sport: number;
  dport: number;
  tcpFlags: number;
  icmpType: number;
  icmpCode: number;
  /** The identifier of an ICMP query (echo, timestamp, …); 0 for everything else. */
  icmpId: number;
  /** skb->mark; reset to 0 when a packet crosses a wire (a new skb on the other side). */
  mark: number;
  lengthBytes: number;
  /** Decremented by each forwarding host; at 1 the packet dies with ICMP time exceeded. */
  ttl: number;
  /** ICMP errors: the header of the packet that caused the error. */
  inner: InnerHeader | null;
  /** Overlay encapsulation: the packet carried inside this UDP datagram. */
  encap: Pkt | null;
  /** Which host made this packet and why (a socket's SYN, a stack's RST, a REJECT rule…). */
  origin: PktOrigin | null;
}

/** Provenance of a packet, kept across wires, so a result can say who sent an RST and why. */
export interface PktOrigin {
  readonly host: string;
  readonly why: string;
}

export function copyPkt(p: Pkt, id: number): Pkt {
  return {
    id,
    src: p.src,
    dst: p.dst,
    proto: p.proto,
    sport: p.sport,
    dport: p.dport,
    tcpFlags: p.tcpFlags,
    icmpType: p.icmpType,
    icmpCode: p.icmpCode,
    icmpId: p.icmpId,
    mark: 0,
    lengthBytes: p.lengthBytes,
    ttl: p.ttl,
    inner: p.inner === null ? null : { ...p.inner },
    encap: p.encap === null ? null : copyPkt(p.encap, p.encap.id),
    origin: p.origin,
  };
}

/**
 * The conntrack tuple of a packet (`nf_ct_get_tuple`): ports for TCP and UDP, the identifier and
 * `type << 8 | code` for an ICMP query, zeros for other protocols.
 */
export function pktTuple(p: Pkt): Tuple {
  if (p.proto === PROTO_TCP || p.proto === PROTO_UDP) return { src: p.src, dst: p.dst, proto: p.proto, sport: p.sport, dport: p.dport };
  if (p.proto === PROTO_ICMP) return { src: p.src, dst: p.dst, proto: p.proto, sport: p.icmpId, dport: icmpTypeCode(p.icmpType, p.icmpCode) };
  return { src: p.src, dst: p.dst, proto: p.proto, sport: 0, dport: 0 };
}

/** The header an ICMP error embeds about `p`, keyed like {@link pktTuple}. */
export function innerOf(p: Pkt): InnerHeader {
  const t = pktTuple(p);
  return { src: t.src, dst: t.dst, proto: t.proto, sport: t.sport, dport: t.dport };
}

/** `icmp_is_err`: destination unreachable, source quench, redirect, time exceeded, parameter problem. */
export function isIcmpErrorType(type: number): boolean {
  return type === ICMP_DEST_UNREACH || type === 4 || type === 5 || type === ICMP_TIME_EXCEEDED || type === 12;
}

export function isIcmpError(p: Pkt): boolean {
  return p.proto === PROTO_ICMP && isIcmpErrorType(p.icmpType);
}

/** ICMP query types, whose packets carry an identifier: echo, timestamp, information, address mask. */
export function isIcmpQueryType(type: number): boolean {
  return type === ICMP_ECHO_REPLY || type === ICMP_ECHO || (type >= 13 && type <= 18);
}

/** `SYN`, `SYN,ACK`, `RST,ACK`… in the order tcpdump-like tools list them. */
export function formatTcpFlags(flags: number): string {
  const out: string[] = [];
  if ((flags & TCP_SYN) !== 0) out.push('SYN');
  if ((flags & TCP_FIN) !== 0) out.push('FIN');
  if ((flags & TCP_RST) !== 0) out.push('RST');
  if ((flags & TCP_PSH) !== 0) out.push('PSH');
  if ((flags & TCP_ACK) !== 0) out.push('ACK');
  // URG, ECE and CWR travel through the datapath untouched; the view must show them too.
  if ((flags & 0x20) !== 0) out.push('URG');
  if ((flags & 0x40) !== 0) out.push('ECE');
  if ((flags & 0x80) !== 0) out.push('CWR');
  return out.join(',');
}

const ICMP_UNREACH_CODES: { readonly [code: number]: string } = {
  0: 'net-unreachable',
  1: 'host-unreachable',
  2: 'protocol-unreachable',
  3: 'port-unreachable',
  9: 'net-prohibited',
  10: 'host-prohibited',
  13: 'admin-prohibited',
};

/** `port-unreachable`, `host-unreachable`, `echo-request`… */
export function icmpName(type: number, code: number): string {
  if (type === ICMP_DEST_UNREACH) return ICMP_UNREACH_CODES[code] ?? `unreachable-code-${code}`;
  if (type === 0) return 'echo-reply';
  if (type === 8) return 'echo-request';
  if (type === ICMP_TIME_EXCEEDED) return 'time-exceeded';
  return `type-${type}-code-${code}`;
}

/** A JSON-friendly view of a packet for traces. */
export interface PacketView {
  readonly id: number;
  readonly proto: string;
  readonly src: string;
  readonly dst: string;
  readonly sport?: number;
  readonly dport?: number;
  readonly flags?: string;
  readonly icmp?: string;
  /** ICMP queries (echo, …): the identifier. */
  readonly icmpId?: number;
  /** ICMP errors: the embedded header, `src:sport > dst:dport`. */
  readonly inner?: string;
  readonly mark?: number;
  /** Overlay: the carried packet. */
  readonly encap?: PacketView;
}

export function viewPkt(p: Pkt): PacketView {
  const proto = p.proto === PROTO_TCP ? 'tcp' : p.proto === PROTO_UDP ? 'udp' : p.proto === PROTO_ICMP ? 'icmp' : String(p.proto);
  const v: {
    id: number;
    proto: string;
    src: string;
    dst: string;
    sport?: number;
    dport?: number;
    flags?: string;
    icmp?: string;
    icmpId?: number;
    inner?: string;
    mark?: number;
    encap?: PacketView;
  } = { id: p.id, proto, src: formatIpv4(p.src), dst: formatIpv4(p.dst) };
  if (p.proto === PROTO_TCP || p.proto === PROTO_UDP) {
    v.sport = p.sport;
    v.dport = p.dport;
  }
  if (p.proto === PROTO_TCP) v.flags = formatTcpFlags(p.tcpFlags);
  if (p.proto === PROTO_ICMP) {
    v.icmp = icmpName(p.icmpType, p.icmpCode);
    if (isIcmpQueryType(p.icmpType)) v.icmpId = p.icmpId;
  }
  if (p.inner !== null) v.inner = formatEndpoints(p.inner);
  if (p.mark !== 0) v.mark = p.mark;
  if (p.encap !== null) v.encap = viewPkt(p.encap);
  return v;
}

function formatEndpoints(t: { src: number; dst: number; proto: number; sport: number; dport: number }): string {
  const ports = t.proto === PROTO_TCP || t.proto === PROTO_UDP;
  return ports ? `${formatIpv4(t.src)}:${t.sport} > ${formatIpv4(t.dst)}:${t.dport}` : `${formatIpv4(t.src)} > ${formatIpv4(t.dst)}`;
}

/** One-line rendering: `tcp 192.0.2.10:40000 > 198.51.100.10:30080 [SYN]`. */
export function formatPacketView(v: PacketView): string {
  const ends = v.sport !== undefined ? `${v.src}:${v.sport} > ${v.dst}:${v.dport}` : `${v.src} > ${v.dst}`;
  let s = `${v.proto} ${ends}`;
  if (v.flags !== undefined) s += ` [${v.flags}]`;
  if (v.icmp !== undefined) s += ` ${v.icmp}`;
  if (v.icmpId !== undefined) s += ` id=${v.icmpId}`;
  if (v.inner !== undefined) s += ` (about ${v.inner})`;
  if (v.mark !== undefined) s += ` mark=0x${v.mark.toString(16)}`;
  if (v.encap !== undefined) s += ` carrying {${formatPacketView(v.encap)}}`;
  return s;
}
