import { describe, expect, it } from 'vitest';
import { append, emptyRuleset, rule, T } from './rules.ts';
import { nodeWorld } from './topo.ts';

describe('host stack', () => {
  it('should answer a SYN to a closed port with RST,ACK from the stack', () => {
    const w = nodeWorld();
    const r = w.net.connect('client', '203.0.113.9', 8081, { nowMs: 0, synRetries: 0 });
    expect(r.kind === 'reset' && r.by).toBe('pod (nothing listens on tcp port 8081)');
    const rst = r.trace.find((s) => s.kind === 'wire' && s.from.host === 'pod');
    expect(rst?.kind === 'wire' && rst.packet.flags).toBe('RST,ACK');
  });

  it('should answer a datagram to a closed UDP port with ICMP port unreachable (ECONNREFUSED on a connected socket)', () => {
    const w = nodeWorld();
    const r = w.net.udp('client', '203.0.113.9', 5000, { nowMs: 0 });
    expect(r.kind === 'unreachable' && [r.errno, r.icmp, r.by]).toEqual(['ECONNREFUSED', 'port-unreachable', 'pod (nothing listens on udp port 5000)']);
  });

  it('should let a silent UDP listener take a datagram without answering', () => {
    const w = nodeWorld();
    w.pod.run('listen udp 514 silent');
    const r = w.net.udp('client', '203.0.113.9', 514, { nowMs: 0 });
    expect(r.kind).toBe('no-answer');
    expect(r.drops).toEqual([]);
  });

  it('should source a UDP reply from a wildcard socket by routing, not from the address the client targeted (seen on 6.18)', () => {
    const w = nodeWorld();
    w.node.run('ip addr add 198.51.100.11/24 dev eth0', 'listen udp 5300');
    const r = w.net.udp('client', '198.51.100.11', 5300, { nowMs: 0, sport: 41002 });
    // The reply leaves from the primary 198.51.100.10; the connected client socket does not take it.
    expect(r.kind).toBe('no-answer');
    expect(r.kind === 'no-answer' && r.strayReplies).toEqual(['datagram from 198.51.100.10:5300 to 192.0.2.10:41002: nothing listens on udp port 41002']);
    // A socket bound to the secondary address answers from it.
    w.node.unlisten('udp', 5300).run('listen udp 198.51.100.11:5300');
    expect(w.net.udp('client', '198.51.100.11', 5300, { nowMs: 10, sport: 41003 }).kind).toBe('answered');
  });

  it('should answer a TCP SYN to a secondary address from that address (the socket is bound by the SYN)', () => {
    const w = nodeWorld();
    w.node.run('ip addr add 198.51.100.11/24 dev eth0', 'listen tcp 22');
    const r = w.net.connect('client', '198.51.100.11', 22, { nowMs: 0, synRetries: 0 });
    expect(r.kind === 'established' && r.server?.local).toBe('198.51.100.11:22');
  });

  it('should reset data sent on a connection the peer no longer has', () => {
    const w = nodeWorld();
    const r = w.net.connect('client', '203.0.113.9', 8080, { nowMs: 0, synRetries: 0 });
    if (r.kind !== 'established') throw new Error(r.kind);
    for (const s of w.pod.sockets.listTcp()) w.pod.sockets.closeTcp(s);
    const d = w.net.sendData(r.connection, { nowMs: 100 });
    expect(d.kind === 'reset' && d.by).toBe('pod (no connection 203.0.113.9:8080 <-> 192.0.2.10:' + r.connection.local.split(':')[1] + ')');
  });
});

describe('policy routing', () => {
  it('should route by fwmark set in mangle PREROUTING (ip rule fwmark … lookup)', () => {
    const w = nodeWorld();
    w.node.run('ip addr add 198.18.0.10/24 dev eth1', 'ip route add default via 198.18.0.1 table 100', 'ip rule add fwmark 0x2/0x2 lookup 100 priority 100');
    w.node.setRuleset(append(emptyRuleset(), 'mangle', 'PREROUTING', rule({ i: 'eth0', p: 'tcp', dport: 9 }, T.orMark(2))));
    const r = w.net.connect('client', '198.18.0.99', 9, { nowMs: 0, synRetries: 0 });
    const route = r.trace.find((s) => s.kind === 'route' && s.host === 'node');
    expect(route?.kind === 'route' && [route.iface, route.nexthop, route.result]).toEqual(['eth1', '198.18.0.1', 'unicast via 198.18.0.1 dev eth1 (table 100, rule 100)']);
  });

  it('should re-route a local packet whose mark mangle OUTPUT changed', () => {
    const w = nodeWorld();
    w.node.run('ip addr add 198.18.0.10/24 dev eth1', 'ip route add 192.0.2.0/24 via 198.18.0.1 table 100', 'ip rule add fwmark 0x1 lookup 100 priority 100');
    w.node.setRuleset(append(emptyRuleset(), 'mangle', 'OUTPUT', rule({ p: 'tcp', dport: 7 }, T.mark(1))));
    const r = w.net.connect('node', '192.0.2.10', 7, { nowMs: 0, synRetries: 0 });
    const routes = r.trace.filter((s) => s.kind === 'route' && s.host === 'node').map((s) => (s.kind === 'route' ? `${s.lookup} ${s.iface ?? '-'}` : ''));
    expect(routes.slice(0, 2)).toEqual(['output eth0', 'reroute eth1']);
  });
});

describe('host stack and broadcasts', () => {
  it('should neither answer nor reset a TCP SYN to a subnet broadcast', () => {
    const w = nodeWorld();
    w.node.run('listen tcp 80');
    const r = w.net.connect('client', '203.0.113.255', 80, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('timed-out');
    expect(r.trace.some((s) => s.kind === 'stack' && s.host === 'node' && s.event === 'ignored' && s.detail.includes('to the broadcast 203.0.113.255:80'))).toBe(true);
  });

  it('should take a broadcast datagram on a listening port and drop one to a closed port without ICMP', () => {
    const w = nodeWorld();
    w.node.run('listen udp 514 silent');
    expect(w.net.udp('client', '203.0.113.255', 514, { nowMs: 0 }).kind).toBe('no-answer');
    const closed = w.net.udp('client', '203.0.113.255', 5000, { nowMs: 10 });
    expect(closed.kind).toBe('no-answer');
    expect(closed.trace.some((s) => s.kind === 'stack' && s.host === 'node' && s.event === 'port-unreachable')).toBe(false);
  });
});
