/**
 * An ipset model for `-m set --match-set NAME dir[,dir…]`: the membership test the kernel's
 * `ip_set_test` performs for the hash types kube-proxy, Calico and Antrea use.
 *
 * Members use the `ipset save` element syntax (`10.0.0.1`, `10.0.0.0/24`, `10.0.0.1-10.0.0.9`,
 * `10.0.0.1,tcp:80`, `10.0.0.0/24,udp:53-60`, `10.0.0.1,tcp:80,10.0.0.2`); trailing element options
 * (`timeout 300`, `comment "x"`, `packets N`…) are accepted and ignored, except `nomatch` on
 * `hash:net*` entries, which carves an exception out of a wider entry as in the kernel (the most
 * specific entry decides).
 *
 * Kernel rules followed: a match naming fewer directions than the set has dimensions never
 * matches; extra directions are ignored; a port dimension takes the port of a TCP, UDP, SCTP or
 * UDP-Lite packet, `(type << 8) | code` of an ICMP packet, 0 for other protocols (the element
 * must then say that protocol with port 0), and a non-first fragment has no port (no match).
 */
import type { Packet } from './evalTypes.ts';
import { prefixMask, tryParseIpv4 } from './ip.ts';
import type { IpSet } from './types.ts';

/** The membership test `EvalContext.ipsetHas` expects. */
export type IpSetLookup = (name: string, dims: readonly ('src' | 'dst')[], packet: Packet) => boolean | undefined;

const PROTO_BY_NAME: { readonly [name: string]: number } = { tcp: 6, udp: 17, sctp: 132, udplite: 136, icmp: 1 };
const PORTED: ReadonlySet<number> = new Set([6, 17, 132, 136]);

const ICMP_TYPE_BY_NAME: { readonly [name: string]: number } = {
  'echo-reply': 0x0000,
  'destination-unreachable': 0x0300,
  'network-unreachable': 0x0300,
  'host-unreachable': 0x0301,
  'protocol-unreachable': 0x0302,
  'port-unreachable': 0x0303,
  'fragmentation-needed': 0x0304,
  'source-route-failed': 0x0305,
  'network-unknown': 0x0306,
  'host-unknown': 0x0307,
  'network-prohibited': 0x0309,
  'host-prohibited': 0x030a,
  'TOS-network-unreachable': 0x030b,
  'TOS-host-unreachable': 0x030c,
  'communication-prohibited': 0x030d,
  'host-precedence-violation': 0x030e,
  'precedence-cutoff': 0x030f,
  'source-quench': 0x0400,
  'network-redirect': 0x0500,
  'host-redirect': 0x0501,
  'TOS-network-redirect': 0x0502,
  'TOS-host-redirect': 0x0503,
  'echo-request': 0x0800,
  'router-advertisement': 0x0900,
  'router-solicitation': 0x0a00,
  'ttl-zero-during-transit': 0x0b00,
  'ttl-zero-during-reassembly': 0x0b01,
  'ip-header-bad': 0x0c00,
  'required-option-missing': 0x0c01,
  'timestamp-request': 0x0d00,
  'timestamp-reply': 0x0e00,
  'address-mask-request': 0x1100,
  'address-mask-reply': 0x1200,
};

/** An address dimension: exact addresses plus intervals (ranges and CIDRs of hash:ip) or nets. */
interface AddrDim {
  /** hash:ip style: individual addresses (and intervals for ranges). */
  readonly exact: Set<number>;
  readonly intervals: [number, number][];
}

/** A port dimension value: protocol and port (ICMP: type<<8|code). */
interface PortValue {
  readonly proto: number;
  readonly from: number;
  readonly to: number;
}

interface Entry {
  readonly net: { readonly addr: number; readonly prefix: number; readonly from: number; readonly to: number };
  readonly port?: PortValue;
  readonly ip2?: { readonly from: number; readonly to: number };
  readonly nomatch: boolean;
}

