/**
 * Test worlds built from `ip`-style commands. Addresses come from the documentation ranges.
 */
import { Network } from '../src/network.ts';
import type { Host } from '../src/host.ts';
import { seeded } from './helpers.ts';

/** A host with the given interfaces (all up) and commands. */
export function host(net: Network, name: string, ifaces: Record<string, string | string[]>, ...cmds: string[]): Host {
  const h = net.addHost(name);
  for (const [iface, addrs] of Object.entries(ifaces)) {
    h.run(`ip link add ${iface} type veth`, `ip link set ${iface} up`);
    for (const a of Array.isArray(addrs) ? addrs : addrs === '' ? [] : [addrs]) h.run(`ip addr add ${a} dev ${iface}`);
  }
  h.run(...cmds);
  return h;
}

/**
 * client 192.0.2.10 — router (192.0.2.1 | 198.51.100.254) — node eth0 198.51.100.10
 * node eth1 203.0.113.1 — pod 203.0.113.9 (203.0.113.0/24 stands in for the Pod network),
 * listening on tcp 8080 and udp 53. The router sends 203.0.113.0/24 and 198.18.0.0/15 to the node.
 */
export function nodeWorld(seed = 1): { net: Network; client: Host; router: Host; node: Host; pod: Host } {
  const net = new Network({ rng: seeded(seed) });
  const client = host(net, 'client', { eth0: '192.0.2.10/24' }, 'ip route add default via 192.0.2.1');
  const router = host(
    net,
    'router',
    { eth0: '192.0.2.1/24', eth1: '198.51.100.254/24' },
    'sysctl -w net.ipv4.ip_forward=1',
    'ip route add 203.0.113.0/24 via 198.51.100.10',
    'ip route add 198.18.0.0/15 via 198.51.100.10',
  );
  const node = host(
    net,
    'node',
    { eth0: '198.51.100.10/24', eth1: '203.0.113.1/24' },
    'ip route add default via 198.51.100.254',
    'sysctl -w net.ipv4.ip_forward=1',
  );
  const pod = host(net, 'pod', { eth0: '203.0.113.9/24' }, 'ip route add default via 203.0.113.1', 'listen tcp 8080', 'listen udp 53');
  net.wire('client/eth0', 'router/eth0').wire('router/eth1', 'node/eth0').wire('node/eth1', 'pod/eth0');
  return { net, client, router, node, pod };
}
