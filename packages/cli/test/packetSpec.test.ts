import { describe, expect, it } from 'vitest';
import { makePacket, parseIpv4 } from '@netsim/netfilter';
import { formatPacketSpec, parsePacketSpec, PacketSpecError } from '../src/packetSpec.ts';

describe('parsePacketSpec', () => {
  it('should parse the README example into a TCP SYN arriving on eth0', () => {
    const p = parsePacketSpec('tcp 203.0.113.7:40000 > 198.18.0.1:30080 in eth0');
    expect(p).toEqual(
      makePacket({ src: parseIpv4('203.0.113.7'), dst: parseIpv4('198.18.0.1'), dport: 30080, inIface: 'eth0' }),
    );
  });

  it('should parse options: out, flags, mark, icmp type and code, len, frag', () => {
    const t = parsePacketSpec('tcp 10.0.0.1:1 > 10.0.0.2:2 out eth1 flags ACK,psh mark 0x4000 len 1500 frag');
    expect(t).toMatchObject({ outIface: 'eth1', tcpFlags: 0x18, mark: 0x4000, lengthBytes: 1500, fragment: true });
    expect(parsePacketSpec('icmp 10.0.0.1 > 10.0.0.2 type 3 code 3')).toMatchObject({ proto: 1, icmpType: 3, icmpCode: 3, sport: 0, dport: 0 });
    expect(parsePacketSpec('icmp 10.0.0.1 > 10.0.0.2')).toMatchObject({ icmpType: 8, icmpCode: 0 });
    expect(parsePacketSpec('47 10.0.0.1 > 10.0.0.2')).toMatchObject({ proto: 47, tcpFlags: 0 });
  });

  it('should round-trip through formatPacketSpec', () => {
    for (const s of ['tcp 203.0.113.7:40000 > 198.18.0.1:30080 in eth0', 'udp 10.0.0.1:53 > 10.0.0.2:5353 out eth1 mark 0x1', 'icmp 10.0.0.1 > 10.0.0.2 type 0 code 0']) {
      expect(formatPacketSpec(parsePacketSpec(s))).toBe(s);
    }
  });

  it('should name the column and token of bad input', () => {
    const err = (s: string) => {
      try {
        parsePacketSpec(s);
      } catch (e) {
        if (e instanceof PacketSpecError) return [e.message, e.column, e.token];
        throw e;
      }
      throw new Error(`accepted ${s}`);
    };
    expect(err('tcpp 1.2.3.4 > 5.6.7.8')).toEqual(['packet "tcpp 1.2.3.4 > 5.6.7.8": expected a protocol (tcp, udp, icmp, sctp or a number) at column 1, got "tcpp"', 1, 'tcpp']);
    expect(err('tcp 1.2.3:80 > 5.6.7.8:1')[1]).toBe(5);
    expect(err('tcp 1.2.3.4:80 5.6.7.8:1')[0]).toContain('expected ">" between source and destination at column 16');
    expect(err('tcp 1.2.3.4:80 > 5.6.7.8:70000')[0]).toContain('expected a port 0-65535');
    expect(err('icmp 1.2.3.4:1 > 5.6.7.8')[0]).toContain('this protocol has no ports');
    expect(err('tcp 1.2.3.4:1 > 5.6.7.8')).toEqual(['packet "tcp 1.2.3.4:1 > 5.6.7.8": expected ADDRESS:PORT for this protocol at column 17, got "5.6.7.8"', 17, '5.6.7.8']);
    expect(err('tcp 1.2.3.4:80 > 5.6.7.8:1 in')[0]).toContain('expected an interface name after "in" at the end');
    expect(err('tcp 1.2.3.4:80 > 5.6.7.8:1 flags SYN,BOGUS')[2]).toBe('SYN,BOGUS');
    expect(err('tcp 1.2.3.4:80 > 5.6.7.8:1 colour red')[0]).toContain('expected one of in, out');
    expect(err('')[0]).toContain('expected a protocol');
  });
});