interface CompiledSet {
  readonly dimension: number;
  /** Fast path for plain hash:ip sets. */
  readonly ips?: AddrDim;
  /** Every other type: entries tested most specific prefix first. */
  readonly entries: readonly Entry[];
}

function setError(set: IpSet, member: string, why: string): RangeError {
  return new RangeError(`ipset ${set.name} (${set.type}): bad member "${member}": ${why}`);
}

/** `a.b.c.d`, `a.b.c.d/n` or `a.b.c.d-e.f.g.h` as an inclusive interval and its prefix (32 for ranges). */
function parseAddrPart(set: IpSet, member: string, text: string, allowNet: boolean): Entry['net'] {
  const dash = text.indexOf('-');
  if (dash >= 0) {
    const from = tryParseIpv4(text.slice(0, dash));
    const to = tryParseIpv4(text.slice(dash + 1));
    if (from === undefined || to === undefined || to < from) throw setError(set, member, `"${text}" is not an address range`);
    return { addr: from, prefix: 32, from, to };
  }
  const slash = text.indexOf('/');
  const addr = tryParseIpv4(slash < 0 ? text : text.slice(0, slash));
  if (addr === undefined) throw setError(set, member, `"${text}" is not an IPv4 address`);
  if (slash < 0) return { addr, prefix: 32, from: addr, to: addr };
  const p = text.slice(slash + 1);
  if (!/^[0-9]{1,2}$/.test(p) || Number(p) > 32) throw setError(set, member, `"${text}" has a bad prefix length`);
  const prefix = Number(p);
  if (!allowNet && prefix === 0) throw setError(set, member, 'a /0 is not a valid hash:ip element');
  const mask = prefixMask(prefix);
  const base = (addr & mask) >>> 0;
  return { addr: base, prefix, from: base, to: (base | ~mask) >>> 0 };
}

function parsePortPart(set: IpSet, member: string, text: string): PortValue {
  const colon = text.indexOf(':');
  const protoName = colon < 0 ? 'tcp' : text.slice(0, colon);
  const portText = colon < 0 ? text : text.slice(colon + 1);
  const proto = PROTO_BY_NAME[protoName] ?? (/^[0-9]+$/.test(protoName) ? Number(protoName) : undefined);
  if (proto === undefined || proto > 255) throw setError(set, member, `unknown protocol "${protoName}"`);
  if (proto === 1) {
    const named = ICMP_TYPE_BY_NAME[portText];
    if (named !== undefined) return { proto, from: named, to: named };
    const m = /^([0-9]{1,3})\/([0-9]{1,3})$/.exec(portText);
    if (m === null || Number(m[1]) > 255 || Number(m[2]) > 255) throw setError(set, member, `"${portText}" is not an ICMP type/code`);
    const v = (Number(m[1]) << 8) | Number(m[2]);
    return { proto, from: v, to: v };
  }
  const m = /^([0-9]{1,5})(?:-([0-9]{1,5}))?$/.exec(portText);
  if (m === null) throw setError(set, member, `"${portText}" is not a port or port range`);
  const from = Number(m[1]);
  const to = m[2] === undefined ? from : Number(m[2]);
  if (from > 65535 || to > 65535 || to < from) throw setError(set, member, `"${portText}" is not a port or port range`);
  if (!PORTED.has(proto) && (from !== 0 || to !== 0)) throw setError(set, member, `protocol ${protoName} has no ports: use ${protoName}:0`);
  return { proto, from, to };
}

const DIMENSION: { readonly [T in IpSet['type']]: number } = {
  'hash:ip': 1,
  'hash:net': 1,
  'hash:ip,port': 2,
  'hash:net,port': 2,
  'hash:ip,port,ip': 3,
};

