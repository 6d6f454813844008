/**
 * The packet notation of `netsim trace --packet`:
 *
 *     PROTO SRC[:SPORT] > DST[:DPORT] [in IFACE] [out IFACE] [flags FLAG,…] [mark N]
 *                                     [type N] [code N] [len N] [frag]
 *
 * e.g. `tcp 203.0.113.7:40000 > 198.18.0.1:30080 in eth0`. PROTO is `tcp`, `udp`, `icmp`, `sctp` or
 * a protocol number. A TCP packet defaults to flags `SYN` (a connection's first packet), an ICMP
 * packet to type 8 code 0 (echo request). Errors name the column and the offending token.
 */
import { formatIpv4, tryParseIpv4, type Ipv4, type Packet } from '@netsim/netfilter';

export class PacketSpecError extends Error {
  override readonly name = 'PacketSpecError';
  constructor(
    message: string,
    readonly column: number,
    readonly token: string,
  ) {
    super(message);
  }
}

const PROTOS: { readonly [name: string]: number } = { icmp: 1, tcp: 6, udp: 17, sctp: 132 };
const TCP_FLAGS: { readonly [name: string]: number } = { FIN: 0x01, SYN: 0x02, RST: 0x04, PSH: 0x08, ACK: 0x10, URG: 0x20, ECE: 0x40, CWR: 0x80 };

interface Token {
  readonly text: string;
  readonly column: number;
}

function tokenize(spec: string): Token[] {
  const out: Token[] = [];
  const re = /\S+/g;
  for (let m = re.exec(spec); m !== null; m = re.exec(spec)) out.push({ text: m[0], column: m.index + 1 });
  return out;
}

function fail(t: Token | undefined, spec: string, what: string): never {
  if (t === undefined) throw new PacketSpecError(`packet "${spec}": ${what} at the end`, spec.length + 1, '');
  throw new PacketSpecError(`packet "${spec}": ${what} at column ${t.column}, got "${t.text}"`, t.column, t.text);
}

function int(t: Token | undefined, spec: string, what: string, max: number): number {
  const text = t?.text ?? '';
  const v = /^0x[0-9a-f]+$/i.test(text) ? Number.parseInt(text, 16) : /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(v) || v > max) fail(t, spec, `expected ${what}`);
  return v;
}

function endpoint(t: Token | undefined, spec: string, ported: boolean): { addr: Ipv4; port: number } {
  const text = t?.text ?? '';
  const colon = text.indexOf(':');
  const addrText = colon < 0 ? text : text.slice(0, colon);
  const addr = tryParseIpv4(addrText);
  if (addr === undefined) fail(t, spec, 'expected an IPv4 address');
  if (colon < 0) {
    if (ported) fail(t, spec, 'expected ADDRESS:PORT for this protocol');
    return { addr, port: 0 };
  }
  if (!ported) fail(t, spec, 'this protocol has no ports');
  const portText = text.slice(colon + 1);
  if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) > 65535) fail(t, spec, 'expected a port 0-65535 after ":"');
  return { addr, port: Number(portText) };
}

/**
 * Parses the packet notation into a {@link Packet}.
 *
 * @throws PacketSpecError naming the column and token.
 */
export function parsePacketSpec(spec: string): Packet {
  const toks = tokenize(spec);
  let i = 0;
  const protoTok = toks[i++];
  const protoText = protoTok?.text.toLowerCase() ?? '';
  const proto = PROTOS[protoText] ?? (/^[0-9]{1,3}$/.test(protoText) && Number(protoText) <= 255 ? Number(protoText) : undefined);
  if (proto === undefined) fail(protoTok, spec, 'expected a protocol (tcp, udp, icmp, sctp or a number)');
  const ported = proto === 6 || proto === 17 || proto === 132;
  const src = endpoint(toks[i++], spec, ported);
  const arrow = toks[i++];
  if (arrow?.text !== '>') fail(arrow, spec, 'expected ">" between source and destination');
  const dst = endpoint(toks[i++], spec, ported);
  let inIface: string | null = null;
  let outIface: string | null = null;
  let tcpFlags = proto === 6 ? 0x02 : 0;
  let mark = 0;
  let icmpType = proto === 1 ? 8 : 0;
  let icmpCode = 0;
  let lengthBytes = 60;
  let fragment = false;
  while (i < toks.length) {
    const key = toks[i++] as Token;
    switch (key.text) {
      case 'in':
      case 'out': {
        const v = toks[i++];
        if (v === undefined || !/^[A-Za-z0-9_.@-]{1,15}$/.test(v.text)) fail(v, spec, `expected an interface name after "${key.text}"`);
        if (key.text === 'in') inIface = v.text;
        else outIface = v.text;
        break;
      }
      case 'flags': {
        const v = toks[i++];
        if (proto !== 6) fail(key, spec, 'flags are only for tcp');
        tcpFlags = 0;
        for (const f of (v?.text ?? '').split(',')) {
          const bit = TCP_FLAGS[f.toUpperCase()];
          if (bit === undefined && f.toUpperCase() !== 'NONE') fail(v, spec, 'expected TCP flags such as SYN,ACK (or NONE)');
          tcpFlags |= bit ?? 0;
        }
        break;
      }
      case 'mark':
        mark = int(toks[i++], spec, 'a mark (decimal or 0x hex)', 0xffffffff);
        break;
      case 'type':
      case 'code': {
        if (proto !== 1) fail(key, spec, `"${key.text}" is only for icmp`);
        const v = int(toks[i++], spec, `an ICMP ${key.text} 0-255`, 255);
        if (key.text === 'type') icmpType = v;
        else icmpCode = v;
        break;
      }
      case 'len':
        lengthBytes = int(toks[i++], spec, 'a length in bytes', 65535);
        break;
      case 'frag':
        fragment = true;
        break;
      default:
        fail(key, spec, 'expected one of in, out, flags, mark, type, code, len, frag');
    }
  }
  return {
    src: src.addr,
    dst: dst.addr,
    proto,
    sport: src.port,
    dport: dst.port,
    tcpFlags,
    icmpType,
    icmpCode,
    inIface,
    outIface,
    mark: mark >>> 0,
    lengthBytes,
    fragment,
  };
}

/** The packet back in the notation, for headers and JSON. */
export function formatPacketSpec(p: Packet): string {
  const name = Object.entries(PROTOS).find(([, n]) => n === p.proto)?.[0] ?? String(p.proto);
  const ported = p.proto === 6 || p.proto === 17 || p.proto === 132;
  const ep = (a: number, port: number) => (ported ? `${formatIpv4(a)}:${port}` : formatIpv4(a));
  const parts = [name, ep(p.src, p.sport), '>', ep(p.dst, p.dport)];
  if (p.inIface !== null) parts.push('in', p.inIface);
  if (p.outIface !== null) parts.push('out', p.outIface);
  if (p.proto === 6 && p.tcpFlags !== 0x02) {
    const flags = Object.entries(TCP_FLAGS).filter(([, b]) => (p.tcpFlags & b) !== 0).map(([f]) => f);
    parts.push('flags', flags.length === 0 ? 'NONE' : flags.join(','));
  }
  if (p.proto === 1) parts.push('type', String(p.icmpType), 'code', String(p.icmpCode));
  if (p.mark !== 0) parts.push('mark', `0x${p.mark.toString(16)}`);
  if (p.fragment) parts.push('frag');
  return parts.join(' ');
}
