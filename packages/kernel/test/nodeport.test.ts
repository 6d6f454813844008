/**
 * The four causes of "NodePort connections reset" from seed 003, each reproduced from the kernel
 * mechanism with kube-proxy's rules written by hand. Where the seed's explanation and the kernel
 * disagree, the tests assert what the kernel does (see docs/fidelity.md, datapath section).
 *
 *   client 192.0.2.10 — router (192.0.2.1 | 198.51.100.254) — LAN 198.51.100.0/24
 *     node-a 198.51.100.10: Pods 203.0.113.0/25 on veth0 (pod-a 203.0.113.10), flannel.1 203.0.113.0/32
 *     node-b 198.51.100.11: Pods 203.0.113.128/25 on veth0 (pod-b 203.0.113.138), flannel.1 203.0.113.128/32
 *   the nodes reach each other's Pod range over the overlay (VXLAN 8472 on the LAN).
 */
import { describe, expect, it } from 'vitest';
import type { Host } from '../src/host.ts';
import { Network } from '../src/network.ts';
import { seeded } from './helpers.ts';
import { kubeProxyNodePort, type NodePortSpec } from './kubeProxyRules.ts';
import { append, M, rule, T } from './rules.ts';
import { host } from './topo.ts';

interface Cluster {
  net: Network;
  client: Host;
  router: Host;
  nodeA: Host;
  nodeB: Host;
  podA: Host;
  podB: Host;
}

function cluster(seed = 1): Cluster {
  const net = new Network({ rng: seeded(seed) });
  const client = host(net, 'client', { eth0: '192.0.2.10/24' }, 'ip route add default via 192.0.2.1');
  const router = host(net, 'router', { eth0: '192.0.2.1/24', eth1: '198.51.100.254/24' }, 'sysctl -w net.ipv4.ip_forward=1');
  const mk = (name: string, ip: string, ov: string, gw: string, pod: string, podIp: string, peerOv: string, peerRange: string, peerIp: string): [Host, Host] => {
    const n = host(net, name, { eth0: `${ip}/24`, veth0: `${gw}/25` }, 'ip route add default via 198.51.100.254', 'sysctl -w net.ipv4.ip_forward=1');
    n.run(
      `ip link add flannel.1 type vxlan id 1 dstport 8472 local ${ip}`,
      'ip link set flannel.1 up',
      `ip addr add ${ov}/32 dev flannel.1`,
      `ip route add ${peerRange} via ${peerOv} dev flannel.1 onlink`,
      `overlay flannel.1 peer ${peerOv} underlay ${peerIp}`,
    );
    const p = host(net, pod, { eth0: `${podIp}/25` }, `ip route add default via ${gw}`, 'listen tcp 8080');
    net.wire(`${pod}/eth0`, `${name}/veth0`);
    return [n, p];
  };
  const [nodeA, podA] = mk('node-a', '198.51.100.10', '203.0.113.0', '203.0.113.1', 'pod-a', '203.0.113.10', '203.0.113.128', '203.0.113.128/25', '198.51.100.11');
  const [nodeB, podB] = mk('node-b', '198.51.100.11', '203.0.113.128', '203.0.113.129', 'pod-b', '203.0.113.138', '203.0.113.0', '203.0.113.0/25', '198.51.100.10');
  net.wire('client/eth0', 'router/eth0').segment('lan', ['router/eth1', 'node-a/eth0', 'node-b/eth0']);
  return { net, client, router, nodeA, nodeB, podA, podB };
}

const POD_A = { ip: '203.0.113.10', port: 8080 };
const POD_B = { ip: '203.0.113.138', port: 8080 };

function proxy(c: Cluster, spec: (local: 'a' | 'b') => NodePortSpec): void {
  c.nodeA.setRuleset(kubeProxyNodePort(spec('a')));
  c.nodeB.setRuleset(kubeProxyNodePort(spec('b')));
}

