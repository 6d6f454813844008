/**
 * The null source binding (`nf_nat_alloc_null_binding`) keeps a new connection's reply tuple
 * unique: when no SNAT rule applies and another entry already holds the reply tuple, the kernel
 * moves the source port, as it would for SNAT, instead of failing the insert at confirmation.
 *
 * Recorded on Linux 6.18 in network namespaces: a router between Pod a (198.18.0.2) and Pod b
 * (198.18.0.3), with kube-proxy's nat rules for a UDP ClusterIP (DNAT to 198.18.0.3:5353,
 * KUBE-MARK-MASQ for the endpoint's own source, MASQUERADE of marked packets in KUBE-POSTROUTING).
 * a sends from port 23858 to ClusterIP 198.51.100.152:53 while b's replies are dropped, which
 * leaves an unreplied entry; then the Service is re-created at 198.51.100.245 with the same
 * endpoint and a sends from the same port. The kernel printed:
 *
 *   udp 17 29 src=198.18.0.2 dst=198.51.100.245 sport=23858 dport=53 src=198.18.0.3 dst=198.18.0.2 sport=5353 dport=61160 mark=0 use=1
 *   udp 17 26 src=198.18.0.2 dst=198.51.100.152 sport=23858 dport=53 [UNREPLIED] src=198.18.0.3 dst=198.18.0.2 sport=5353 dport=23858 mark=0 use=1
 *
 * b saw the datagram from 198.18.0.2:61160, its reply reached a's socket as from
 * 198.51.100.245:53, KUBE-POSTROUTING's RETURN counted both first packets (no MASQUERADE) and
 * `conntrack -S` kept insert_failed=0. The new port is drawn at random (61160 in that run, 5809 in
 * another); netsim draws it from the injected source.
 */
import { describe, expect, it } from 'vitest';
import { parseSave } from '@netsim/netfilter';
import { formatCtEntry } from '../src/conntrack.ts';
import { Network } from '../src/network.ts';
import { seeded } from './helpers.ts';
import { host } from './topo.ts';

const RULES = (clusterIp: string): string => `*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-SEP-B - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-WEB - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE
-A KUBE-SEP-B -s 198.18.0.3/32 -j KUBE-MARK-MASQ
-A KUBE-SEP-B -p udp -m udp -j DNAT --to-destination 198.18.0.3:5353
-A KUBE-SERVICES -d ${clusterIp}/32 -p udp -m comment --comment "default/web-local:dns cluster IP" -m udp --dport 53 -j KUBE-SVC-WEB
-A KUBE-SVC-WEB -j KUBE-SEP-B
COMMIT
`;

function lab(): { net: Network; node: ReturnType<typeof host>; b: ReturnType<typeof host> } {
  const net = new Network({ rng: seeded(1) });
  const node = host(
    net,
    'node',
    { vetha: '198.18.0.1/32', vethb: '198.18.0.1/32' },
    'sysctl -w net.ipv4.ip_forward=1',
    'ip route add 198.18.0.2/32 dev vetha',
    'ip route add 198.18.0.3/32 dev vethb',
  );
  host(net, 'a', { eth0: '198.18.0.2/32' }, 'ip route add default via 198.18.0.1 dev eth0 onlink');
  const b = host(net, 'b', { eth0: '198.18.0.3/32' }, 'ip route add default via 198.18.0.1 dev eth0 onlink', 'listen udp 5353');
  net.wire('a/eth0', 'node/vetha').wire('b/eth0', 'node/vethb');
  return { net, node, b };
}

