import { describe, expect, it } from 'vitest';
import { BUILTIN_CHAINS, TABLE_NAMES, type Match, type Packet, type Ruleset } from '@netsim/netfilter';
import { traceHostPacket } from '../src/hostTrace.ts';
import type { TraceStep } from '../src/trace.ts';
import { append, emptyRuleset, M, rule, T } from './rules.ts';
import { Network } from '../src/network.ts';
import { ip, seeded } from './helpers.ts';
import { host, nodeWorld } from './topo.ts';

/** A target-less (counting) rule in every built-in chain, so every walk shows in the trace. */
function countingEverywhere(base: Ruleset = emptyRuleset()): Ruleset {
  let rs = base;
  for (const t of TABLE_NAMES) for (const c of BUILTIN_CHAINS[t]) rs = append(rs, t, c, rule({}));
  return rs;
}

function walks(trace: readonly TraceStep[], host: string): string[] {
  return trace.flatMap((s) => {
    if (s.kind === 'wire' || s.host !== host) return [];
    if (s.kind === 'table') return [`${s.table} ${s.hook}`];
    if (s.kind === 'nat-skip') return [`(nat ${s.hook} skipped: ${s.reason})`];
    if (s.kind === 'route') return [`route ${s.lookup}`];
    if (s.kind === 'enter') return [`enter ${s.via}`];
    return [];
  });
}

const DNAT_30080 = rule({ p: 'tcp', dport: 30080, m: [M.dstLocal()] }, T.dnat('203.0.113.9:8080'));

