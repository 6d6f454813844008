import { describe, expect, it } from 'vitest';
import { makePacket, parseIpv4 } from '../src/index.ts';

describe('makePacket', () => {
  it('should fill every field with the defaults of a first TCP SYN', () => {
    expect(makePacket({ src: parseIpv4('203.0.113.7'), dst: parseIpv4('198.18.0.1') })).toEqual({
      src: parseIpv4('203.0.113.7'),
      dst: parseIpv4('198.18.0.1'),
      proto: 6,
      sport: 40000,
      dport: 80,
      tcpFlags: 0x02,
      icmpType: 0,
      icmpCode: 0,
      inIface: null,
      outIface: null,
      mark: 0,
      lengthBytes: 60,
      fragment: false,
    });
  });

  it('should let every given field win over its default', () => {
    const p = makePacket({ src: parseIpv4('192.0.2.1'), dst: parseIpv4('192.0.2.2'), proto: 17, dport: 53, tcpFlags: 0, inIface: 'eth1', mark: 0x4000 });
    expect(p).toMatchObject({ proto: 17, dport: 53, tcpFlags: 0, inIface: 'eth1', mark: 0x4000, sport: 40000 });
  });
});
