/**
 * The cluster's data plane, built on `@netsim/kernel`: every node is a Linux host whose rules are
 * the ones its agents program, Pods are their own network namespaces on a `cni0` bridge, and two
 * outside hosts watch the result:
 *
 * ```
 *   lb 192.0.2.2 ─┐                                     ext 203.0.113.10 (listens tcp 443)
 *                 ├─ lan 192.0.2.0/24 ── gw 192.0.2.1 | 203.0.113.1 ──┘
 *   node-1 192.0.2.11 ─┤        (gw knows no Pod CIDR: Pod egress must be masqueraded)
 *   node-2 192.0.2.12 ─┘
 *     cni0 = first address of the node's Pod CIDR; Pods on veth ports; other nodes' Pod CIDRs routed via their node IPs
 * ```
 *
 * A Pod's namespace appears when its sandbox starts (the kubelet assigns the IP) and its link goes
 * down when the sandbox is torn down (the IP is released), so a stale DNAT rule toward a freed IP
 * leads nowhere — or to whichever Pod got the IP next.
 */
import { Network, type ConnectResult, type Host } from '@netsim/kernel';
import { cidrContains, formatIpv4, parseCidr, parseIpv4, type Ruleset } from '@netsim/netfilter';
import type { RandomSource } from './prng.ts';
import type { NodeInfo } from './view.ts';

export const LB_IP = '192.0.2.2';
export const GATEWAY_IP = '192.0.2.1';
export const EXTERNAL_IP = '203.0.113.10';
export const EXTERNAL_PORT = 443;

interface PodNs {
  readonly host: string;
  readonly node: string;
  readonly nodeIface: string;
  readonly ip: string;
}

/** The outcome of one probe connection, summarised. */
export interface ProbeOutcome {
  readonly ok: boolean;
  /** `established`, `reset`, `unreachable`, `timed-out`, `error`, or `wrong-backend`. */
  readonly outcome: string;
  readonly detail: string;
  /** The host that accepted the connection, if any. */
  readonly server: string | null;
}

function summarise(r: ConnectResult): ProbeOutcome {
  switch (r.kind) {
    case 'established':
      return { ok: true, outcome: 'established', detail: r.server === null ? '' : `accepted by ${r.server.host} on ${r.server.local} from ${r.server.peer}`, server: r.server?.host ?? null };
    case 'reset':
      return { ok: false, outcome: 'reset', detail: `RST from ${r.by}`, server: null };
    case 'unreachable':
      return { ok: false, outcome: 'unreachable', detail: `${r.errno} from ${r.by}`, server: null };
    case 'timed-out': {
      const d = r.drops[0];
      return { ok: false, outcome: 'timed-out', detail: d === undefined ? 'no reply' : `dropped at ${d.host}: ${d.reason}`, server: null };
    }
    case 'error':
      return { ok: false, outcome: 'error', detail: `${r.errno}: ${r.reason}`, server: null };
  }
}

export class ClusterDatapath {
  readonly net: Network;
  readonly #pods = new Map<string, PodNs>();
  readonly #podCidrs: { readonly node: string; readonly cidr: ReturnType<typeof parseCidr> }[] = [];
  #seq = 0;