describe('hook order', () => {
  it('should walk a forwarded packet through PREROUTING, routing, FORWARD and POSTROUTING', () => {
    const w = nodeWorld();
    w.node.setRuleset(append(countingEverywhere(), 'nat', 'PREROUTING', DNAT_30080));
    const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('established');
    const firstSyn = walks(r.trace, 'node').slice(0, 9);
    expect(firstSyn).toEqual([
      'enter wire',
      'raw PREROUTING',
      'mangle PREROUTING',
      'nat PREROUTING',
      'route input',
      'mangle FORWARD',
      'filter FORWARD',
      'mangle POSTROUTING',
      'nat POSTROUTING',
    ]);
  });

  it('should walk the nat chains only for the first packet of a connection, in both directions', () => {
    const w = nodeWorld();
    w.node.setRuleset(append(countingEverywhere(), 'nat', 'PREROUTING', DNAT_30080));
    const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    const node = walks(r.trace, 'node');
    // SYN: both nat walks; SYN-ACK and ACK: skipped, binding reused.
    expect(node.filter((s) => s.startsWith('nat '))).toEqual(['nat PREROUTING', 'nat POSTROUTING']);
    expect(node.filter((s) => s.includes('skipped'))).toEqual([
      '(nat PREROUTING skipped: binding-exists)',
      '(nat POSTROUTING skipped: binding-exists)',
      '(nat PREROUTING skipped: binding-exists)',
      '(nat POSTROUTING skipped: binding-exists)',
    ]);
  });

  it('should deliver a packet for this host through PREROUTING, routing and INPUT (mangle, filter, nat)', () => {
    const w = nodeWorld();
    w.node.setRuleset(countingEverywhere()).run('listen tcp 22');
    const r = w.net.connect('client', '198.51.100.10', 22, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('established');
    expect(walks(r.trace, 'node').slice(0, 8)).toEqual([
      'enter wire',
      'raw PREROUTING',
      'mangle PREROUTING',
      'nat PREROUTING',
      'route input',
      'mangle INPUT',
      'filter INPUT',
      'nat INPUT',
    ]);
  });

  it('should send a local packet through OUTPUT then POSTROUTING, and loop a packet to itself back through lo without nat (as the kernel did)', () => {
    const w = nodeWorld();
    w.node.setRuleset(countingEverywhere()).run('listen tcp 9999');
    const r = w.net.connect('node', '198.51.100.10', 9999, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('established');
    // Checked in a namespace: raw/mangle PREROUTING -i lo and mangle/filter INPUT count the SYN,
    // nat PREROUTING and nat INPUT do not.
    expect(walks(r.trace, 'node').slice(0, 15)).toEqual([
      'enter local',
      'route output',
      'raw OUTPUT',
      'mangle OUTPUT',
      'nat OUTPUT',
      'filter OUTPUT',
      'mangle POSTROUTING',
      'nat POSTROUTING',
      'enter loopback',
      'raw PREROUTING',
      'mangle PREROUTING',
      '(nat PREROUTING skipped: binding-exists)',
      'mangle INPUT',
      'filter INPUT',
      '(nat INPUT skipped: binding-exists)',
    ]);
  });

  it('should re-route a local packet after OUTPUT DNAT changed its destination', () => {
    const w = nodeWorld();
    w.node.setRuleset(append(emptyRuleset(), 'nat', 'OUTPUT', DNAT_30080));
    const r = w.net.connect('node', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('established');
    const routes = r.trace.filter((s) => s.kind === 'route' && s.host === 'node').slice(0, 2);
    expect(routes.map((s) => (s.kind === 'route' ? `${s.lookup} ${s.dst} ${s.iface ?? '-'}` : ''))).toEqual([
      'output 198.51.100.10 lo',
      'reroute 203.0.113.9 eth1',
    ]);
    expect(r.kind === 'established' && r.server).toMatchObject({ host: 'pod', local: '203.0.113.9:8080' });
    expect(r.kind === 'established' && r.server?.peer).toMatch(/^198\.51\.100\.10:/);
  });

  it('should let every OUTPUT table see the first route\'s -o and only POSTROUTING the re-routed one (checked on 6.18)', () => {
    // The conformance lab's node: eth0 toward the client (default route), eth1 toward 198.18.0.0/16, vethpod toward the Pod.
    const net = new Network({ rng: seeded(1) });
    const node = host(
      net,
      'node',
      { eth0: '192.0.2.1/30', eth1: '198.51.100.1/30', vethpod: '203.0.113.1/30' },
      'ip route add default via 192.0.2.2',
      'ip route add 198.18.0.0/16 via 198.51.100.2',
      'ip rule add fwmark 0x1 lookup 100 priority 100',
      'ip route add 198.18.0.0/16 via 203.0.113.2 dev vethpod table 100',
    );
    const byIface = (rs: Ruleset, table: 'mangle' | 'nat' | 'filter', chain: string): Ruleset => append(rs, table, chain, rule({ o: 'eth1' }), rule({ o: 'vethpod' }));
    let counting = emptyRuleset();
    for (const [t, c] of [['mangle', 'OUTPUT'], ['nat', 'OUTPUT'], ['filter', 'OUTPUT'], ['mangle', 'POSTROUTING'], ['nat', 'POSTROUTING']] as const) counting = byIface(counting, t, c);
    const sent = (over: Partial<Packet>): string[] => {
      const packet: Packet = { src: ip('198.51.100.1'), dst: ip('198.18.0.5'), proto: 17, sport: 40000, dport: 30080, tcpFlags: 0, icmpType: 0, icmpCode: 0, inIface: null, outIface: null, mark: 0, lengthBytes: 29, fragment: false, ...over };
      const r = traceHostPacket(node, packet, { rng: seeded(1) });
      return r.matched.map((m) => `${m.table} ${m.chain} ${m.rule.replace(/^-A \S+ /, '')}`);
    };
    // nat OUTPUT DNATs to the Pod: routed out eth1 first, re-routed to vethpod.
    const dnatFirst = (rs: Ruleset): Ruleset => ({ tables: { ...rs.tables, nat: { ...rs.tables.nat, chains: { ...rs.tables.nat.chains, OUTPUT: { name: 'OUTPUT', policy: 'ACCEPT', rules: [rule({ p: 'udp' }, T.dnat('203.0.113.2')), ...(rs.tables.nat.chains.OUTPUT?.rules ?? [])] } } } } });
    node.setRuleset(dnatFirst(counting));
    // Real run: mangle OUTPUT -o eth1, filter OUTPUT -o eth1, mangle and nat POSTROUTING -o vethpod.
    expect(sent({})).toEqual(['mangle OUTPUT -o eth1', 'nat OUTPUT -p udp -j DNAT --to-destination 203.0.113.2', 'filter OUTPUT -o eth1', 'mangle POSTROUTING -o vethpod', 'nat POSTROUTING -o vethpod']);
    // A mark set in mangle OUTPUT re-routes by the fwmark rule: nat and filter OUTPUT still see eth1.
    node.setRuleset(append(counting, 'mangle', 'OUTPUT', rule({}, T.mark(1))));
    expect(sent({ sport: 40001 })).toEqual(['mangle OUTPUT -o eth1', 'mangle OUTPUT -j MARK --set-xmark 0x1/0xffffffff', 'nat OUTPUT -o eth1', 'filter OUTPUT -o eth1', 'mangle POSTROUTING -o vethpod', 'nat POSTROUTING -o vethpod']);
  });

  it('should refuse to re-route a 127.0.0.1 source out of a real interface unless route_localnet is set', () => {
    const w = nodeWorld();
    const rs = append(
      append(emptyRuleset(), 'nat', 'OUTPUT', rule({ d: '127.0.0.1/32', p: 'tcp', dport: 30080 }, T.dnat('203.0.113.9:8080'))),
      'nat',
      'POSTROUTING',
      rule({ s: '127.0.0.0/8', o: 'eth1' }, T.masq()),
    );
    w.node.setRuleset(rs);
    const blocked = w.net.connect('node', '127.0.0.1', 30080, { nowMs: 0, synRetries: 0 });
    expect(blocked.kind).toBe('timed-out');
    expect(blocked.drops[0]?.site).toEqual({ stage: 'routing', check: 'reroute' });
    w.node.run('sysctl -w net.ipv4.conf.eth1.route_localnet=1');
    const ok = w.net.connect('node', '127.0.0.1', 30080, { nowMs: 1000, synRetries: 0 });
    expect(ok.kind === 'established' && ok.server?.peer).toMatch(/^203\.0\.113\.1:/);
  });
});

describe('NAT in the datapath', () => {
  it('should MASQUERADE with the outgoing interface primary address, never a secondary', () => {
    const w = nodeWorld();
    w.node.run('ip addr add 203.0.113.2/24 dev eth1');
    w.node.setRuleset(append(append(emptyRuleset(), 'nat', 'PREROUTING', DNAT_30080), 'nat', 'POSTROUTING', rule({ o: 'eth1' }, T.masq())));
    const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0, sport: 40000 });
    expect(r.kind === 'established' && r.server?.peer).toBe('203.0.113.1:40000');
  });

  it('should MASQUERADE with another interface address when the outgoing one has none (inet_select_addr, as seen on 6.18)', () => {
    const w = nodeWorld();
    w.node.run('ip addr del 203.0.113.1/24 dev eth1', 'ip route add 203.0.113.0/24 dev eth1');
    w.pod.run('ip route del default', 'ip route add 198.51.100.0/24 dev eth0');
    w.node.setRuleset(append(append(emptyRuleset(), 'nat', 'PREROUTING', DNAT_30080), 'nat', 'POSTROUTING', rule({ o: 'eth1' }, T.masq())));
    const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0, sport: 40000 });
    expect(r.kind === 'established' && r.server?.peer).toBe('198.51.100.10:40000');
  });

  it('should drop at MASQUERADE when the host has no usable address at all', () => {
    const w = nodeWorld();
    // Link-scoped addresses answer ARP but are never a source for routed traffic.
    w.router.run(
      'ip addr del 198.51.100.254/24 dev eth1',
      'ip addr del 192.0.2.1/24 dev eth0',
      'ip addr add 198.51.100.254/24 dev eth1 scope link',
      'ip addr add 192.0.2.1/24 dev eth0 scope link',
    );
    w.router.setRuleset(append(emptyRuleset(), 'nat', 'POSTROUTING', rule({ o: 'eth1' }, T.masq())));
    const r = w.net.connect('client', '198.51.100.10', 22, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('timed-out');
    expect(r.drops.map((d) => [d.host, d.site])).toEqual([['router', { stage: 'nat', check: 'masquerade-no-address' }]]);
  });

  it('should keep an established flow on its old DNAT after the rule is replaced, and send new flows by the new rule', () => {
    const w = nodeWorld();
    w.pod.run('listen tcp 8081');
    w.node.setRuleset(append(emptyRuleset(), 'nat', 'PREROUTING', DNAT_30080));
    const first = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(first.kind === 'established' && first.server?.local).toBe('203.0.113.9:8080');
    w.node.setRuleset(append(emptyRuleset(), 'nat', 'PREROUTING', rule({ p: 'tcp', dport: 30080 }, T.dnat('203.0.113.9:8081'))));
    if (first.kind !== 'established') throw new Error('unreachable');
    const data = w.net.sendData(first.connection, { nowMs: 10 });
    expect(data.kind).toBe('acked');
    expect(data.trace.some((s) => s.kind === 'nat' && s.host === 'node' && s.action === 'rewrite' && s.to.endsWith('203.0.113.9:8080'))).toBe(true);
    const second = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 20, synRetries: 0 });
    expect(second.kind === 'established' && second.server?.local).toBe('203.0.113.9:8081');
  });

  it('should delete MASQUERADE entries when their interface goes down', () => {
    const w = nodeWorld();
    w.node.setRuleset(append(append(emptyRuleset(), 'nat', 'PREROUTING', DNAT_30080), 'nat', 'POSTROUTING', rule({ o: 'eth1' }, T.masq())));
    w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(w.node.conntrack.count(0)).toBe(1);
    w.node.setLinkUp('eth1', false);
    expect(w.node.conntrack.count(0)).toBe(0);
  });

  it('should leave no conntrack entry when the first packet dies before the last hook', () => {
    const w = nodeWorld();
    w.node.setRuleset(append(append(emptyRuleset(), 'nat', 'PREROUTING', DNAT_30080), 'filter', 'FORWARD', rule({ p: 'tcp', dport: 8080 }, T.drop)));
    const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('timed-out');
    expect(r.trace.some((s) => s.kind === 'conntrack' && s.host === 'node' && s.event === 'new')).toBe(true);
    expect(w.node.conntrack.count(0)).toBe(0);
    expect(r.drops[0]).toMatchObject({ host: 'node', site: { stage: 'hook', hook: 'FORWARD', table: 'filter', chain: 'FORWARD', index: 1 } });
  });

  it('should not NAT an untracked packet (NOTRACK in raw)', () => {
    const w = nodeWorld();
    w.node.setRuleset(append(append(emptyRuleset(), 'raw', 'PREROUTING', rule({ p: 'tcp', dport: 30080 }, T.notrack)), 'nat', 'PREROUTING', DNAT_30080));
    const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('reset');
    expect(r.trace.some((s) => s.kind === 'conntrack' && s.host === 'node' && s.event === 'untracked')).toBe(true);
    expect(r.kind === 'reset' && r.by).toBe('node (nothing listens on tcp port 30080)');
  });
});

