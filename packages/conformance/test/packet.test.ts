import { describe, expect, it } from 'vitest';
import { parseIpv4 as ip } from '@netsim/netfilter';
import { buildIpv4, describePacket, ethernetFrame, formatTcpFlags, fromHex, parseFrame, parseIpv4, PROTO_ICMP, PROTO_TCP, PROTO_UDP, TCP, type PacketSpec } from '../src/packet.ts';

const base: PacketSpec = { src: ip('192.0.2.2'), dst: ip('198.18.0.5'), proto: PROTO_TCP, sport: 40000, dport: 80, tcpFlags: TCP.SYN, icmpType: 0, icmpCode: 0, icmpId: 0 };

/** The Internet checksum over a range: 0 when the stored checksum is right. */
function verify(b: Uint8Array, from: number, to: number, pseudo = 0): number {
  let s = pseudo;
  for (let i = from; i < to; i += 2) s += ((b[i] ?? 0) << 8) | (i + 1 < to ? (b[i + 1] ?? 0) : 0);
  while (s > 0xffff) s = (s & 0xffff) + (s >>> 16);
  return ~s & 0xffff;
}

function pseudoHeader(b: Uint8Array): number {
  let s = 0;
  for (let i = 12; i < 20; i += 2) s += ((b[i] ?? 0) << 8) | (b[i + 1] ?? 0);
  return s + (b[9] ?? 0) + (b.length - 20);
}

describe('packet', () => {
  it('should build TCP, UDP and ICMP packets whose IP and L4 checksums verify', () => {
    for (const spec of [base, { ...base, proto: PROTO_UDP, tcpFlags: 0 }, { ...base, proto: PROTO_ICMP, sport: 0, dport: 0, icmpType: 8, icmpId: 7 }] as PacketSpec[]) {
      const b = buildIpv4(spec, 3);
      expect(verify(b, 0, 20)).toBe(0);
      expect(verify(b, 20, b.length, spec.proto === PROTO_ICMP ? 0 : pseudoHeader(b))).toBe(0);
      expect(b[8]).toBe(64);
    }
  });

  it('should read back the addresses, ports, flags and ICMP fields it wrote', () => {
    const tcp = parseIpv4(buildIpv4({ ...base, tcpFlags: TCP.SYN | TCP.ACK }));
    expect(tcp).toMatchObject({ src: ip('192.0.2.2'), dst: ip('198.18.0.5'), proto: 6, sport: 40000, dport: 80, tcpFlags: TCP.SYN | TCP.ACK, totalLength: 40 });
    const icmp = parseIpv4(buildIpv4({ ...base, proto: PROTO_ICMP, icmpType: 8, icmpId: 7 }));
    expect(icmp).toMatchObject({ proto: 1, icmpType: 8, icmpCode: 0, sport: 7, dport: 7 });
  });

  it('should parse a captured frame and an ICMP error with the packet it quotes', () => {
    // A real frame from the lab: port unreachable from the node to the client, quoting a TCP SYN.
    const quoted = buildIpv4({ ...base, dport: 82 });
    const err = new Uint8Array(20 + 8 + quoted.length);
    err.set(buildIpv4({ ...base, src: ip('192.0.2.1'), dst: ip('192.0.2.2'), proto: PROTO_ICMP, icmpType: 3, icmpCode: 3 }).subarray(0, 20));
    err[9] = 1;
    err[20] = 3;
    err[21] = 3;
    err.set(quoted, 28);
    const f = parseFrame(ethernetFrame('02:00:5e:00:01:02', '02:00:5e:00:01:01', err));
    expect(f.dstMac).toBe('02:00:5e:00:01:02');
    expect(f.ethertype).toBe(0x0800);
    expect(f.ip?.icmpType).toBe(3);
    expect(f.ip?.quoted).toMatchObject({ src: ip('192.0.2.2'), dst: ip('198.18.0.5'), sport: 40000, dport: 82, tcpFlags: TCP.SYN });
  });

  it('should parse a frame captured in the lab byte for byte', () => {
    // MASQUERADEd UDP leaving vethpod, as the capture socket returned it.
    const f = parseFrame(fromHex('02005e00030202005e000301080045000020000100003f1103c8cb007101cb0071029c401f90000cf77b6e636621'));
    expect(f.ip === undefined ? '' : describePacket(f.ip)).toBe('udp 203.0.113.1:40000 > 203.0.113.2:8080');
    expect(f.ip?.ttl).toBe(63);
  });

  it('should describe packets and flags in one readable line', () => {
    expect(describePacket({ ...base, tcpFlags: TCP.FIN | TCP.ACK })).toBe('tcp 192.0.2.2:40000 > 198.18.0.5:80 [ACK,FIN]');
    expect(formatTcpFlags(0)).toBe('none');
    expect(describePacket({ ...base, proto: PROTO_ICMP, icmpType: 8, sport: 7, dport: 7 })).toBe('icmp 192.0.2.2 > 198.18.0.5 type 8 code 0 id 7');
    expect(describePacket({ ...base, proto: PROTO_ICMP, icmpType: 3, icmpCode: 1, sport: 0, dport: 0 })).toBe('icmp 192.0.2.2 > 198.18.0.5 type 3 code 1');
  });

  it('should refuse a malformed MAC address', () => {
    expect(() => ethernetFrame('02:00:5e:00:01', '02:00:5e:00:01:01', new Uint8Array(20))).toThrow(/invalid MAC address "02:00:5e:00:01"/);
  });
});