describe('nodeport resets: cause 1, SNAT (Cluster) versus source preservation (Local)', () => {
  it('should SNAT under externalTrafficPolicy Cluster: the remote Pod sees the node, and the reply returns through it', () => {
    const c = cluster();
    proxy(c, (n) => ({ nodePort: 30080, policy: 'Cluster', endpoints: [{ ...POD_B, local: n === 'b' }] }));
    const r = c.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('established');
    // Not the client's 192.0.2.10: MASQUERADE on node-a used flannel.1's address toward pod-b.
    expect(r.kind === 'established' && r.server).toMatchObject({ host: 'pod-b', local: '203.0.113.138:8080' });
    expect(r.kind === 'established' && r.server?.peer).toMatch(/^203\.0\.113\.0:/);
  });

  it('should preserve the source under Local, and still show the client the node address in the SYN-ACK (not the Pod IP)', () => {
    const c = cluster();
    proxy(c, (n) => ({ nodePort: 30080, policy: 'Local', endpoints: [{ ...POD_A, local: n === 'a' }] }));
    const r = c.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0, sport: 40000 });
    expect(r.kind === 'established' && r.server).toEqual({ host: 'pod-a', local: '203.0.113.10:8080', peer: '192.0.2.10:40000' });
    const synAck = r.trace.find((s) => s.kind === 'wire' && s.to.host === 'client');
    // The seed says to expect the Pod IP here; conntrack un-DNATs the reply on the node.
    expect(synAck?.kind === 'wire' && synAck.packet).toMatchObject({ src: '198.51.100.10', sport: 30080, flags: 'SYN,ACK' });
  });

  it('should drop NodePort traffic under Local on a node without a local endpoint', () => {
    const c = cluster();
    proxy(c, (n) => ({ nodePort: 30080, policy: 'Local', endpoints: [{ ...POD_A, local: n === 'a' }] }));
    const r = c.net.connect('client', '198.51.100.11', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('timed-out');
    expect(r.drops[0]).toMatchObject({ host: 'node-b', site: { stage: 'hook', table: 'filter', chain: 'KUBE-EXTERNAL-SERVICES', index: 1 } });
  });

  it('should break when the source is preserved toward a remote endpoint: the Pod answers around the node and the client resets the stray SYN-ACK', () => {
    const c = cluster();
    proxy(c, (n) => ({ nodePort: 30080, policy: 'Cluster', endpoints: [{ ...POD_B, local: n === 'b' }], noMasquerade: true }));
    c.router.run('ip route add 203.0.113.0/24 via 198.51.100.10');
    const r = c.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0, sport: 40000 });
    // No SYN-ACK from 198.51.100.10:30080 ever arrives: the client times out…
    expect(r.kind).toBe('timed-out');
    // …because pod-b's SYN-ACK left node-b by its own default route, un-NATed by no one,
    const stray = r.trace.find((s) => s.kind === 'wire' && s.to.host === 'client');
    expect(stray?.kind === 'wire' && stray.packet).toMatchObject({ src: '203.0.113.138', sport: 8080, flags: 'SYN,ACK' });
    // …and the client's stack answered it with a RST (no socket for 203.0.113.138:8080).
    expect(r.trace.some((s) => s.kind === 'stack' && s.host === 'client' && s.event === 'reset')).toBe(true);
  });
});

