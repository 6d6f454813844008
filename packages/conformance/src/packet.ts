/**
 * Building the bytes the lab injects and reading the bytes it captures: IPv4 with TCP, UDP or
 * ICMP, inside Ethernet frames. Only what the conformance cases need; checksums are always right,
 * because conntrack drops a TCP packet with a bad checksum as INVALID in PREROUTING.
 */
import { formatIpv4, type Ipv4 } from '@netsim/netfilter';

export const PROTO_ICMP = 1;
export const PROTO_TCP = 6;
export const PROTO_UDP = 17;

/** TCP flag bits, as netfilter's `--tcp-flags` and the evaluator's `Packet.tcpFlags` use them. */
export const TCP = { FIN: 0x01, SYN: 0x02, RST: 0x04, PSH: 0x08, ACK: 0x10, URG: 0x20, ECE: 0x40, CWR: 0x80 } as const;

/** One IPv4 packet as a case describes it. Ports are 0 for ICMP. */
export interface PacketSpec {
  readonly src: Ipv4;
  readonly dst: Ipv4;
  readonly proto: typeof PROTO_TCP | typeof PROTO_UDP | typeof PROTO_ICMP;
  readonly sport: number;
  readonly dport: number;
  /** TCP only. */
  readonly tcpFlags: number;
  /** ICMP only: type and code (8/0 is an echo request). */
  readonly icmpType: number;
  readonly icmpCode: number;
  /** ICMP echo identifier (conntrack keys echo flows by it). */
  readonly icmpId: number;
  /**
   * TCP sequence and acknowledgement numbers; default 0x1000 and (with ACK) 0x2000. A reply must
   * acknowledge what it answers (a SYN-ACK acks the SYN's seq + 1), or conntrack's window check
   * marks it INVALID.
   */
  readonly seq?: number;
  readonly ack?: number;
}

/** The fields read back from a captured IPv4 packet. */
export interface ParsedIpv4 {
  readonly src: Ipv4;
  readonly dst: Ipv4;
  readonly proto: number;
  readonly ttl: number;
  readonly totalLength: number;
  /** TCP/UDP ports; for an ICMP query both hold its identifier. */
  readonly sport: number;
  readonly dport: number;
  readonly tcpFlags: number;
  readonly icmpType: number;
  readonly icmpCode: number;
  /** For ICMP errors (types 3, 11, 12): the quoted original packet, as far as it is present. */
  readonly quoted?: ParsedIpv4;
}

export interface ParsedFrame {
  readonly dstMac: string;
  readonly srcMac: string;
  readonly ethertype: number;
  readonly ip?: ParsedIpv4;
}

const PAYLOAD: readonly number[] = [0x6e, 0x63, 0x66, 0x21]; // "ncf!": a few bytes so UDP and ICMP carry data

function sum16(bytes: Uint8Array, from: number, to: number, acc: number): number {
  let s = acc;
  for (let i = from; i < to; i += 2) s += ((bytes[i] as number) << 8) | (i + 1 < to ? (bytes[i + 1] as number) : 0);
  return s;
}

function fold(s: number): number {
  let x = s;
  while (x > 0xffff) x = (x & 0xffff) + (x >>> 16);
  return ~x & 0xffff;
}

function put16(b: Uint8Array, at: number, v: number): void {
  b[at] = (v >>> 8) & 255;
  b[at + 1] = v & 255;
}

function put32(b: Uint8Array, at: number, v: number): void {
  put16(b, at, (v >>> 16) & 0xffff);
  put16(b, at + 2, v & 0xffff);
}

function get16(b: Uint8Array, at: number): number {
  return (((b[at] ?? 0) << 8) | (b[at + 1] ?? 0)) >>> 0;
}

function get32(b: Uint8Array, at: number): number {
  return ((get16(b, at) << 16) | get16(b, at + 2)) >>> 0;
}

