import { describe, expect, it } from 'vitest';
import { NodeIpam } from '../src/index.ts';

describe('NodeIpam', () => {
  it('should skip the network, gateway (.1) and broadcast addresses', () => {
    const ipam = new NodeIpam('198.18.1.0/29', 'lowest-free');
    const got = Array.from({ length: 6 }, (_, i) => ipam.allocate(`p${i}`));
    expect(got).toEqual(['198.18.1.2', '198.18.1.3', '198.18.1.4', '198.18.1.5', '198.18.1.6', undefined]);
    expect(ipam.free()).toBe(0);
  });

  it('should reuse a freed address at once under lowest-free', () => {
    const ipam = new NodeIpam('198.18.1.0/24', 'lowest-free');
    ipam.allocate('a');
    ipam.allocate('b');
    expect(ipam.release('198.18.1.2')).toBe(true);
    expect(ipam.allocate('c')).toBe('198.18.1.2');
  });

  it('should go round-robin like host-local: a freed address returns only after the rest of the range', () => {
    const ipam = new NodeIpam('198.18.1.0/29', 'round-robin');
    expect(ipam.allocate('a')).toBe('198.18.1.2');
    ipam.release('198.18.1.2');
    expect(ipam.allocate('b')).toBe('198.18.1.3');
    expect([ipam.allocate('c'), ipam.allocate('d'), ipam.allocate('e')]).toEqual(['198.18.1.4', '198.18.1.5', '198.18.1.6']);
    expect(ipam.allocate('f')).toBe('198.18.1.2'); // wrapped around
    expect(ipam.allocated().map((x) => x.owner)).toEqual(['f', 'b', 'c', 'd', 'e']);
  });

  it('should reject a bad CIDR, a tiny range and an unknown policy with clear errors', () => {
    expect(() => new NodeIpam('198.18.1.0', 'lowest-free')).toThrow('ipam: podCIDR "198.18.1.0" is not an IPv4 CIDR');
    expect(() => new NodeIpam('198.18.1.0/30', 'lowest-free')).toThrow(/too small/);
    expect(() => new NodeIpam('198.18.1.0/24', 'random' as 'lowest-free')).toThrow(/unknown policy "random"/);
  });
});
