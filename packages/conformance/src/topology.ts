/**
 * The host the conformance lab builds, as data: the same description drives the real network
 * namespaces (`lab.ts`) and netsim's side of every comparison, so the two cannot drift apart.
 *
 * ```
 *   client ── eth0 ┐                    ┌ vethpod ── eth0 pod
 *   192.0.2.2      │  node              │   203.0.113.2
 *                  │  192.0.2.1/30      │   203.0.113.1/30 (node side)
 *                  │  198.51.100.1/30   │
 *   uplink2 ─ eth1 ┘  default via 192.0.2.2; 198.18.0.0/16 via 198.51.100.2
 *   198.51.100.2
 * ```
 *
 * Every link is a /30, so the only on-link neighbour of each interface is its peer, and every
 * neighbour has a permanent entry: the node never sends ARP, and a packet never waits in a
 * neighbour queue (which would make the kernel finish with it later than the sentinel behind it).
 * Peers have no IPv4 address and IPv6 is disabled everywhere, so nothing in the lab ever sends a
 * frame by itself: every frame the capture sees is the test packet's doing.
 */
import { parseCidr, parseIpv4, prefixMask, type Cidr, type Ipv4 } from '@netsim/netfilter';

export type PeerName = 'client' | 'uplink2' | 'pod';
export const PEERS: readonly PeerName[] = ['client', 'uplink2', 'pod'];

export interface NodeIface {
  /** The interface name inside the node namespace. */
  readonly name: string;
  readonly mac: string;
  /** The node's address and prefix on this link. */
  readonly addr: Ipv4;
  readonly prefix: number;
  readonly peer: PeerName;
}

export interface Peer {
  readonly name: PeerName;
  /** The peer end's name inside the peer namespace. */
  readonly iface: string;
  readonly mac: string;
  /** The address the node's neighbour entry gives the peer (the peer itself holds none). */
  readonly addr: Ipv4;
}

export interface Route {
  readonly dst: Cidr;
  readonly dev: string;
  /** Gateway; absent for a directly connected route. */
  readonly via?: Ipv4;
}

export interface Topology {
  readonly ifaces: readonly NodeIface[];
  readonly peers: { readonly [P in PeerName]: Peer };
  /** Main table routes besides the connected ones, most specific first is not required. */
  readonly routes: readonly Route[];
}

const a = parseIpv4;

export const TOPOLOGY: Topology = {
  ifaces: [
    { name: 'eth0', mac: '02:00:5e:00:01:01', addr: a('192.0.2.1'), prefix: 30, peer: 'client' },
    { name: 'eth1', mac: '02:00:5e:00:02:01', addr: a('198.51.100.1'), prefix: 30, peer: 'uplink2' },
    { name: 'vethpod', mac: '02:00:5e:00:03:01', addr: a('203.0.113.1'), prefix: 30, peer: 'pod' },
  ],
  peers: {
    client: { name: 'client', iface: 'eth0', mac: '02:00:5e:00:01:02', addr: a('192.0.2.2') },
    uplink2: { name: 'uplink2', iface: 'eth0', mac: '02:00:5e:00:02:02', addr: a('198.51.100.2') },
    pod: { name: 'pod', iface: 'eth0', mac: '02:00:5e:00:03:02', addr: a('203.0.113.2') },
  },
  routes: [
    { dst: parseCidr('0.0.0.0/0'), dev: 'eth0', via: a('192.0.2.2') },
    { dst: parseCidr('198.18.0.0/16'), dev: 'eth1', via: a('198.51.100.2') },
  ],
};

export function ifaceOfPeer(t: Topology, peer: PeerName): NodeIface {
  const i = t.ifaces.find((x) => x.peer === peer);
  if (i === undefined) throw new Error(`topology: no node interface faces peer ${peer}`);
  return i;
}

export function ifaceByName(t: Topology, name: string): NodeIface | undefined {
  return t.ifaces.find((x) => x.name === name);
}

/** The subnet broadcast address of a node interface. */
export function broadcastOf(i: NodeIface): Ipv4 {
  return ((i.addr | ~prefixMask(i.prefix)) >>> 0) as Ipv4;
}

/** All routes of the main table: connected ones first, then the configured ones. */
export function mainRoutes(t: Topology): Route[] {
  const connected: Route[] = t.ifaces.map((i) => ({ dst: { addr: ((i.addr & prefixMask(i.prefix)) >>> 0) as Ipv4, prefix: i.prefix }, dev: i.name }));
  return [...connected, ...t.routes];
}

/** Longest prefix match in the main table. Every address has a route (there is a default). */
export function lookupRoute(t: Topology, dst: Ipv4): Route {
  let best: Route | undefined;
  for (const r of mainRoutes(t)) {
    if (((dst & prefixMask(r.dst.prefix)) >>> 0) !== r.dst.addr) continue;
    if (best === undefined || r.dst.prefix > best.dst.prefix) best = r;
  }
  if (best === undefined) throw new Error('topology: no route (the lab always has a default route)');
  return best;
}
