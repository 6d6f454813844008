import { parseSave } from '@netsim/netfilter';
import { Network, conntrackCommand, formatConnectResult } from '@netsim/kernel';

/** A worked example: an external client connects to a NodePort whose endpoint runs on another node. */
export function nodeportTrace(): string {
  // The simulator injects its seeded source; a fixed sequence is enough here.
  let n = 0;
  const net = new Network({ rng: { int: (max) => (n++ * 7919) % max } });
  const veth = (host: string, ...cmds: string[]) => net.addHost(host).run(...cmds);

  veth('client', 'ip link add eth0 type veth', 'ip link set eth0 up', 'ip addr add 192.0.2.10/24 dev eth0', 'ip route add default via 192.0.2.1');
  veth('router',
    'ip link add eth0 type veth', 'ip link set eth0 up', 'ip addr add 192.0.2.1/24 dev eth0',
    'ip link add eth1 type veth', 'ip link set eth1 up', 'ip addr add 198.51.100.254/24 dev eth1',
    'sysctl -w net.ipv4.ip_forward=1');
  // Two nodes; each has its Pods behind veth0 and a VXLAN device to the other node's Pods.
  const nodes = [
    { name: 'node-a', ip: '198.51.100.10', gw: '203.0.113.1/25', ov: '203.0.113.0', peerOv: '203.0.113.128', peerNet: '203.0.113.128/25', peerIp: '198.51.100.11' },
    { name: 'node-b', ip: '198.51.100.11', gw: '203.0.113.129/25', ov: '203.0.113.128', peerOv: '203.0.113.0', peerNet: '203.0.113.0/25', peerIp: '198.51.100.10' },
  ];
  for (const x of nodes) {
    veth(x.name,
      'ip link add eth0 type veth', 'ip link set eth0 up', `ip addr add ${x.ip}/24 dev eth0`,
      'ip link add veth0 type veth', 'ip link set veth0 up', `ip addr add ${x.gw} dev veth0`,
      `ip link add flannel.1 type vxlan id 1 dstport 8472 local ${x.ip}`, 'ip link set flannel.1 up',
      `ip addr add ${x.ov}/32 dev flannel.1`,
      `ip route add ${x.peerNet} via ${x.peerOv} dev flannel.1 onlink`,
      `overlay flannel.1 peer ${x.peerOv} underlay ${x.peerIp}`,
      'ip route add default via 198.51.100.254', 'sysctl -w net.ipv4.ip_forward=1');
  }
  veth('pod-b', 'ip link add eth0 type veth', 'ip link set eth0 up', 'ip addr add 203.0.113.138/25 dev eth0',
    'ip route add default via 203.0.113.129', 'listen tcp 8080');
  net.wire('client/eth0', 'router/eth0').wire('pod-b/eth0', 'node-b/veth0');
  net.segment('lan', ['router/eth1', 'node-a/eth0', 'node-b/eth0']);

  // kube-proxy's rules for a NodePort Service (externalTrafficPolicy: Cluster), one endpoint.
  net.host('node-a').setRuleset(parseSave(`*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-EXT-WEB - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-SEP-WEB1 - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-WEB - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-EXT-WEB -m comment --comment "masquerade traffic for default/web external destinations" -j KUBE-MARK-MASQ
-A KUBE-EXT-WEB -j KUBE-SVC-WEB
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-NODEPORTS -p tcp -m comment --comment "default/web" -m tcp --dport 30080 -j KUBE-EXT-WEB
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-SEP-WEB1 -s 203.0.113.138/32 -j KUBE-MARK-MASQ
-A KUBE-SEP-WEB1 -p tcp -m tcp -j DNAT --to-destination 203.0.113.138:8080
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A KUBE-SVC-WEB -m comment --comment "default/web -> 203.0.113.138:8080" -j KUBE-SEP-WEB1
COMMIT
`));

  const result = net.connect('client', '198.51.100.10', 30080, { nowMs: 0, sport: 40000 });
  const ct = conntrackCommand(net.host('node-a').conntrack, ['-L'], 1000);
  return `${formatConnectResult(result)}\n\n$ conntrack -L   # on node-a, 1 s later\n${ct.stdout}${ct.stderr}`;
}