describe('REJECT', () => {
  it('should answer with a RST that the client accepts as coming from the address it targeted (un-DNAT of the reply)', () => {
    const w = nodeWorld();
    w.node.setRuleset(
      append(append(emptyRuleset(), 'nat', 'PREROUTING', DNAT_30080), 'filter', 'FORWARD', rule({ d: '203.0.113.9/32', p: 'tcp', dport: 8080 }, T.reject('tcp-reset'))),
    );
    const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('reset');
    expect(r.kind === 'reset' && r.by).toContain('node (filter FORWARD rule 1: REJECT --reject-with tcp-reset)');
    const rst = r.trace.find((s) => s.kind === 'wire' && s.to.host === 'client');
    expect(rst?.kind === 'wire' && rst.packet).toMatchObject({ src: '198.51.100.10', sport: 30080, flags: 'RST,ACK' });
  });

  it('should answer with ICMP port unreachable whose embedded header is un-NATed, failing connect with ECONNREFUSED', () => {
    const w = nodeWorld();
    w.node.setRuleset(append(append(emptyRuleset(), 'nat', 'PREROUTING', DNAT_30080), 'filter', 'FORWARD', rule({ p: 'tcp', dport: 8080 }, T.reject())));
    const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0, sport: 40000 });
    expect(r.kind === 'unreachable' && [r.errno, r.icmp]).toEqual(['ECONNREFUSED', 'port-unreachable']);
    const icmp = r.trace.find((s) => s.kind === 'wire' && s.to.host === 'client');
    expect(icmp?.kind === 'wire' && icmp.packet).toMatchObject({ src: '198.51.100.10', icmp: 'port-unreachable', inner: '192.0.2.10:40000 > 198.51.100.10:30080' });
  });

  it('should fail connect with EHOSTUNREACH for icmp-host-unreachable, as a real client does', () => {
    const w = nodeWorld();
    w.node.setRuleset(append(emptyRuleset(), 'filter', 'INPUT', rule({ p: 'tcp', dport: 22 }, T.reject('icmp-host-unreachable'))));
    const r = w.net.connect('client', '198.51.100.10', 22, { nowMs: 0, synRetries: 0 });
    expect(r.kind === 'unreachable' && r.errno).toBe('EHOSTUNREACH');
  });
});