describe('the null source binding keeps reply tuples unique', () => {
  it('should move the source port of a new flow whose reply tuple an unreplied entry holds, as Linux 6.18 did', () => {
    const { net, node, b } = lab();
    node.setRuleset(parseSave(RULES('198.51.100.152')));
    // b's replies are dropped: the first flow's entry stays unreplied.
    b.setRuleset(parseSave('*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A OUTPUT -p udp -m udp --sport 5353 -j DROP\nCOMMIT\n'));
    expect(net.udp('a', '198.51.100.152', 53, { nowMs: 0, sport: 23858 }).kind).toBe('no-answer');
    b.setRuleset(parseSave('*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n'));

    node.setRuleset(parseSave(RULES('198.51.100.245')));
    const r = net.udp('a', '198.51.100.245', 53, { nowMs: 2000, sport: 23858 });
    expect(r.kind).toBe('answered');
    expect(r.trace.some((s) => s.kind === 'drop')).toBe(false);
    const lines = node.conntrack.list(2000).map((e) => formatCtEntry(e, 2000));
    expect(lines[0]).toBe('udp      17 28 src=198.18.0.2 dst=198.51.100.152 sport=23858 dport=53 [UNREPLIED] src=198.18.0.3 dst=198.18.0.2 sport=5353 dport=23858 mark=0 use=1');
    // The reply tuple's port is the moved source port: another than 23858, in 1024-65535.
    const m = /^udp {6}17 30 src=198\.18\.0\.2 dst=198\.51\.100\.245 sport=23858 dport=53 src=198\.18\.0\.3 dst=198\.18\.0\.2 sport=5353 dport=(\d+) mark=0 use=1$/.exec(lines[1] ?? '');
    expect(m).not.toBeNull();
    const moved = Number(m?.[1]);
    expect(moved).not.toBe(23858);
    expect(moved).toBeGreaterThanOrEqual(1024);
    // The server saw the moved port; no MASQUERADE was involved (the source address is a's own).
    expect(r.trace.some((s) => s.kind === 'stack' && s.host === 'b' && s.event === 'udp-reply' && s.detail.endsWith(`answers 198.18.0.2:${moved}`))).toBe(true);
    const entry = node.conntrack.list(2000)[1];
    expect(entry && [entry.srcNat, entry.dstNat, entry.masqIface]).toEqual([true, true, null]);
  });

  it('should still drop a flow an SNAT to a single port leaves clashing, as Linux 6.18 did (insert_failed=1)', () => {
    // Same lab: \`-I POSTROUTING 1 -p udp -d 198.18.0.3 -j SNAT --to-source 198.18.0.1:7000\`; a
    // sends to 198.18.0.3:5353 from 1111 (answered, reply tuple 198.18.0.3:5353 > 198.18.0.1:7000)
    // then from 2222: dropped, \`conntrack -S\` insert_failed=1 drop=1, one entry listed.
    const { net, node } = lab();
    node.setRuleset(parseSave('*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n-A POSTROUTING -d 198.18.0.3/32 -p udp -j SNAT --to-source 198.18.0.1:7000\nCOMMIT\n'));
    expect(net.udp('a', '198.18.0.3', 5353, { nowMs: 0, sport: 1111 }).kind).toBe('answered');
    const r = net.udp('a', '198.18.0.3', 5353, { nowMs: 1000, sport: 2222 });
    expect(r.kind).toBe('no-answer');
    expect(r.trace.some((s) => s.kind === 'drop' && s.host === 'node' && s.reason === 'conntrack insert failed: another entry holds this tuple')).toBe(true);
    expect(node.conntrack.list(1000).map((e) => formatCtEntry(e, 1000))).toEqual([
      'udp      17 29 src=198.18.0.2 dst=198.18.0.3 sport=1111 dport=5353 src=198.18.0.3 dst=198.18.0.1 sport=5353 dport=7000 mark=0 use=1',
    ]);
  });

  it('should keep the source port when the reply tuple is free (no SNAT status)', () => {
    const { net, node } = lab();
    node.setRuleset(parseSave(RULES('198.51.100.245')));
    expect(net.udp('a', '198.51.100.245', 53, { nowMs: 0, sport: 23858 }).kind).toBe('answered');
    const [e] = node.conntrack.list(0);
    expect(e && [e.reply.dport, e.srcNat, e.dstNat]).toEqual([23858, false, true]);
  });
});
