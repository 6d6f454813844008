import { describe, expect, it } from 'vitest';
import { addIface, getSysctl, newHostConfig, setSysctl, findIface } from '../src/hostConfig.ts';
import { effectiveRpFilter, parseSysctlKey } from '../src/sysctl.ts';

function withEth(): ReturnType<typeof newHostConfig> {
  return addIface(newHostConfig('h'), 'eth0', 'physical');
}

describe('sysctls', () => {
  it('should take the effective rp_filter as max(all, iface) like the kernel (checked on 6.18)', () => {
    // all, iface → mode; the same table was observed in a network namespace.
    const cases: [number, number, string][] = [
      [0, 0, 'off'],
      [0, 1, 'strict'],
      [1, 0, 'strict'],
      [2, 1, 'loose'],
      [1, 2, 'loose'],
      [0, 2, 'loose'],
      [2, 0, 'loose'],
    ];
    for (const [all, dev, mode] of cases) {
      let c = withEth();
      c = setSysctl(c, 'net.ipv4.conf.all.rp_filter', String(all));
      c = setSysctl(c, 'net.ipv4.conf.eth0.rp_filter', String(dev));
      expect(effectiveRpFilter(c.sysctls, findIface(c, 'eth0').conf).mode, `all=${all} eth0=${dev}`).toBe(mode);
    }
  });

  it('should treat any value other than 0 and 1 as loose, and keep it as written', () => {
    let c = withEth();
    c = setSysctl(c, 'net.ipv4.conf.eth0.rp_filter', '3');
    expect(getSysctl(c, 'net.ipv4.conf.eth0.rp_filter')).toBe('3');
    expect(effectiveRpFilter(c.sysctls, findIface(c, 'eth0').conf)).toEqual({ value: 3, mode: 'loose' });
  });

  it('should copy conf/default into an interface only when the interface is created', () => {
    let c = withEth();
    c = setSysctl(c, 'net.ipv4.conf.default.rp_filter', '1');
    expect(getSysctl(c, 'net.ipv4.conf.eth0.rp_filter')).toBe('0');
    c = addIface(c, 'eth1', 'physical');
    expect(getSysctl(c, 'net.ipv4.conf.eth1.rp_filter')).toBe('1');
  });

  it('should propagate ip_forward to all, default and every interface', () => {
    let c = withEth();
    c = setSysctl(c, 'net.ipv4.ip_forward', '1');
    expect(getSysctl(c, 'net.ipv4.conf.eth0.forwarding')).toBe('1');
    expect(getSysctl(c, 'net.ipv4.conf.default.forwarding')).toBe('1');
    expect(getSysctl(c, 'net.ipv4.conf.all.forwarding')).toBe('1');
    c = setSysctl(c, 'net.ipv4.conf.eth0.forwarding', '0');
    expect(getSysctl(c, 'net.ipv4.ip_forward')).toBe('1');
    expect(getSysctl(c, 'net.ipv4.conf.eth0.forwarding')).toBe('0');
  });

  it('should accept the slash form of a key and the netfilter timeouts', () => {
    let c = withEth();
    c = setSysctl(c, 'net/netfilter/nf_conntrack_tcp_timeout_established', '86400');
    expect(c.sysctls.ctTimeouts.tcpEstablished).toBe(86400);
    expect(getSysctl(c, 'net.ipv4.ip_local_port_range')).toBe('32768\t60999');
  });

  it('should fail like sysctl(8) on an unknown key or interface and on a non-integer value', () => {
    const c = withEth();
    expect(() => setSysctl(c, 'net.ipv4.conf.eth9.rp_filter', '1')).toThrow(
      'sysctl: cannot stat /proc/sys/net/ipv4/conf/eth9/rp_filter: No such file or directory',
    );
    expect(() => setSysctl(c, 'net.ipv4.conf.eth0.rp_filter', 'abc')).toThrow('sysctl: setting key "net.ipv4.conf.eth0.rp_filter": Invalid argument');
    expect(() => parseSysctlKey('net.ipv4.conf.eth0.bogus', ['eth0'])).toThrow('No such file or directory');
  });

  it('should resolve interface names containing dots', () => {
    expect(parseSysctlKey('net.ipv4.conf.eth0.100.rp_filter', ['eth0.100'])).toEqual({
      kind: 'conf',
      scope: { iface: 'eth0.100' },
      field: 'rpFilter',
    });
  });
});