/**
 * The IPv4 packet for `spec`, header included, with TTL 64 and valid checksums.
 *
 * @example
 * buildIpv4({ src, dst, proto: PROTO_TCP, sport: 40000, dport: 80, tcpFlags: TCP.SYN, icmpType: 0, icmpCode: 0, icmpId: 0 })
 */
export function buildIpv4(spec: PacketSpec, ipId = 1): Uint8Array {
  const l4len = spec.proto === PROTO_TCP ? 20 : spec.proto === PROTO_UDP ? 8 + PAYLOAD.length : 8 + PAYLOAD.length;
  const total = 20 + l4len;
  const b = new Uint8Array(total);
  b[0] = 0x45;
  put16(b, 2, total);
  put16(b, 4, ipId & 0xffff);
  b[8] = 64;
  b[9] = spec.proto;
  put32(b, 12, spec.src);
  put32(b, 16, spec.dst);
  put16(b, 10, fold(sum16(b, 0, 20, 0)));
  const l4 = 20;
  if (spec.proto === PROTO_ICMP) {
    b[l4] = spec.icmpType;
    b[l4 + 1] = spec.icmpCode;
    put16(b, l4 + 4, spec.icmpId);
    put16(b, l4 + 6, 1);
    b.set(PAYLOAD, l4 + 8);
    put16(b, l4 + 2, fold(sum16(b, l4, total, 0)));
    return b;
  }
  put16(b, l4, spec.sport);
  put16(b, l4 + 2, spec.dport);
  if (spec.proto === PROTO_TCP) {
    put32(b, l4 + 4, spec.seq ?? 0x1000);
    if ((spec.tcpFlags & TCP.ACK) !== 0) put32(b, l4 + 8, spec.ack ?? 0x2000);
    b[l4 + 12] = 5 << 4;
    b[l4 + 13] = spec.tcpFlags & 0xff;
    put16(b, l4 + 14, 64240);
  } else {
    put16(b, l4 + 4, l4len);
    b.set(PAYLOAD, l4 + 8);
  }
  // The pseudo header: source, destination, zero, protocol, L4 length.
  let s = sum16(b, 12, 20, 0);
  s += spec.proto + l4len;
  s = sum16(b, l4, total, s);
  let c = fold(s);
  if (spec.proto === PROTO_UDP && c === 0) c = 0xffff;
  put16(b, l4 + (spec.proto === PROTO_TCP ? 16 : 6), c);
  return b;
}

export function macBytes(mac: string): Uint8Array {
  const parts = mac.split(':');
  if (parts.length !== 6 || parts.some((p) => !/^[0-9a-f]{2}$/i.test(p))) throw new RangeError(`invalid MAC address "${mac}"`);
  return Uint8Array.from(parts.map((p) => parseInt(p, 16)));
}

function formatMac(b: Uint8Array, at: number): string {
  const parts: string[] = [];
  for (let i = 0; i < 6; i++) parts.push((b[at + i] ?? 0).toString(16).padStart(2, '0'));
  return parts.join(':');
}

/** An Ethernet II frame carrying `payload` with EtherType 0x0800. */
export function ethernetFrame(dstMac: string, srcMac: string, payload: Uint8Array): Uint8Array {
  const f = new Uint8Array(14 + payload.length);
  f.set(macBytes(dstMac), 0);
  f.set(macBytes(srcMac), 6);
  put16(f, 12, 0x0800);
  f.set(payload, 14);
  return f;
}