describe('routing drops', () => {
  it('should drop a packet to forward when ip_forward is 0, silently, and time the client out after the SYN retries', () => {
    const w = nodeWorld();
    w.node.run('sysctl -w net.ipv4.ip_forward=0').setRuleset(append(emptyRuleset(), 'nat', 'PREROUTING', DNAT_30080));
    const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0 });
    expect(r.kind).toBe('timed-out');
    expect([r.attempts, r.endMs]).toEqual([7, 127000]);
    expect(r.drops).toHaveLength(7);
    expect(r.drops[0]).toMatchObject({ host: 'node', site: { stage: 'routing', check: 'ip_forward' } });
  });

  it('should drop a packet with no route and answer ICMP net unreachable when forwarding', () => {
    const w = nodeWorld();
    w.client.run('listen tcp 5000');
    w.node.run('ip route del default');
    const r = w.net.connect('pod', '192.0.2.10', 5000, { nowMs: 0, synRetries: 0 });
    expect(r.kind === 'unreachable' && [r.errno, r.by]).toEqual(['ENETUNREACH', 'node (no route to 192.0.2.10)']);
  });
});

describe('conntrack in the datapath', () => {
  const DNAT_UDP = rule({ p: 'udp', dport: 30053 }, T.dnat('203.0.113.9:53'));

  it('should keep a UDP entry 30 s after a quick reply, and make it an assured 120 s stream once traffic continues past 2 s', () => {
    const w = nodeWorld();
    w.node.setRuleset(append(emptyRuleset(), 'nat', 'PREROUTING', DNAT_UDP));
    const a = w.net.udp('client', '198.51.100.10', 30053, { nowMs: 0, sport: 41000 });
    expect(a.kind).toBe('answered');
    const [e] = w.node.conntrack.list(0);
    expect(e && [e.seenReply, e.assured, (e.expiresMs - 0) / 1000]).toEqual([true, false, 30]);
    const b = w.net.udp('client', '198.51.100.10', 30053, { nowMs: 5000, sport: 41000 });
    expect(b.kind).toBe('answered');
    expect(e && [e.assured, (e.expiresMs - 5000) / 1000]).toEqual([true, 120]);
  });

  it('should expire an entry on the simulated clock so the next datagram is NATed afresh', () => {
    const w = nodeWorld();
    w.pod.run('listen udp 5353');
    w.node.setRuleset(append(emptyRuleset(), 'nat', 'PREROUTING', DNAT_UDP));
    expect(w.net.udp('client', '198.51.100.10', 30053, { nowMs: 0, sport: 41000 }).kind).toBe('answered');
    w.node.setRuleset(append(emptyRuleset(), 'nat', 'PREROUTING', rule({ p: 'udp', dport: 30053 }, T.dnat('203.0.113.9:5353'))));
    // Before expiry the old binding still applies (and the exchange, 2 s after the first, makes
    // the entry a 120 s stream); once the entry has expired the next datagram is NATed afresh.
    const early = w.net.udp('client', '198.51.100.10', 30053, { nowMs: 29999, sport: 41000 });
    expect(early.trace.some((s) => s.kind === 'nat' && s.action === 'rewrite' && s.to.endsWith('203.0.113.9:53'))).toBe(true);
    expect(w.net.udp('client', '198.51.100.10', 30053, { nowMs: 29999 + 119999, sport: 41000 }).trace.some((s) => s.kind === 'nat' && s.action === 'bound')).toBe(false);
    const late = w.net.udp('client', '198.51.100.10', 30053, { nowMs: 29999 + 119999 + 120000, sport: 41000 });
    expect(late.trace.some((s) => s.kind === 'nat' && s.action === 'bound' && s.to === '203.0.113.9:5353')).toBe(true);
  });

  it('should use the configured established timeout (kube-proxy sets 86400 s)', () => {
    const w = nodeWorld();
    w.node.run('sysctl -w net.netfilter.nf_conntrack_tcp_timeout_established=86400').setRuleset(append(emptyRuleset(), 'nat', 'PREROUTING', DNAT_30080));
    w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0, sport: 40000 });
    const [e] = w.node.conntrack.list(0);
    expect(e && [e.tcpState, e.assured, e.expiresMs / 1000]).toEqual(['ESTABLISHED', true, 86400]);
  });

  it('should track nothing on a host whose rules do not need conntrack, as the kernel (a Pod namespace)', () => {
    const w = nodeWorld();
    w.node.setRuleset(append(emptyRuleset(), 'filter', 'FORWARD', rule({ p: 'tcp', dport: 8080 }, T.accept)));
    expect(w.net.connect('client', '203.0.113.9', 8080, { nowMs: 0, synRetries: 0 }).kind).toBe('established');
    expect([w.client, w.router, w.node, w.pod].map((h) => h.conntrack.count(0))).toEqual([0, 0, 0, 0]);
    w.node.setRuleset(append(w.node.ruleset, 'filter', 'FORWARD', rule({ m: [M.ctstate('INVALID')] }, T.drop)));
    w.net.connect('client', '203.0.113.9', 8080, { nowMs: 1, synRetries: 0 });
    expect([w.client, w.router, w.node, w.pod].map((h) => h.conntrack.count(1))).toEqual([0, 0, 1, 0]);
  });

  it('should go NONE → SYN_SENT → SYN_RECV → ESTABLISHED over a handshake and mark the entry assured', () => {
    const w = nodeWorld();
    w.node.setConntrackMode('always');
    const r = w.net.connect('client', '198.51.100.10', 22, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('reset');
    w.node.run('listen tcp 22');
    const ok = w.net.connect('client', '198.51.100.10', 22, { nowMs: 0, synRetries: 0 });
    const states = ok.trace.flatMap((s) => (s.kind === 'conntrack' && s.host === 'node' && s.entry !== null ? [/ (SYN_SENT|SYN_RECV|ESTABLISHED) /.exec(s.entry)?.[1] ?? '?'] : []));
    expect(states).toEqual(['SYN_SENT', 'SYN_SENT', 'SYN_RECV', 'ESTABLISHED']);
  });

  it('should destroy an entry whose only reply is a RST (closed port), as the kernel does', () => {
    const w = nodeWorld();
    w.node.setConntrackMode('always');
    const r = w.net.connect('client', '198.51.100.10', 22, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('reset');
    expect(r.trace.some((s) => s.kind === 'conntrack' && s.host === 'node' && s.event === 'destroyed')).toBe(true);
    expect(w.node.conntrack.count(0)).toBe(0);
  });

  it('should reopen a TIME_WAIT entry on a new SYN and decide NAT again', () => {
    const w = nodeWorld();
    w.pod.run('listen tcp 8081');
    w.node.setRuleset(append(emptyRuleset(), 'nat', 'PREROUTING', DNAT_30080));
    w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0, sport: 40000 });
    const [e] = w.node.conntrack.list(0);
    if (e === undefined) throw new Error('no entry');
    e.tcpState = 'TIME_WAIT';
    for (const h of [w.client, w.pod]) for (const s of h.sockets.listTcp()) h.sockets.closeTcp(s);
    for (const h of [w.client, w.pod]) for (const x of h.conntrack.list(0)) x.tcpState = 'TIME_WAIT';
    w.node.setRuleset(append(emptyRuleset(), 'nat', 'PREROUTING', rule({ p: 'tcp', dport: 30080 }, T.dnat('203.0.113.9:8081'))));
    const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 1000, synRetries: 0, sport: 40000 });
    expect(r.trace.some((s) => s.kind === 'conntrack' && s.host === 'node' && s.event === 'reopened')).toBe(true);
    expect(r.kind === 'established' && r.server?.local).toBe('203.0.113.9:8081');
  });

  it('should classify a SYN-ACK whose SYN took another path as INVALID, which a stateful firewall drops', () => {
    // client sends through r2 and gets answers through r1: r1 never sees the SYN.
    const net = new Network({ rng: seeded(5) });
    host(net, 'client', { eth0: '192.0.2.10/24', eth1: '198.18.0.10/24' }, 'ip route add 203.0.113.0/24 via 198.18.0.1');
    host(net, 'r1', { eth0: '192.0.2.1/24', eth1: '198.51.100.1/24' }, 'sysctl -w net.ipv4.ip_forward=1', 'ip route add 198.18.0.0/24 via 192.0.2.10');
    host(net, 'r2', { eth0: '198.18.0.1/24', eth1: '198.51.100.2/24' }, 'sysctl -w net.ipv4.ip_forward=1', 'ip route add 203.0.113.0/24 via 198.51.100.9');
    host(net, 'server', { eth0: ['198.51.100.9/24', '203.0.113.9/24'] }, 'ip route add default via 198.51.100.1', 'listen tcp 443');
    net.segment('lan', ['r1/eth1', 'r2/eth1', 'server/eth0']).wire('client/eth0', 'r1/eth0').wire('client/eth1', 'r2/eth0');
    expect(net.connect('client', '203.0.113.9', 443, { nowMs: 0, synRetries: 0 }).kind).toBe('established');
    net.host('r1').setRuleset(append(emptyRuleset(), 'filter', 'FORWARD', rule({ m: [M.ctstate('INVALID')] }, T.drop)));
    const r = net.connect('client', '203.0.113.9', 443, { nowMs: 10, synRetries: 0 });
    expect(r.kind).toBe('timed-out');
    expect(r.trace.some((s) => s.kind === 'conntrack' && s.host === 'r1' && s.event === 'invalid')).toBe(true);
    expect(r.drops[0]).toMatchObject({ host: 'r1', packet: { flags: 'SYN,ACK' }, site: { stage: 'hook', table: 'filter', chain: 'FORWARD', index: 1 } });
  });
});

