import { describe, expect, it } from 'vitest';
import { isKernelError } from '../src/errors.ts';
import { Network, formatConnectResult } from '../src/network.ts';
import { seeded } from './helpers.ts';
import { append, emptyRuleset, rule, T } from './rules.ts';
import { host, nodeWorld } from './topo.ts';

/** A node with a bridge cni0 (203.0.113.1/25) and two Pods on veth ports, plus an outside client. */
function bridged(): Network {
  const net = new Network({ rng: seeded(7) });
  host(net, 'client', { eth0: '198.51.100.20/24' }, 'ip route add 203.0.113.0/24 via 198.51.100.10');
  const node = host(net, 'node', { eth0: '198.51.100.10/24' }, 'sysctl -w net.ipv4.ip_forward=1');
  node.run('ip link add cni0 type bridge', 'ip link set cni0 up', 'ip addr add 203.0.113.1/25 dev cni0');
  for (const p of ['a', 'b']) {
    node.run(`ip link add veth${p} type veth`, `ip link set veth${p} master cni0`, `ip link set veth${p} up`);
    host(net, `pod-${p}`, { eth0: `203.0.113.${p === 'a' ? 10 : 11}/25` }, 'ip route add default via 203.0.113.1', 'listen tcp 8080');
    net.wire(`pod-${p}/eth0`, `node/veth${p}`);
  }
  net.wire('client/eth0', 'node/eth0');
  return net;
}