describe('nodeport resets: cause 2, strict rp_filter with an overlay and an asymmetric return path', () => {
  // pod-b calls node-a's NodePort without masquerade (e.g. an ip-masq-agent exception for the node
  // network): the SYN reaches node-a on eth0 from 203.0.113.138, but node-a routes that Pod range
  // over flannel.1. Strict rp_filter drops the SYN itself; loose or off lets it through, and the
  // reply goes back over the overlay — asymmetric, and fine.
  function setup(rp: number): Cluster {
    const c = cluster();
    proxy(c, (n) => ({ nodePort: 30080, policy: 'Local', endpoints: [{ ...POD_A, local: n === 'a' }] }));
    c.nodeA.run(`sysctl -w net.ipv4.conf.eth0.rp_filter=${rp}`);
    return c;
  }

  it('should drop the SYN itself under strict rp_filter, so the caller sees no SYN-ACK (a timeout, not a reset)', () => {
    const r = setup(1).net.connect('pod-b', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('timed-out');
    expect(r.drops).toHaveLength(1);
    expect(r.drops[0]).toMatchObject({ host: 'node-a', packet: { flags: 'SYN', dst: '203.0.113.10' }, site: { stage: 'routing', check: 'rp_filter' } });
    expect(r.drops[0]?.reason).toBe('route back to 203.0.113.138 leaves by flannel.1, not eth0 (rp_filter=1 on eth0)');
  });

  it('should establish under loose rp_filter, replying over the overlay', () => {
    const r = setup(2).net.connect('pod-b', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('established');
    expect(r.trace.some((s) => s.kind === 'encap' && s.host === 'node-a')).toBe(true);
  });

  it('should establish with rp_filter off', () => {
    expect(setup(0).net.connect('pod-b', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 }).kind).toBe('established');
  });
});

describe('nodeport resets: cause 3, a multi-homed node answering from another interface', () => {
  // node-a gets a second NIC eth2 (198.18.0.10) behind a firewall fw (198.18.0.1) that routes
  // client traffic to it. The client targets that address; node-a's default route is on eth0.
  // client eth1 198.18.1.10 — fw (198.18.1.1 | 198.18.0.1) — node-a eth2 198.18.0.10.
  function multihomed(rp = 2): Cluster & { fw: Host } {
    const c = cluster();
    const fw = host(c.net, 'fw', { eth0: '198.18.1.1/24', eth1: '198.18.0.1/24' }, 'sysctl -w net.ipv4.ip_forward=1');
    c.client.run('ip link add eth1 type physical', 'ip link set eth1 up', 'ip addr add 198.18.1.10/24 dev eth1', 'ip route add 198.18.0.0/24 via 198.18.1.1');
    c.nodeA.run('ip link add eth2 type physical', 'ip link set eth2 up', 'ip addr add 198.18.0.10/24 dev eth2', `sysctl -w net.ipv4.conf.eth2.rp_filter=${rp}`);
    c.router.run('ip route add 198.18.1.0/24 via 192.0.2.10');
    c.net.wire('client/eth1', 'fw/eth0').wire('fw/eth1', 'node-a/eth2');
    proxy(c, (n) => ({ nodePort: 30080, policy: 'Local', endpoints: [{ ...POD_A, local: n === 'a' }] }));
    return { ...c, fw };
  }

  it('should send the SYN-ACK from the address the client targeted (not the primary), out of the default-route interface', () => {
    const c = multihomed();
    const r = c.net.connect('client', '198.18.0.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('established');
    const out = r.trace.find((s) => s.kind === 'wire' && s.from.host === 'node-a' && s.packet.flags === 'SYN,ACK');
    expect(out).toMatchObject({ from: { iface: 'eth0' }, to: { host: 'router' }, packet: { src: '198.18.0.10', sport: 30080 } });
  });

  it('should time out when the return path crosses a stateful firewall that never saw the SYN', () => {
    const c = multihomed();
    c.router.setRuleset(append(c.router.ruleset, 'filter', 'FORWARD', rule({ m: [M.ctstate('INVALID')] }, T.drop)));
    const r = c.net.connect('client', '198.18.0.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('timed-out');
    expect(r.drops[0]).toMatchObject({ host: 'router', packet: { flags: 'SYN,ACK', src: '198.18.0.10' } });
  });

  it('should not be fixed by a source rule: the reply is routed before it is un-DNATed, with the Pod source', () => {
    const c = multihomed();
    c.router.setRuleset(append(c.router.ruleset, 'filter', 'FORWARD', rule({ m: [M.ctstate('INVALID')] }, T.drop)));
    c.nodeA.run('ip route add default via 198.18.0.1 table 200', 'ip rule add from 198.18.0.10 lookup 200 priority 100');
    expect(c.net.connect('client', '198.18.0.10', 30080, { nowMs: 0, synRetries: 0 }).kind).toBe('timed-out');
  });

  it('should be fixed by connmark-based policy routing: replies of connections that came in on eth2 leave by eth2', () => {
    const c = multihomed();
    c.router.setRuleset(append(c.router.ruleset, 'filter', 'FORWARD', rule({ m: [M.ctstate('INVALID')] }, T.drop)));
    c.nodeA.run('ip route add default via 198.18.0.1 table 200', 'ip rule add fwmark 0x100/0x100 lookup 200 priority 100');
    let rs = append(c.nodeA.ruleset, 'mangle', 'PREROUTING', rule({ i: 'eth2', m: [M.ctstate('NEW')] }, { kind: 'CONNMARK', mode: 'set-xmark', value: 0x100, mask: 0x100 }));
    rs = append(rs, 'mangle', 'PREROUTING', rule({ i: 'veth0' }, T.connmarkRestore));
    c.nodeA.setRuleset(rs);
    const r = c.net.connect('client', '198.18.0.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('established');
    expect(r.trace.find((s) => s.kind === 'wire' && s.from.host === 'node-a' && s.packet.flags === 'SYN,ACK')).toMatchObject({ from: { iface: 'eth2' }, to: { host: 'fw' } });
  });

  it('should drop the SYN on the second NIC under strict rp_filter (the same asymmetry seen from the other side)', () => {
    const r = multihomed(1).net.connect('client', '198.18.0.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('timed-out');
    expect(r.drops[0]?.reason).toBe('route back to 198.18.1.10 leaves by eth0, not eth2 (rp_filter=1 on eth2)');
  });
});

describe('nodeport resets: cause 4, a proxy defect while a flow is in flight', () => {
  it('should refuse new connections once the Service has no endpoints (REJECT icmp-port-unreachable), while the established flow keeps its DNAT', () => {
    const c = cluster();
    proxy(c, (n) => ({ nodePort: 30080, policy: 'Cluster', endpoints: [{ ...POD_A, local: n === 'a' }] }));
    const first = c.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    if (first.kind !== 'established') throw new Error(first.kind);
    proxy(c, () => ({ nodePort: 30080, policy: 'Cluster', endpoints: [] }));
    const second = c.net.connect('client', '198.51.100.10', 30080, { nowMs: 100, synRetries: 0 });
    expect(second.kind === 'unreachable' && [second.errno, second.by]).toEqual([
      'ECONNREFUSED',
      'node-a (filter KUBE-EXTERNAL-SERVICES rule 1: REJECT --reject-with icmp-port-unreachable)',
    ]);
    // The old flow never re-walks the nat chains: its data still reaches pod-a.
    expect(c.net.sendData(first.connection, { nowMs: 200 }).kind).toBe('acked');
  });

  it('should reset an in-flight flow whose stale conntrack entry points at a deleted Pod IP now held by a new Pod', () => {
    const c = cluster();
    proxy(c, (n) => ({ nodePort: 30080, policy: 'Cluster', endpoints: [{ ...POD_A, local: n === 'a' }] }));
    const flow = c.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    if (flow.kind !== 'established') throw new Error(flow.kind);
    // pod-a is deleted and its IP given to a new Pod; kube-proxy does not flush TCP entries.
    for (const s of c.podA.sockets.listTcp()) c.podA.sockets.closeTcp(s);
    c.podA.conntrack.flush();
    const r = c.net.sendData(flow.connection, { nowMs: 1000 });
    expect(r.kind === 'reset' && r.by).toMatch(/^pod-a \(no connection 203\.0\.113\.10:8080 <-> 203\.0\.113\.1:\d+\)$/);
  });

  it('should lose an in-flight flow whose stale entry points at a Pod that is gone (the node answers host unreachable)', () => {
    const c = cluster();
    proxy(c, (n) => ({ nodePort: 30080, policy: 'Cluster', endpoints: [{ ...POD_A, local: n === 'a' }] }));
    const flow = c.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, synRetries: 0 });
    if (flow.kind !== 'established') throw new Error(flow.kind);
    c.podA.setLinkUp('eth0', false);
    const r = c.net.sendData(flow.connection, { nowMs: 1000 });
    expect(r.kind).toBe('lost');
    expect(r.drops[0]).toMatchObject({ host: 'node-a', site: { stage: 'neighbour', check: 'no-neighbour' } });
    expect(r.trace.some((s) => s.kind === 'stack' && s.host === 'client' && s.event === 'soft-error')).toBe(true);
  });
});