describe('related ICMP and moving routes', () => {
  it('should un-NAT an ICMP error from a router behind the node: outer source and embedded header as the client knows them', () => {
    const net = new Network({ rng: seeded(9) });
    host(net, 'client', { eth0: '192.0.2.10/24' }, 'ip route add default via 192.0.2.1');
    const node = host(net, 'node', { eth0: '192.0.2.1/24', eth1: '198.51.100.1/24' }, 'sysctl -w net.ipv4.ip_forward=1', 'ip route add 198.18.5.0/24 via 198.51.100.2');
    // r2 forwards but has no route to the endpoint: it answers net unreachable.
    host(net, 'r2', { eth0: '198.51.100.2/24' }, 'sysctl -w net.ipv4.ip_forward=1');
    net.wire('client/eth0', 'node/eth0').wire('node/eth1', 'r2/eth0');
    node.setRuleset(append(append(emptyRuleset(), 'nat', 'PREROUTING', rule({ p: 'tcp', dport: 30080 }, T.dnat('198.18.5.5:8080'))), 'nat', 'POSTROUTING', rule({ o: 'eth1' }, T.masq())));
    const r = net.connect('client', '192.0.2.1', 30080, { nowMs: 0, synRetries: 0, sport: 40000 });
    expect(r.kind === 'unreachable' && [r.errno, r.by]).toEqual(['ENETUNREACH', 'r2 (no route to 198.18.5.5)']);
    expect(r.trace.some((s) => s.kind === 'conntrack' && s.host === 'node' && s.event === 'related' && s.dir === 'reply')).toBe(true);
    const arrived = r.trace.find((s) => s.kind === 'wire' && s.to.host === 'client');
    // r2's own address disappears: the error looks like a reply from the address the client targeted.
    expect(arrived?.kind === 'wire' && arrived.packet).toMatchObject({ src: '192.0.2.1', dst: '192.0.2.10', icmp: 'net-unreachable', inner: '192.0.2.10:40000 > 192.0.2.1:30080' });
  });

  it('should drop a masqueraded flow whose route moved to another interface and forget its entry (nf_nat_oif_changed)', () => {
    const w = nodeWorld();
    w.node.run('ip link add eth2 type veth', 'ip link set eth2 up', 'ip addr add 198.18.0.1/24 dev eth2');
    w.node.setRuleset(append(append(emptyRuleset(), 'nat', 'PREROUTING', DNAT_30080), 'nat', 'POSTROUTING', rule({ d: '203.0.113.9/32' }, T.masq())));
    const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    if (r.kind !== 'established') throw new Error(r.kind);
    w.node.run('ip route add 203.0.113.9/32 dev eth2');
    const d = w.net.sendData(r.connection, { nowMs: 10 });
    expect(d.kind).toBe('lost');
    expect(d.drops[0]).toMatchObject({ host: 'node', site: { stage: 'conntrack', check: 'masquerade-oif-changed' } });
    expect(w.node.conntrack.count(10)).toBe(0);
  });
});

