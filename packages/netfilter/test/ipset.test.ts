import { describe, expect, it } from 'vitest';
import { ipsetLookup, type IpSet } from '../src/index.ts';
import { pkt } from './evalHelpers.ts';

const one = (set: Omit<IpSet, 'name'>) => ipsetLookup([{ name: 'S', ...set }]);

describe('ipsetLookup', () => {
  it('should answer undefined for a set that does not exist', () => {
    expect(one({ type: 'hash:ip', members: [] })('OTHER', ['src'], pkt())).toBeUndefined();
  });

  it('should test hash:ip members, including ranges and CIDRs added as individual addresses', () => {
    const has = one({ type: 'hash:ip', members: ['203.0.113.7', '192.0.2.0/30', '198.51.100.10-198.51.100.20 timeout 300'] });
    expect(has('S', ['src'], pkt())).toBe(true);
    expect(has('S', ['dst'], pkt())).toBe(false);
    expect(has('S', ['src'], pkt({ src: '192.0.2.3' }))).toBe(true);
    expect(has('S', ['src'], pkt({ src: '192.0.2.4' }))).toBe(false);
    expect(has('S', ['src'], pkt({ src: '198.51.100.20' }))).toBe(true);
    expect(has('S', ['src'], pkt({ src: '198.51.100.21' }))).toBe(false);
  });

  it('should test hash:net by prefix, the most specific entry deciding, so nomatch carves out an exception', () => {
    const has = one({ type: 'hash:net', members: ['10.0.0.0/8', '10.1.0.0/16 nomatch', '10.1.2.0/24'] });
    expect(has('S', ['src'], pkt({ src: '10.9.9.9' }))).toBe(true);
    expect(has('S', ['src'], pkt({ src: '10.1.9.9' }))).toBe(false);
    expect(has('S', ['src'], pkt({ src: '10.1.2.9' }))).toBe(true);
    expect(has('S', ['src'], pkt({ src: '11.0.0.1' }))).toBe(false);
  });

  it('should test hash:ip,port with the protocol and the port of the chosen direction', () => {
    const has = one({ type: 'hash:ip,port', members: ['198.18.0.1,tcp:80', '198.18.0.1,udp:53', '198.18.0.2,8080'] });
    expect(has('S', ['dst', 'dst'], pkt({ dport: 80 }))).toBe(true);
    expect(has('S', ['dst', 'src'], pkt({ dport: 80 }))).toBe(false);
    expect(has('S', ['dst', 'dst'], pkt({ proto: 17, dport: 80 }))).toBe(false);
    expect(has('S', ['dst', 'dst'], pkt({ proto: 17, dport: 53 }))).toBe(true);
    expect(has('S', ['dst', 'dst'], pkt({ dst: '198.18.0.2', dport: 8080 }))).toBe(true);
  });

  it('should never match when the match names fewer directions than the set has dimensions', () => {
    const has = one({ type: 'hash:ip,port', members: ['198.18.0.1,tcp:80'] });
    expect(has('S', ['dst'], pkt({ dport: 80 }))).toBe(false);
    // Extra directions are ignored.
    expect(one({ type: 'hash:ip', members: ['198.18.0.1'] })('S', ['dst', 'src', 'src'], pkt())).toBe(true);
  });

  it('should use ICMP type/code as the port and give fragments no port', () => {
    const has = one({ type: 'hash:ip,port', members: ['198.18.0.1,icmp:echo-request', '198.18.0.1,icmp:3/3', '198.18.0.1,tcp:80'] });
    expect(has('S', ['dst', 'dst'], pkt({ proto: 1, icmpType: 8, icmpCode: 0 }))).toBe(true);
    expect(has('S', ['dst', 'dst'], pkt({ proto: 1, icmpType: 3, icmpCode: 3 }))).toBe(true);
    expect(has('S', ['dst', 'dst'], pkt({ proto: 1, icmpType: 3, icmpCode: 1 }))).toBe(false);
    expect(has('S', ['dst', 'dst'], pkt({ dport: 80, fragment: true }))).toBe(false);
  });

  it('should test hash:net,port and hash:ip,port,ip', () => {
    const np = one({ type: 'hash:net,port', members: ['198.18.0.0/16,tcp:30000-32767'] });
    expect(np('S', ['dst', 'dst'], pkt({ dport: 30080 }))).toBe(true);
    expect(np('S', ['dst', 'dst'], pkt({ dport: 80 }))).toBe(false);
    const ipi = one({ type: 'hash:ip,port,ip', members: ['198.18.0.1,tcp:80,203.0.113.7'] });
    expect(ipi('S', ['dst', 'dst', 'src'], pkt())).toBe(true);
    expect(ipi('S', ['dst', 'dst', 'dst'], pkt())).toBe(false);
  });

  it('should reject bad members with a message naming the set and member', () => {
    expect(() => one({ type: 'hash:ip', members: ['10.0.0.300'] })).toThrow('ipset S (hash:ip): bad member "10.0.0.300": "10.0.0.300" is not an IPv4 address');
    expect(() => one({ type: 'hash:ip,port', members: ['10.0.0.1'] })).toThrow(/has 2 part\(s\)/);
    expect(() => one({ type: 'hash:ip,port', members: ['10.0.0.1,foo:1'] })).toThrow(/unknown protocol "foo"/);
    expect(() => one({ type: 'hash:ip', members: ['10.0.0.1 nomatch'] })).toThrow(/nomatch is only valid/);
    expect(() => ipsetLookup([{ name: 'S', type: 'hash:ip', members: [] }, { name: 'S', type: 'hash:net', members: [] }])).toThrow(/defined twice/);
  });
});