describe('links and bridges', () => {
  it('should switch Pod-to-Pod traffic on a bridge without the node IP stack', () => {
    const net = bridged();
    const r = net.connect('pod-a', '203.0.113.11', 8080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('established');
    expect(r.trace.some((s) => s.kind !== 'wire' && s.host === 'node')).toBe(false);
    expect(r.trace.find((s) => s.kind === 'wire')).toMatchObject({ from: { host: 'pod-a', iface: 'eth0' }, to: { host: 'pod-b', iface: 'eth0' } });
  });

  it('should receive routed traffic for a Pod on the bridge device and forward it out of the bridge', () => {
    const net = bridged();
    const r = net.connect('client', '203.0.113.10', 8080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('established');
    expect(r.trace.filter((s) => s.kind === 'wire').map((s) => (s.kind === 'wire' ? `${s.from.host}/${s.from.iface}>${s.to.host}/${s.to.iface}` : ''))).toEqual([
      'client/eth0>node/eth0',
      'node/cni0>pod-a/eth0',
      'pod-a/eth0>node/cni0',
      'node/eth0>client/eth0',
      'client/eth0>node/eth0',
      'node/cni0>pod-a/eth0',
    ]);
  });

  it('should cut a Pod off when its veth port goes down, and report the failed neighbour as EHOSTUNREACH', () => {
    const net = bridged();
    net.host('node').setLinkUp('vetha', false);
    const r = net.connect('client', '203.0.113.10', 8080, { nowMs: 0, synRetries: 0 });
    expect(r.kind === 'unreachable' && [r.errno, r.by]).toEqual(['EHOSTUNREACH', 'node (no neighbour answers for 203.0.113.10 on cni0)']);
  });

  it('should refuse to wire an interface twice or an interface that does not exist', () => {
    const net = bridged();
    const errs: unknown[] = [];
    for (const f of [() => net.wire('client/eth0', 'node/eth0'), () => net.wire('client/eth9', 'node/eth0'), () => net.host('nobody')]) {
      try {
        f();
      } catch (e) {
        errs.push(e);
      }
    }
    expect(errs.map((e) => (isKernelError(e) ? `${e.code}: ${e.message}` : String(e)))).toEqual([
      'topology: client/eth0 is already wired',
      'topology: host "client" has no interface "eth9"',
      'not-found: no host named "nobody"',
    ]);
  });
});

/**
 * Two nodes on 198.51.100.0/24 with an overlay between them, flannel-like: each node's Pod range
 * (203.0.113.0/25, 203.0.113.128/25) sits behind veth0, flannel.1 holds the range's network
 * address as a /32, and the other node routes the range via that address, onlink.
 */
function overlay(): Network {
  const net = new Network({ rng: seeded(11) });
  host(net, 'client', { eth0: '198.51.100.20/24' });
  const nodes: [string, string, string, string, string][] = [
    ['node-a', '198.51.100.10', '203.0.113.0', '203.0.113.1/25', 'pod-a'],
    ['node-b', '198.51.100.11', '203.0.113.128', '203.0.113.129/25', 'pod-b'],
  ];
  for (const [name, ip, ov, cidr, pod] of nodes) {
    const n = host(net, name, { eth0: `${ip}/24`, veth0: cidr }, 'sysctl -w net.ipv4.ip_forward=1');
    // Real nodes run rules that keep conntrack on (kube-proxy, the CNI's masquerade).
    n.setConntrackMode('always');
    n.run(`ip link add flannel.1 type vxlan id 1 dstport 8472 local ${ip}`, 'ip link set flannel.1 up', `ip addr add ${ov}/32 dev flannel.1`);
    const podIp = cidr.replace(/\.(1|129)\/25$/, (_m, x: string) => `.${Number(x) + 8}`);
    host(net, pod, { eth0: `${podIp}/25` }, `ip route add default via ${cidr.split('/')[0] ?? ''}`, 'listen tcp 8080');
    net.wire(`${pod}/eth0`, `${name}/veth0`);
  }
  net.host('node-a').run('ip route add 203.0.113.128/25 via 203.0.113.128 dev flannel.1 onlink', 'overlay flannel.1 peer 203.0.113.128 underlay 198.51.100.11');
  net.host('node-b').run('ip route add 203.0.113.0/25 via 203.0.113.0 dev flannel.1 onlink', 'overlay flannel.1 peer 203.0.113.0 underlay 198.51.100.10');
  net.segment('lan', ['client/eth0', 'node-a/eth0', 'node-b/eth0']);
  return net;
}

describe('overlay', () => {
  it('should carry Pod traffic between nodes inside UDP to the other node underlay address and unwrap it on the overlay device', () => {
    const net = overlay();
    const r = net.connect('pod-a', '203.0.113.137', 8080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('established');
    const enc = r.trace.find((s) => s.kind === 'encap');
    expect(enc).toMatchObject({ host: 'node-a', iface: 'flannel.1', underlay: '198.51.100.11' });
    const outer = r.trace.find((s) => s.kind === 'wire' && s.from.host === 'node-a');
    expect(outer?.kind === 'wire' && outer.packet).toMatchObject({ proto: 'udp', src: '198.51.100.10', dst: '198.51.100.11', dport: 8472 });
    expect(r.trace.find((s) => s.kind === 'enter' && s.via === 'overlay')).toMatchObject({ host: 'node-b', iface: 'flannel.1' });
    // The underlay UDP flow is tracked by conntrack on both nodes, as on real nodes.
    expect(net.host('node-b').conntrack.list(0).some((e) => e.orig.dport === 8472)).toBe(true);
  });

  it('should MASQUERADE NodePort traffic to a remote Pod with the overlay device address', () => {
    const net = overlay();
    net.host('node-a').setRuleset(
      append(
        append(emptyRuleset(), 'nat', 'PREROUTING', rule({ p: 'tcp', dport: 30080 }, T.dnat('203.0.113.137:8080'))),
        'nat',
        'POSTROUTING',
        rule({ notS: '203.0.113.0/24', d: '203.0.113.0/24' }, T.masq()),
      ),
    );
    const r = net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind === 'established' && r.server).toMatchObject({ host: 'pod-b', local: '203.0.113.137:8080' });
    expect(r.kind === 'established' && r.server?.peer).toMatch(/^203\.0\.113\.0:/);
  });

  it('should drop on the overlay when no underlay address is known for the next hop', () => {
    const net = overlay();
    net.host('node-a').run('ip route add 198.18.0.0/24 via 198.18.0.1 dev flannel.1 onlink');
    const r = net.connect('pod-a', '198.18.0.9', 8080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('timed-out');
    expect(r.drops[0]).toMatchObject({ host: 'node-a', site: { stage: 'overlay', check: 'no-fdb-entry' } });
  });
});

describe('exchanges', () => {
  it('should report a local routing failure without sending anything', () => {
    const w = nodeWorld();
    w.client.run('ip route del default');
    const r = w.net.connect('client', '198.51.100.10', 22, { nowMs: 0 });
    expect(r.kind === 'error' && [r.errno, r.attempts]).toEqual(['ENETUNREACH', 0]);
  });

  it('should refuse to bind a source address the host does not have', () => {
    const w = nodeWorld();
    const r = w.net.connect('client', '198.51.100.10', 22, { nowMs: 0, src: '192.0.2.99' });
    expect(r.kind === 'error' && [r.errno, r.reason]).toEqual(['EADDRNOTAVAIL', 'bind 192.0.2.99: Cannot assign requested address']);
  });

  it('should say which host dropped the SYN-ACK when the reply is lost', () => {
    const w = nodeWorld();
    w.node.run('listen tcp 22').setRuleset(append(emptyRuleset(), 'filter', 'OUTPUT', rule({ p: 'tcp', sport: 22 }, T.drop)));
    const r = w.net.connect('client', '198.51.100.10', 22, { nowMs: 0, synRetries: 1 });
    expect(r.kind).toBe('timed-out');
    expect(r.drops.map((d) => `${d.host} ${d.packet.flags ?? ''} ${d.site.stage === 'hook' ? `${d.site.table} ${d.site.chain} #${d.site.index ?? 'policy'}` : d.site.stage}`)).toEqual([
      'node SYN,ACK filter OUTPUT #1',
      'node SYN,ACK filter OUTPUT #1',
    ]);
    expect([r.attempts, r.endMs]).toEqual([2, 3000]);
  });

  it('should render a result as an outcome line, the drops and the trace', () => {
    const w = nodeWorld();
    const text = formatConnectResult(w.net.connect('client', '198.51.100.10', 22, { nowMs: 0, synRetries: 0, sport: 40000 }));
    expect(text.split('\n')[0]).toBe('reset 192.0.2.10:40000 -> 198.51.100.10:22 by node (nothing listens on tcp port 22)');
    expect(text).toContain('[node] stack reset: nothing listens on tcp port 22: answers 192.0.2.10:40000 with RST,ACK');
  });

  it('should be deterministic: the same seed gives the same trace', () => {
    const run = (seed: number): string => {
      const w = nodeWorld(seed);
      w.node.setRuleset(append(append(emptyRuleset(), 'nat', 'PREROUTING', rule({ p: 'tcp', dport: 30080 }, T.dnat('203.0.113.9:8080'))), 'nat', 'POSTROUTING', rule({ o: 'eth1' }, T.masq(true))));
      return JSON.stringify(w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0 }));
    };
    expect(run(1)).toBe(run(1));
    expect(run(1)).not.toBe(run(2));
  });
});

describe('closing', () => {
  it('should close gracefully through every datapath, leaving TIME_WAIT entries and no sockets', () => {
    const w = nodeWorld();
    w.node.setRuleset(append(emptyRuleset(), 'nat', 'PREROUTING', rule({ p: 'tcp', dport: 30080 }, T.dnat('203.0.113.9:8080'))));
    const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    if (r.kind !== 'established') throw new Error(r.kind);
    const c = w.net.close(r.connection, { nowMs: 500 });
    expect(c.kind).toBe('closed');
    // Only the node has rules that need conntrack; its entry waits out TIME_WAIT.
    const [e] = w.node.conntrack.list(500);
    expect(e && [e.tcpState, (e.expiresMs - 500) / 1000]).toEqual(['TIME_WAIT', 120]);
    expect([w.client.sockets.listTcp().length, w.pod.sockets.listTcp().length]).toEqual([0, 0]);
    expect(() => w.net.close(r.connection, { nowMs: 600 })).toThrow('no established connection');
  });

  it('should report a close the peer never answers as lost', () => {
    const w = nodeWorld();
    const r = w.net.connect('client', '203.0.113.9', 8080, { nowMs: 0, synRetries: 0 });
    if (r.kind !== 'established') throw new Error(r.kind);
    w.router.setRuleset(append(emptyRuleset(), 'filter', 'FORWARD', rule({ p: 'tcp', dport: 8080 }, T.drop)));
    expect(w.net.close(r.connection, { nowMs: 10 }).kind).toBe('lost');
  });
});

describe('a load balancer in front of nodes', () => {
  it('should spread a VIP over two nodes with statistic, SNAT to itself, and reach each node NodePort', () => {
    const net = new Network({ rng: seeded(21) });
    host(net, 'client', { eth0: '192.0.2.10/24' }, 'ip route add default via 192.0.2.1');
    const lb = host(net, 'lb', { eth0: ['192.0.2.1/24', '192.0.2.100/24'], eth1: '198.51.100.1/24' }, 'sysctl -w net.ipv4.ip_forward=1');
    for (const [n, a] of [['node-a', '198.51.100.10'], ['node-b', '198.51.100.11']] as const) {
      host(net, n, { eth0: `${a}/24` }, 'ip route add default via 198.51.100.1', 'listen tcp 30080');
    }
    net.wire('client/eth0', 'lb/eth0').segment('lan', ['lb/eth1', 'node-a/eth0', 'node-b/eth0']);
    const half = { kind: 'statistic', mode: 'random', probability: { text: '0.50000000000', threshold31: 0x40000000 }, negate: false } as const;
    let rs = append(emptyRuleset(), 'nat', 'PREROUTING', rule({ d: '192.0.2.100/32', p: 'tcp', dport: 80, m: [half] }, T.dnat('198.51.100.10:30080')));
    rs = append(rs, 'nat', 'PREROUTING', rule({ d: '192.0.2.100/32', p: 'tcp', dport: 80 }, T.dnat('198.51.100.11:30080')));
    rs = append(rs, 'nat', 'POSTROUTING', rule({ o: 'eth1' }, T.snat('198.51.100.1')));
    lb.setRuleset(rs);
    const seen = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const r = net.connect('client', '192.0.2.100', 80, { nowMs: i * 10, synRetries: 0 });
      if (r.kind !== 'established' || r.server === null) throw new Error(r.kind);
      expect(r.server.peer).toMatch(/^198\.51\.100\.1:/);
      seen.add(r.server.host);
    }
    expect([...seen].sort()).toEqual(['node-a', 'node-b']);
  });
});