/** An ICMP packet arriving on `inIface` (echo request unless `icmpType` says otherwise). */
function icmp(src: string, dst: string, inIface: string, icmpId: number, icmpType = 8): Packet & { icmpId: number } {
  return { src: ip(src), dst: ip(dst), proto: 1, sport: 0, dport: 0, tcpFlags: 0, icmpType, icmpCode: 0, icmpId, inIface, outIface: null, mark: 0, lengthBytes: 84, fragment: false };
}

describe('ICMP echo flows', () => {
  it('should track two pings with different ids as two flows and match each echo reply by its id (checked on 6.18)', () => {
    const w = nodeWorld();
    w.node.setConntrackMode('always');
    const rng = seeded(1);
    traceHostPacket(w.node, icmp('192.0.2.10', '203.0.113.9', 'eth0', 7), { rng, nowMs: 0 });
    traceHostPacket(w.node, icmp('192.0.2.10', '203.0.113.9', 'eth0', 9), { rng, nowMs: 0 });
    const reply = traceHostPacket(w.node, icmp('203.0.113.9', '192.0.2.10', 'eth1', 7, 0), { rng, nowMs: 1000 });
    expect(reply.trace.find((s) => s.kind === 'conntrack')).toMatchObject({ event: 'established', dir: 'reply' });
    // Real run: two entries, the answered one without [UNREPLIED] and refreshed to 30 s by its reply.
    expect(reply.conntrack).toEqual([
      'icmp     1 30 src=192.0.2.10 dst=203.0.113.9 type=8 code=0 id=7 src=203.0.113.9 dst=192.0.2.10 type=0 code=0 id=7 mark=0 use=1',
      'icmp     1 29 src=192.0.2.10 dst=203.0.113.9 type=8 code=0 id=9 [UNREPLIED] src=203.0.113.9 dst=192.0.2.10 type=0 code=0 id=9 mark=0 use=1',
    ]);
  });

  it('should find no connection for an echo reply whose id no request used, nor for a reply or an untracked type arriving first (INVALID)', () => {
    const w = nodeWorld();
    w.node.setConntrackMode('always');
    const rng = seeded(1);
    traceHostPacket(w.node, icmp('192.0.2.10', '203.0.113.9', 'eth0', 7), { rng, nowMs: 0 });
    for (const [id, type] of [
      [11, 0],
      [3, 9],
    ] as const) {
      const r = traceHostPacket(w.node, icmp('203.0.113.9', '192.0.2.10', 'eth1', id, type), { rng, nowMs: 0 });
      expect(r.trace.find((s) => s.kind === 'conntrack')).toMatchObject({ event: 'invalid', entry: null });
    }
    // A timestamp request starts a connection, with a timestamp reply as its reply tuple.
    const ts = traceHostPacket(w.node, icmp('203.0.113.9', '192.0.2.10', 'eth1', 3, 13), { rng, nowMs: 0 });
    expect(ts.conntrack).toContain('icmp     1 30 src=203.0.113.9 dst=192.0.2.10 type=13 code=0 id=3 [UNREPLIED] src=192.0.2.10 dst=203.0.113.9 type=14 code=0 id=3 mark=0 use=1');
    expect(ts.conntrack).toHaveLength(2);
  });

  it('should give a masqueraded ping a new id when another flow holds its id, and un-NAT the reply back to the original id', () => {
    const w = nodeWorld();
    w.node.setRuleset(append(emptyRuleset(), 'nat', 'POSTROUTING', rule({ o: 'eth1' }, T.masq())));
    const rng = seeded(3);
    const a = traceHostPacket(w.node, icmp('192.0.2.10', '203.0.113.9', 'eth0', 7), { rng, nowMs: 0 });
    expect(a.trace.filter((s) => s.kind === 'fate').map((s) => (s.kind === 'fate' ? s.packet.icmpId : -1))).toEqual([7]);
    // Another client, same id, same destination: the id is taken after MASQUERADE (real run: id=28915).
    const b = traceHostPacket(w.node, icmp('192.0.2.20', '203.0.113.9', 'eth0', 7), { rng, nowMs: 0 });
    const out = b.trace.find((s) => s.kind === 'fate' && s.fate === 'transmitted');
    const newId = out?.kind === 'fate' ? (out.packet.icmpId ?? -1) : -1;
    expect(newId).not.toBe(7);
    expect(b.conntrack[1]).toBe(
      `icmp     1 30 src=192.0.2.20 dst=203.0.113.9 type=8 code=0 id=7 [UNREPLIED] src=203.0.113.9 dst=203.0.113.1 type=0 code=0 id=${newId} mark=0 use=1`,
    );
    const back = traceHostPacket(w.node, icmp('203.0.113.9', '203.0.113.1', 'eth1', newId, 0), { rng, nowMs: 0 });
    const delivered = back.trace.find((s) => s.kind === 'fate' && s.fate === 'transmitted');
    expect(delivered?.kind === 'fate' && [delivered.iface, delivered.packet.dst, delivered.packet.icmpId]).toEqual(['eth0', '192.0.2.20', 7]);
  });
});

