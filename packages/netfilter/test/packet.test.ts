import { describe, expect, it } from 'vitest';
import { makePacket, parseIpv4 } from '../src/index.ts';

describe('makePacket', () => {
  it('should fill every field with the defaults of a first TCP SYN', () => {
    const p = makePacket({ src: parseIpv4('203.0.113.7'), dst: parseIpv4('198.18.0.1') });
    expect(Object.keys(p).sort()).toEqual(
      ['dport', 'dst', 'fragment', 'icmpCode', 'icmpType', 'inIface', 'lengthBytes', 'mark', 'outIface', 'proto', 'sport', 'src', 'tcpFlags'],
    );
    expect([p.src, p.dst]).toEqual([parseIpv4('203.0.113.7'), parseIpv4('198.18.0.1')]);
    expect([p.proto, p.sport, p.dport, p.tcpFlags, p.icmpType, p.icmpCode]).toEqual([6, 40000, 80, 0x02, 0, 0]);
    expect([p.inIface, p.outIface, p.mark, p.lengthBytes, p.fragment]).toEqual([null, null, 0, 60, false]);
  });

  it('should let every given field win over its default', () => {
    const p = makePacket({ src: parseIpv4('192.0.2.1'), dst: parseIpv4('192.0.2.2'), proto: 17, dport: 53, tcpFlags: 0, inIface: 'eth1', mark: 0x4000 });
    expect(p).toMatchObject({ proto: 17, dport: 53, tcpFlags: 0, inIface: 'eth1', mark: 0x4000, sport: 40000 });
  });
});
