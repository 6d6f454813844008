import { describe, expect, it } from 'vitest';
import { parseCidr } from '@netsim/netfilter';
import { addAddr, addIface, addRoute, addRule, newHostConfig, setLinkUp, type HostConfig } from '../src/hostConfig.ts';
import { compileFib, fibLookup, formatRoute, selectSourceAddr, routeSource, addrTypeOf, formatRule, type FlowKey } from '../src/fib.ts';
import { ip } from './helpers.ts';

function node(): HostConfig {
  let c = newHostConfig('node');
  c = addIface(c, 'eth0', 'physical', { up: true });
  c = addAddr(c, 'eth0', ip('198.51.100.1'), 24);
  c = addAddr(c, 'eth0', ip('198.51.100.2'), 24);
  c = addIface(c, 'eth1', 'physical', { up: true });
  c = addAddr(c, 'eth1', ip('203.0.113.1'), 24);
  return c;
}

function fibOf(c: HostConfig): ReturnType<typeof compileFib> {
  return compileFib(c.ifaces, c.routes, c.rules);
}

function flow(dst: string, extra: Partial<FlowKey> = {}): FlowKey {
  return { dst: ip(dst), src: 0, iif: 'lo', oif: null, mark: 0, ...extra };
}

describe('routing tables', () => {
  it('should derive the kernel routes ip route show table all prints (checked on 6.18)', () => {
    expect(fibOf(node()).routes.map(formatRoute)).toEqual([
      'local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1',
      'local 127.0.0.0/8 dev lo table local proto kernel scope host src 127.0.0.1',
      'broadcast 127.255.255.255 dev lo table local proto kernel scope link src 127.0.0.1',
      'local 198.51.100.1 dev eth0 table local proto kernel scope host src 198.51.100.1',
      '198.51.100.0/24 dev eth0 proto kernel scope link src 198.51.100.1',
      'broadcast 198.51.100.255 dev eth0 table local proto kernel scope link src 198.51.100.1',
      'local 198.51.100.2 dev eth0 table local proto kernel scope host src 198.51.100.1',
      'local 203.0.113.1 dev eth1 table local proto kernel scope host src 203.0.113.1',
      '203.0.113.0/24 dev eth1 proto kernel scope link src 203.0.113.1',
      'broadcast 203.0.113.255 dev eth1 table local proto kernel scope link src 203.0.113.1',
    ]);
  });

  it('should keep local routes but drop connected and configured routes of a down interface', () => {
    let c = addRoute(node(), { dst: parseCidr('192.0.2.0/24'), via: ip('203.0.113.254') });
    c = setLinkUp(c, 'eth1', false);
    const routes = fibOf(c).routes.map(formatRoute);
    expect(routes).toContain('local 203.0.113.1 dev eth1 table local proto kernel scope host src 203.0.113.1');
    expect(routes.some((r) => r.startsWith('203.0.113.0/24'))).toBe(false);
    // The configured route is deleted for good: bringing the link up does not restore it.
    c = setLinkUp(c, 'eth1', true);
    expect(fibOf(c).routes.map(formatRoute).some((r) => r.startsWith('192.0.2.0/24'))).toBe(false);
  });

  it('should pick the longest prefix, then the lowest metric', () => {
    let c = node();
    c = addRoute(c, { dst: parseCidr('0.0.0.0/0'), via: ip('198.51.100.254') });
    c = addRoute(c, { dst: parseCidr('192.0.2.0/24'), via: ip('203.0.113.254'), metric: 100 });
    c = addRoute(c, { dst: parseCidr('192.0.2.0/24'), via: ip('198.51.100.253'), metric: 50 });
    c = addRoute(c, { dst: parseCidr('192.0.2.128/25'), via: ip('203.0.113.250') });
    const f = fibOf(c);
    const hop = (d: string): string => {
      const r = fibLookup(f, flow(d));
      return r.kind === 'route' ? `${r.route.dev ?? '?'} ${r.nexthop}` : r.error;
    };
    expect(hop('192.0.2.200')).toBe(`eth1 ${ip('203.0.113.250')}`);
    expect(hop('192.0.2.10')).toBe(`eth0 ${ip('198.51.100.253')}`);
    expect(hop('8.8.8.8')).toBe(`eth0 ${ip('198.51.100.254')}`);
    expect(hop('198.51.100.77')).toBe(`eth0 ${ip('198.51.100.77')}`);
  });

  it('should find local routes first and report no route as none', () => {
    const f = fibOf(node());
    const r = fibLookup(f, flow('198.51.100.2'));
    expect(r.kind === 'route' && r.route.type).toBe('local');
    expect(fibLookup(f, flow('192.0.2.1'))).toEqual({ kind: 'error', error: 'none' });
  });

  it('should follow policy rules by fwmark, source and iif, and continue past a table miss or throw', () => {
    let c = node();
    c = addRoute(c, { dst: parseCidr('0.0.0.0/0'), via: ip('198.51.100.254') });
    c = addRoute(c, { dst: parseCidr('0.0.0.0/0'), via: ip('203.0.113.254'), table: 100 });
    c = addRoute(c, { dst: parseCidr('192.0.2.0/24'), type: 'throw', table: 100 });
    c = addRule(c, { priority: 100, fwmark: { value: 0x10, mask: 0xff }, table: 100 });
    c = addRule(c, { priority: 200, from: parseCidr('203.0.113.1/32'), table: 100 });
    const f = fibOf(c);
    const dev = (fk: FlowKey): string => {
      const r = fibLookup(f, fk);
      return r.kind === 'route' ? (r.route.dev ?? '?') : r.error;
    };
    expect(dev(flow('8.8.8.8'))).toBe('eth0');
    expect(dev(flow('8.8.8.8', { mark: 0x110 }))).toBe('eth1');
    expect(dev(flow('8.8.8.8', { src: ip('203.0.113.1') }))).toBe('eth1');
    // throw in table 100 falls through to main.
    expect(dev(flow('192.0.2.9', { mark: 0x10 }))).toBe('eth0');
    expect(formatRule(f.rules[1]!)).toBe('100:\tfrom all fwmark 0x10/0xff lookup 100');
  });

  it('should return unreachable, blackhole and prohibit routes as errors', () => {
    let c = node();
    c = addRoute(c, { dst: parseCidr('192.0.2.0/25'), type: 'unreachable' });
    c = addRoute(c, { dst: parseCidr('192.0.2.128/26'), type: 'blackhole' });
    c = addRoute(c, { dst: parseCidr('192.0.2.192/26'), type: 'prohibit' });
    const f = fibOf(c);
    expect(fibLookup(f, flow('192.0.2.1'))).toMatchObject({ kind: 'error', error: 'unreachable' });
    expect(fibLookup(f, flow('192.0.2.130'))).toMatchObject({ kind: 'error', error: 'blackhole' });
    expect(fibLookup(f, flow('192.0.2.200'))).toMatchObject({ kind: 'error', error: 'prohibit' });
  });

  it('should choose a primary source address, preferring the next hop subnet, then other interfaces', () => {
    let c = node();
    c = addAddr(c, 'eth1', ip('192.0.2.1'), 24);
    const f = fibOf(c);
    expect(selectSourceAddr(f, 'eth1', ip('192.0.2.77'), 'global')).toBe(ip('192.0.2.1'));
    expect(selectSourceAddr(f, 'eth1', ip('10.0.0.1'), 'global')).toBe(ip('203.0.113.1'));
    // Secondaries are never chosen.
    expect(selectSourceAddr(f, 'eth0', ip('198.51.100.99'), 'global')).toBe(ip('198.51.100.1'));
    // An interface without addresses borrows the first global primary of the host (lo's 127.0.0.1 is scope host).
    let d = addIface(c, 'eth2', 'physical', { up: true });
    d = addRoute(d, { dst: parseCidr('10.9.0.0/16'), dev: 'eth2' });
    const fd = fibOf(d);
    expect(selectSourceAddr(fd, 'eth2', ip('10.9.0.1'), 'global')).toBe(ip('198.51.100.1'));
    const r = fibLookup(fd, flow('10.9.0.1'));
    expect(r.kind === 'route' && routeSource(fd, r)).toBe(ip('198.51.100.1'));
  });

  it('should classify addresses for addrtype', () => {
    const f = fibOf(node());
    expect(addrTypeOf(f, ip('198.51.100.2'))).toBe('LOCAL');
    expect(addrTypeOf(f, ip('127.0.0.5'))).toBe('LOCAL');
    expect(addrTypeOf(f, ip('198.51.100.255'))).toBe('BROADCAST');
    expect(addrTypeOf(f, ip('224.0.0.1'))).toBe('MULTICAST');
    expect(addrTypeOf(f, ip('192.0.2.1'))).toBe('UNICAST');
    expect(addrTypeOf(f, ip('255.255.255.255'))).toBe('BROADCAST');
    expect(addrTypeOf(f, ip('0.0.0.0'))).toBe('BROADCAST');
  });

  it('should classify for --limit-iface-in/out by the interface of the local route (inet_dev_addr_type, checked on 6.18)', () => {
    const f = fibOf(node());
    // eth0's broadcast on eth1 is UNICAST (real run: a datagram to 192.0.2.3 arriving on eth1
    // counted `--dst-type UNICAST --limit-iface-in`, not `--dst-type BROADCAST --limit-iface-in`).
    expect(addrTypeOf(f, ip('198.51.100.255'), 'eth1')).toBe('UNICAST');
    expect(addrTypeOf(f, ip('198.51.100.255'), 'eth0')).toBe('BROADCAST');
    expect(addrTypeOf(f, ip('198.51.100.2'), 'eth0')).toBe('LOCAL');
    expect(addrTypeOf(f, ip('198.51.100.2'), 'eth1')).toBe('UNICAST');
    expect(addrTypeOf(f, ip('127.0.0.1'), 'lo')).toBe('LOCAL');
    expect(addrTypeOf(f, ip('127.0.0.1'), 'eth0')).toBe('UNICAST');
    // Limited broadcast and multicast do not depend on the interface.
    expect(addrTypeOf(f, ip('255.255.255.255'), 'eth1')).toBe('BROADCAST');
    expect(addrTypeOf(f, ip('224.0.0.1'), 'eth1')).toBe('MULTICAST');
  });
});