describe('addrtype in the datapath', () => {
  it("should see another interface's subnet broadcast as UNICAST under --limit-iface-in, BROADCAST without it (checked on 6.18)", () => {
    const w = nodeWorld();
    const addrtype = (type: 'UNICAST' | 'BROADCAST', limitIfaceIn: boolean): Match => ({ kind: 'addrtype', dst: { types: [type], negate: false }, limitIfaceIn, limitIfaceOut: false });
    w.node.setRuleset(append(emptyRuleset(), 'raw', 'PREROUTING', rule({ m: [addrtype('UNICAST', true)] }), rule({ m: [addrtype('BROADCAST', true)] }), rule({ m: [addrtype('BROADCAST', false)] })));
    const udp = (dst: string): Packet => ({ src: ip('203.0.113.9'), dst: ip(dst), proto: 17, sport: 53, dport: 53, tcpFlags: 0, icmpType: 0, icmpCode: 0, inIface: 'eth1', outIface: null, mark: 0, lengthBytes: 32, fragment: false });
    // eth0's broadcast arriving on eth1.
    expect(traceHostPacket(w.node, udp('198.51.100.255'), { rng: seeded(1) }).matched.map((m) => m.index)).toEqual([1, 3]);
    // eth1's own broadcast.
    expect(traceHostPacket(w.node, udp('203.0.113.255'), { rng: seeded(1) }).matched.map((m) => m.index)).toEqual([2, 3]);
  });
});

