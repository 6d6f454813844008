import { describe, expect, it } from 'vitest';
import { Host } from '../src/index.ts';

describe('host: address input errors', () => {
  it('should reject an invalid address with the ip tool message (checked on Linux), not a crash', () => {
    const h = new Host('n').addIface('eth0', 'physical');
    expect(() => h.addAddr('eth0', '198.51.100.300/24')).toThrow('Error: any valid prefix is expected rather than "198.51.100.300/24".');
    expect(() => h.addAddr('eth0', '198.51.100.3/33')).toThrow('Error: any valid prefix is expected rather than "198.51.100.3/33".');
  });

  it('should keep the host bits of a valid address as ip addr does', () => {
    const h = new Host('n').addIface('eth0', 'physical').addAddr('eth0', '198.51.100.3/24');
    expect(h.formatAddrs()).toContain('198.51.100.3/24');
  });
});