describe('ip route add validation', () => {
  it('should refuse a gateway outside every connected subnet, with the kernel message', () => {
    expect(() => addRoute(node(), { dst: parseCidr('192.0.2.0/24'), via: ip('10.0.0.1') })).toThrow('Error: Nexthop has invalid gateway.');
    expect(() => addRoute(node(), { dst: parseCidr('192.0.2.0/24'), via: ip('203.0.113.9'), dev: 'eth0' })).toThrow(
      'Error: Nexthop has invalid gateway.',
    );
  });

  it('should accept an onlink gateway and fill the device from the gateway route', () => {
    const c = addRoute(node(), { dst: parseCidr('10.244.1.0/24'), via: ip('10.244.1.0'), dev: 'eth1', onlink: true });
    expect(c.routes.map(formatRoute)).toEqual(['10.244.1.0/24 via 10.244.1.0 dev eth1 onlink']);
    const d = addRoute(node(), { dst: parseCidr('192.0.2.0/24'), via: ip('203.0.113.9') });
    expect(d.routes.map(formatRoute)).toEqual(['192.0.2.0/24 via 203.0.113.9 dev eth1']);
  });

  it('should refuse a duplicate route and a device that is down', () => {
    const c = addRoute(node(), { dst: parseCidr('192.0.2.0/24'), via: ip('203.0.113.9') });
    expect(() => addRoute(c, { dst: parseCidr('192.0.2.0/24'), via: ip('203.0.113.8') })).toThrow('RTNETLINK answers: File exists');
    const d = setLinkUp(node(), 'eth1', false);
    expect(() => addRoute(d, { dst: parseCidr('192.0.2.0/24'), dev: 'eth1' })).toThrow('Error: Nexthop device is not up.');
  });
});