/** Reads an IPv4 packet starting at `at`; undefined when it is not IPv4 or is cut short. */
export function parseIpv4(b: Uint8Array, at = 0): ParsedIpv4 | undefined {
  if (b.length < at + 20 || ((b[at] ?? 0) >>> 4) !== 4) return undefined;
  const ihl = ((b[at] ?? 0) & 15) * 4;
  const proto = b[at + 9] ?? 0;
  const l4 = at + ihl;
  const base = {
    src: get32(b, at + 12) as Ipv4,
    dst: get32(b, at + 16) as Ipv4,
    proto,
    ttl: b[at + 8] ?? 0,
    totalLength: get16(b, at + 2),
  };
  if (proto === PROTO_TCP || proto === PROTO_UDP) {
    return {
      ...base,
      sport: get16(b, l4),
      dport: get16(b, l4 + 2),
      tcpFlags: proto === PROTO_TCP ? (b[l4 + 13] ?? 0) : 0,
      icmpType: 0,
      icmpCode: 0,
    };
  }
  if (proto === PROTO_ICMP) {
    const type = b[l4] ?? 0;
    const code = b[l4 + 1] ?? 0;
    const isError = type === 3 || type === 11 || type === 12;
    const quoted = isError ? parseIpv4(b, l4 + 8) : undefined;
    const id = isIcmpQuery(type) ? get16(b, l4 + 4) : 0;
    const p: ParsedIpv4 = { ...base, sport: id, dport: id, tcpFlags: 0, icmpType: type, icmpCode: code };
    return quoted === undefined ? p : { ...p, quoted };
  }
  return { ...base, sport: 0, dport: 0, tcpFlags: 0, icmpType: 0, icmpCode: 0 };
}

export function parseFrame(b: Uint8Array): ParsedFrame {
  const ethertype = get16(b, 12);
  const frame = { dstMac: formatMac(b, 0), srcMac: formatMac(b, 6), ethertype };
  if (ethertype !== 0x0800) return frame;
  const ip = parseIpv4(b, 14);
  return ip === undefined ? frame : { ...frame, ip };
}

const FLAG_NAMES: readonly (readonly [number, string])[] = [
  [TCP.SYN, 'SYN'],
  [TCP.ACK, 'ACK'],
  [TCP.FIN, 'FIN'],
  [TCP.RST, 'RST'],
  [TCP.PSH, 'PSH'],
  [TCP.URG, 'URG'],
  [TCP.ECE, 'ECE'],
  [TCP.CWR, 'CWR'],
];

/** `SYN,ACK` style, or `none`. */
export function formatTcpFlags(flags: number): string {
  const names = FLAG_NAMES.filter(([bit]) => (flags & bit) !== 0).map(([, n]) => n);
  return names.length === 0 ? 'none' : names.join(',');
}

/** ICMP queries (echo, timestamp, information, address mask) carry an identifier; errors do not. */
export function isIcmpQuery(type: number): boolean {
  return type === 0 || type === 8 || (type >= 13 && type <= 18);
}

/**
 * One line a human can read: `tcp 192.0.2.2:40000 > 198.18.0.5:80 [SYN]`, or for an ICMP query
 * `icmp 192.0.2.2 > 198.18.0.5 type 8 code 0 id 7` (its id is in `sport`).
 */
export function describePacket(p: Pick<ParsedIpv4, 'src' | 'dst' | 'proto' | 'sport' | 'dport' | 'tcpFlags' | 'icmpType' | 'icmpCode'>): string {
  const s = formatIpv4(p.src);
  const d = formatIpv4(p.dst);
  if (p.proto === PROTO_TCP) return `tcp ${s}:${p.sport} > ${d}:${p.dport} [${formatTcpFlags(p.tcpFlags)}]`;
  if (p.proto === PROTO_UDP) return `udp ${s}:${p.sport} > ${d}:${p.dport}`;
  if (p.proto === PROTO_ICMP) return `icmp ${s} > ${d} type ${p.icmpType} code ${p.icmpCode}${isIcmpQuery(p.icmpType) ? ` id ${p.sport}` : ''}`;
  return `proto ${p.proto} ${s} > ${d}`;
}

export function toHex(b: Uint8Array): string {
  return Buffer.from(b).toString('hex');
}

export function fromHex(h: string): Uint8Array {
  return new Uint8Array(Buffer.from(h, 'hex'));
}