  constructor(opts: { readonly rng: RandomSource; readonly nodes: readonly NodeInfo[]; readonly initialRuleset: Ruleset }) {
    // Probes need the outcome and the drops, not every hop: the kernel's lean traces are cheaper.
    const net = new Network({ rng: opts.rng, trace: 'lean' });
    this.net = net;
    const gw = net.addHost('gw');
    gw.run('ip link add eth0 type veth', 'ip link set eth0 up', `ip addr add ${GATEWAY_IP}/24 dev eth0`, 'ip link add eth1 type veth', 'ip link set eth1 up', 'ip addr add 203.0.113.1/24 dev eth1', 'sysctl -w net.ipv4.ip_forward=1');
    const ext = net.addHost('ext');
    ext.run('ip link add eth0 type veth', 'ip link set eth0 up', `ip addr add ${EXTERNAL_IP}/24 dev eth0`, 'ip route add default via 203.0.113.1', `listen tcp ${EXTERNAL_PORT}`);
    net.wire('gw/eth1', 'ext/eth0');
    const lb = net.addHost('lb');
    lb.run('ip link add eth0 type veth', 'ip link set eth0 up', `ip addr add ${LB_IP}/24 dev eth0`, `ip route add default via ${GATEWAY_IP}`);
    const lan: string[] = ['lb/eth0', 'gw/eth0'];
    for (const n of opts.nodes) {
      const h = net.addHost(n.name);
      h.setRuleset(opts.initialRuleset);
      const cidr = parseCidr(n.podCidr);
      this.#podCidrs.push({ node: n.name, cidr });
      const gwAddr = formatIpv4(cidr.addr + 1);
      h.run(
        'ip link add eth0 type veth',
        'ip link set eth0 up',
        `ip addr add ${n.ip}/24 dev eth0`,
        `ip route add default via ${GATEWAY_IP}`,
        'sysctl -w net.ipv4.ip_forward=1',
        'ip link add cni0 type bridge',
        'ip link set cni0 up',
        `ip addr add ${gwAddr}/${cidr.prefix} dev cni0`,
      );
      for (const other of opts.nodes) if (other.name !== n.name) h.run(`ip route add ${other.podCidr} via ${other.ip}`);
      lan.push(`${n.name}/eth0`);
    }
    net.segment('lan', lan);
  }

  /** The node's host (its rules, conntrack, interfaces). */
  host(node: string): Host {
    return this.net.host(node);
  }

  /** A Pod's sandbox started with `ip`: its namespace appears on the node's bridge, listening on its ports. */
  podUp(args: { readonly node: string; readonly pod: string; readonly uid: string; readonly ip: string; readonly tcpPorts: readonly number[] }): void {
    if (this.#pods.has(args.uid)) return;
    const cidr = this.#podCidrs.find((c) => c.node === args.node)?.cidr;
    if (cidr === undefined || !cidrContains(cidr, parseIpv4(args.ip))) return;
    const n = ++this.#seq;
    const name = `pod${n}.${args.pod.replace("/", ".")}`;
    const nodeIface = `veth${n}`;
    const node = this.net.host(args.node);
    node.run(`ip link add ${nodeIface} type veth`, `ip link set ${nodeIface} master cni0`, `ip link set ${nodeIface} up`);
    const h = this.net.addHost(name);
    h.run('ip link add eth0 type veth', 'ip link set eth0 up', `ip addr add ${args.ip}/${cidr.prefix} dev eth0`, `ip route add default via ${formatIpv4(cidr.addr + 1)}`);
    for (const p of args.tcpPorts) h.run(`listen tcp ${p}`);
    this.net.wire(`${name}/eth0`, `${args.node}/${nodeIface}`);
    this.#pods.set(args.uid, { host: name, node: args.node, nodeIface, ip: args.ip });
  }

  /** A Pod's sandbox was torn down: its link goes down and its IP answers no more. */
  podDown(uid: string): void {
    const p = this.#pods.get(uid);
    if (p === undefined) return;
    this.#pods.delete(uid);
    this.net.host(p.node).setLinkUp(p.nodeIface, false);
    this.net.host(p.host).setLinkUp('eth0', false);
  }

  /** The namespace host of a running Pod sandbox, by uid. */
  podHost(uid: string): string | undefined {
    return this.#pods.get(uid)?.host;
  }

  /** One TCP connection attempt (a single SYN, as health checks with a short timeout make). */
  connect(from: string, to: string, port: number, nowMs: number): ProbeOutcome {
    return summarise(this.net.connect(from, to, port, { nowMs, synRetries: 0 }));
  }
}
