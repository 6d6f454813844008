import { describe, expect, it } from 'vitest';
import { addIfaceAddr, delIfaceAddr, formatIfaceAddr, validateIfaceName, type Iface } from '../src/iface.ts';
import { KERNEL_IFACE_CONF } from '../src/sysctl.ts';
import { isKernelError } from '../src/errors.ts';
import { ip } from './helpers.ts';

function eth0(): Iface {
  return { name: 'eth0', index: 2, kind: 'physical', up: true, addrs: [], conf: KERNEL_IFACE_CONF };
}

function add(i: Iface, a: string, p: number): Iface {
  return { ...i, addrs: addIfaceAddr(i, ip(a), p) };
}

describe('interface addresses', () => {
  it('should make an address in an existing subnet with the same prefix secondary, as ip addr does', () => {
    let i = add(eth0(), '198.51.100.5', 24);
    i = add(i, '198.51.100.6', 24);
    i = add(i, '198.51.100.7', 25);
    // Verified on Linux 6.18: .5/24 primary, .7/25 primary (other mask), .6/24 secondary listed last.
    expect(i.addrs.map((a) => `${formatIfaceAddr(a)}${a.secondary ? ' secondary' : ''}`)).toEqual([
      '198.51.100.5/24',
      '198.51.100.7/25',
      '198.51.100.6/24 secondary',
    ]);
  });

  it('should refuse the same address twice with the kernel message', () => {
    const i = add(eth0(), '198.51.100.5', 24);
    expect(() => add(i, '198.51.100.5', 24)).toThrow('Error: ipv4: Address already assigned.');
  });

  it('should delete the secondaries of a deleted primary (promote_secondaries=0)', () => {
    let i = add(eth0(), '198.51.100.5', 24);
    i = add(i, '198.51.100.6', 24);
    i = add(i, '198.51.100.7', 25);
    const addrs = delIfaceAddr(i, ip('198.51.100.5'), 24);
    expect(addrs.map(formatIfaceAddr)).toEqual(['198.51.100.7/25']);
  });

  it('should delete only the secondary when a secondary is deleted', () => {
    let i = add(eth0(), '198.51.100.5', 24);
    i = add(i, '198.51.100.6', 24);
    expect(delIfaceAddr(i, ip('198.51.100.6'), 24).map(formatIfaceAddr)).toEqual(['198.51.100.5/24']);
  });

  it('should fail to delete an address that is not there', () => {
    expect(() => delIfaceAddr(eth0(), ip('198.51.100.5'), 24)).toThrow('Error: ipv4: Address not found.');
  });

  it('should reject interface names ip link rejects, with a typed error', () => {
    for (const bad of ['', 'a/b', 'has space', 'x'.repeat(16)]) {
      let err: unknown;
      try {
        validateIfaceName(bad);
      } catch (e) {
        err = e;
      }
      expect(isKernelError(err) && err.code === 'config').toBe(true);
    }
    expect(() => validateIfaceName('eth0.100')).not.toThrow();
  });
});