describe('lean traces', () => {
  it('should give the same outcomes with a lean trace, keeping only drops, stack events and notes', () => {
    const outcomes = (trace: 'full' | 'lean'): unknown[] => {
      const net = new Network({ rng: seeded(4), trace });
      host(net, 'client', { eth0: '192.0.2.10/24' }, 'ip route add default via 192.0.2.1');
      host(net, 'router', { eth0: '192.0.2.1/24', eth1: '198.51.100.254/24' }, 'sysctl -w net.ipv4.ip_forward=1');
      const node = host(net, 'node', { eth0: '198.51.100.10/24', eth1: '203.0.113.1/24' }, 'ip route add default via 198.51.100.254', 'sysctl -w net.ipv4.ip_forward=1', 'listen tcp 22');
      host(net, 'pod', { eth0: '203.0.113.9/24' }, 'ip route add default via 203.0.113.1', 'listen tcp 8080');
      net.wire('client/eth0', 'router/eth0').wire('router/eth1', 'node/eth0').wire('node/eth1', 'pod/eth0');
      let rs = append(emptyRuleset(), 'nat', 'PREROUTING', rule({ p: 'tcp', dport: 30080 }, T.dnat('203.0.113.9:8080')));
      rs = append(rs, 'nat', 'POSTROUTING', rule({ o: 'eth1' }, T.masq(true)));
      rs = append(rs, 'filter', 'INPUT', rule({ p: 'tcp', dport: 23 }, T.reject('tcp-reset')));
      rs = append(rs, 'filter', 'FORWARD', rule({ p: 'tcp', dport: 9 }, T.drop));
      node.setRuleset(rs);
      return [30080, 22, 23, 9, 8081].map((port) => {
        const r = net.connect('client', port === 9 || port === 8081 ? '203.0.113.9' : '198.51.100.10', port, { nowMs: port, synRetries: 1 });
        return { kind: r.kind, by: 'by' in r ? r.by : null, server: r.kind === 'established' ? r.server : null, drops: r.drops, steps: r.trace.map((s) => s.kind) };
      });
    };
    const full = outcomes('full');
    const lean = outcomes('lean');
    const strip = (xs: unknown[]): unknown[] => xs.map((x) => ({ ...(x as object), steps: undefined }));
    expect(strip(lean)).toEqual(strip(full));
    for (const o of lean) expect(new Set((o as { steps: string[] }).steps)).toEqual(new Set((o as { steps: string[] }).steps.filter((k) => k === 'drop' || k === 'stack' || k === 'note')));
    expect((full[0] as { steps: string[] }).steps.length).toBeGreaterThan((lean[0] as { steps: string[] }).steps.length * 3);
  });
});