describe('broadcast input (brd_input, checked on 6.18)', () => {
  const udp = (src: string, dst: string, inIface = 'eth1'): Packet => ({ src: ip(src), dst: ip(dst), proto: 17, sport: 5000, dport: 9999, tcpFlags: 0, icmpType: 0, icmpCode: 0, inIface, outIface: null, mark: 0, lengthBytes: 32, fragment: false });

  it('should deliver a subnet broadcast locally through INPUT, whichever interface it arrives on, and track it', () => {
    for (const inIface of ['eth1', 'eth0']) {
      const w = nodeWorld();
      w.node.setRuleset(countingEverywhere());
      const r = traceHostPacket(w.node, udp('203.0.113.9', '203.0.113.255', inIface), { rng: seeded(1) });
      expect(r.fate).toBe('delivered');
      expect(r.matched.map((m) => `${m.table} ${m.chain}`)).toEqual(['raw PREROUTING', 'mangle PREROUTING', 'nat PREROUTING', 'mangle INPUT', 'filter INPUT', 'nat INPUT']);
      expect(r.conntrack).toEqual(['udp      17 30 src=203.0.113.9 dst=203.0.113.255 sport=5000 dport=9999 [UNREPLIED] src=203.0.113.255 dst=203.0.113.9 sport=9999 dport=5000 mark=0 use=1']);
    }
  });

  it('should deliver the limited broadcast locally instead of forwarding it, from 0.0.0.0 too', () => {
    const w = nodeWorld();
    expect(traceHostPacket(w.node, udp('203.0.113.9', '255.255.255.255'), { rng: seeded(1) }).fate).toBe('delivered');
    expect(traceHostPacket(w.node, udp('0.0.0.0', '255.255.255.255'), { rng: seeded(1) }).fate).toBe('delivered');
    // 0.0.0.0 to anything else stays a martian source.
    const r = traceHostPacket(w.node, udp('0.0.0.0', '203.0.113.255'), { rng: seeded(1) });
    expect([r.fate, r.reason]).toEqual(['dropped', 'martian source 0.0.0.0']);
  });

  it('should validate the source of a broadcast: strict rp_filter and a local source drop it', () => {
    const w = nodeWorld();
    w.node.run('sysctl -w net.ipv4.conf.all.rp_filter=1');
    // 198.18.0.5 routes back by eth0 (the default route), not eth1.
    expect(traceHostPacket(w.node, udp('198.18.0.5', '203.0.113.255'), { rng: seeded(1) }).fate).toBe('dropped');
    w.node.run('sysctl -w net.ipv4.conf.all.rp_filter=0');
    const r = traceHostPacket(w.node, udp('198.51.100.10', '203.0.113.255'), { rng: seeded(1) });
    expect([r.fate, r.reason]).toEqual(['dropped', 'martian source: 198.51.100.10 is this host\'s own address (rp_filter=0 on eth1)']);
  });

  it('should send nothing when REJECT drops a broadcast, neither an ICMP error nor a RST', () => {
    const w = nodeWorld();
    w.node.setRuleset(append(emptyRuleset(), 'filter', 'INPUT', rule({ p: 'tcp' }, T.reject('tcp-reset')), rule({}, T.reject())));
    const tcp: Packet = { ...udp('203.0.113.9', '203.0.113.255'), proto: 6, dport: 80, tcpFlags: 2 };
    for (const p of [udp('203.0.113.9', '203.0.113.255'), udp('203.0.113.9', '255.255.255.255'), tcp]) {
      const r = traceHostPacket(w.node, p, { rng: seeded(1) });
      expect(r.fate).toBe('rejected');
      expect(r.trace.filter((s) => s.kind === 'fate' && s.fate === 'transmitted')).toEqual([]);
    }
    // A unicast one still gets its port unreachable.
    const uni = traceHostPacket(w.node, udp('203.0.113.9', '203.0.113.1'), { rng: seeded(1) });
    expect(uni.trace.filter((s) => s.kind === 'fate' && s.fate === 'transmitted').length).toBe(1);
  });
});