function compileSet(set: IpSet): CompiledSet {
  const dimension = DIMENSION[set.type];
  const entries: Entry[] = [];
  const ips: AddrDim = { exact: new Set(), intervals: [] };
  for (const member of set.members) {
    const words = member.trim().split(/\s+/);
    const element = words[0] ?? '';
    const nomatch = words.includes('nomatch');
    const parts = element.split(',');
    if (parts.length !== dimension) throw setError(set, member, `a ${set.type} element has ${dimension} part(s)`);
    const isNet = set.type === 'hash:net' || set.type === 'hash:net,port';
    if (nomatch && !isNet) throw setError(set, member, `nomatch is only valid for hash:net types`);
    const net = parseAddrPart(set, member, parts[0] ?? '', isNet);
    if (set.type === 'hash:ip') {
      if (net.from === net.to) ips.exact.add(net.from);
      else ips.intervals.push([net.from, net.to]);
      continue;
    }
    const port = dimension >= 2 ? parsePortPart(set, member, parts[1] ?? '') : undefined;
    const ip2 = dimension === 3 ? parseAddrPart(set, member, parts[2] ?? '', false) : undefined;
    entries.push({
      net,
      ...(port === undefined ? {} : { port }),
      ...(ip2 === undefined ? {} : { ip2: { from: ip2.from, to: ip2.to } }),
      nomatch,
    });
  }
  // Most specific first, so that the first entry containing the packet decides (nomatch or not).
  entries.sort((a, b) => b.net.prefix - a.net.prefix);
  return set.type === 'hash:ip' ? { dimension, ips, entries } : { dimension, entries };
}

function addrOf(packet: Packet, dir: 'src' | 'dst' | undefined): number {
  return dir === 'src' ? packet.src : packet.dst;
}

/** The port-dimension value of a packet, or undefined when it has none (non-first fragment). */
function portOf(packet: Packet, dir: 'src' | 'dst' | undefined): number | undefined {
  if (packet.fragment) return undefined;
  if (PORTED.has(packet.proto)) return dir === 'src' ? packet.sport : packet.dport;
  if (packet.proto === 1) return (packet.icmpType << 8) | packet.icmpCode;
  return 0;
}

function testSet(s: CompiledSet, dims: readonly ('src' | 'dst')[], packet: Packet): boolean {
  if (dims.length < s.dimension) return false;
  const a = addrOf(packet, dims[0]);
  if (s.ips !== undefined) {
    if (s.ips.exact.has(a)) return true;
    for (const [from, to] of s.ips.intervals) if (a >= from && a <= to) return true;
    return false;
  }
  const port = s.dimension >= 2 ? portOf(packet, dims[1]) : 0;
  if (port === undefined) return false;
  const a2 = s.dimension === 3 ? addrOf(packet, dims[2]) : 0;
  for (const e of s.entries) {
    if (a < e.net.from || a > e.net.to) continue;
    if (e.port !== undefined && (e.port.proto !== packet.proto || port < e.port.from || port > e.port.to)) continue;
    if (e.ip2 !== undefined && (a2 < e.ip2.from || a2 > e.ip2.to)) continue;
    return !e.nomatch;
  }
  return false;
}

/**
 * Compiles ipsets into the lookup `EvalContext.ipsetHas` takes. Unknown set names give
 * `undefined` (the kernel refuses a rule naming a missing set; traces report it as unknown).
 *
 * @throws RangeError naming the set and member when a member is not valid for the set's type.
 * @example
 * const ipsetHas = ipsetLookup([{ name: 'allow', type: 'hash:net', members: ['198.51.100.0/24'] }]);
 * const ctx = { ...baseCtx, ipsetHas };
 */
export function ipsetLookup(sets: readonly IpSet[]): IpSetLookup {
  const byName = new Map<string, CompiledSet>();
  for (const set of sets) {
    if (byName.has(set.name)) throw new RangeError(`ipset ${set.name}: defined twice`);
    byName.set(set.name, compileSet(set));
  }
  return (name, dims, packet) => {
    const s = byName.get(name);
    return s === undefined ? undefined : testSet(s, dims, packet);
  };
}
