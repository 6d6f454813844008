import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { cidr, cidrContains, formatCidr, formatIpv4, ipv4, parseCidr, parseIpv4, tryParseCidr, tryParseIpv4 } from '../src/index.ts';

describe('ip', () => {
  it('should round-trip every uint32 through dotted-quad text', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), (n) => {
        expect(parseIpv4(formatIpv4(n))).toBe(n);
      }),
      { seed: 42 },
    );
  });

  it('should reject malformed addresses instead of guessing', () => {
    for (const bad of ['1.2.3', '1.2.3.4.5', '256.0.0.1', '1..2.3', ' 1.2.3.4', '1.2.3.4 ', '+1.2.3.4', '1.2.3.0x1']) {
      expect(tryParseIpv4(bad), bad).toBeUndefined();
    }
    expect(() => parseIpv4('10.0.0.256')).toThrow('invalid IPv4 address "10.0.0.256"');
  });

  it('should mask the address to the prefix as iptables does on input', () => {
    expect(formatCidr(parseCidr('10.244.1.7/16'))).toBe('10.244.0.0/16');
    expect(formatCidr(parseCidr('10.0.0.1'))).toBe('10.0.0.1/32');
    expect(formatCidr(parseCidr('1.2.3.4/0'))).toBe('0.0.0.0/0');
    expect(tryParseCidr('10.0.0.0/33')).toBeUndefined();
  });

  it('should test containment by prefix', () => {
    const c = cidr(ipv4(0x0af40100), 24);
    expect(cidrContains(c, parseIpv4('10.244.1.9'))).toBe(true);
    expect(cidrContains(c, parseIpv4('10.244.2.9'))).toBe(false);
    expect(cidrContains(parseCidr('0.0.0.0/0'), parseIpv4('255.255.255.255'))).toBe(true);
  });
});
