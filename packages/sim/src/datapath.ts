/**
 * The cluster's data plane, built on `@netsim/kernel`: every node is a Linux host whose rules are
 * the ones its agents program, Pods are their own network namespaces on a `cni0` bridge, and
 * outside hosts watch the result. The default network:
 *
 * ```
 *   lb 192.0.2.2 ─┐                                     ext 203.0.113.10 (listens tcp 443)
 *                 ├─ lan 192.0.2.0/24 ── gw 192.0.2.1 | 203.0.113.1 ── internet ──┘
 *   node-1 192.0.2.11 ─┤        (gw knows no Pod CIDR: Pod egress must be masqueraded)
 *   node-2 192.0.2.12 ─┘
 *     cni0 = first address of the node's Pod CIDR; Pods on veth ports;
 *     other nodes' Pod CIDRs routed via their node IPs (host-gw), or over a VXLAN `flannel.1` (vxlan)
 * ```
 *
 * A scenario adds to it in the kernel's own vocabulary (see {@link NetworkSpec}): host-file lines
 * per node and per extra host (a second NIC, a secondary address, a router, a client, sysctls),
 * rules for hosts no agent manages (a stateful firewall), and wires and switches between them.
 *
 * A Pod's namespace appears when its sandbox starts (the kubelet assigns the IP) and its link goes
 * down when the sandbox is torn down (the IP is released), so a stale DNAT rule toward a freed IP
 * leads nowhere — or to whichever Pod got the IP next.
 */
import { Network, formatPacketView, formatTrace, isKernelError, runHostCommand, type ConnectResult, type Host, type TraceStep } from '@netsim/kernel';
import { cidrContains, formatIpv4, isNetfilterError, parseCidr, parseIpv4, parseSave, type Ruleset } from '@netsim/netfilter';
import { SimError } from './errors.ts';
import type { RandomSource } from './prng.ts';
import type { NetworkSpec } from './scenario.ts';
import type { NodeInfo } from './view.ts';

export const LB_IP = '192.0.2.2';
export const GATEWAY_IP = '192.0.2.1';
export const EXTERNAL_IP = '203.0.113.10';
export const EXTERNAL_PORT = 443;

/** Hosts every data plane has, which scenarios may extend but not redefine (nor name a node after). */
export const BUILTIN_HOSTS: readonly string[] = ['lb', 'gw', 'ext'];

/** The VXLAN device of the `vxlan` Pod network, as flannel names it, and flannel's port. */
export const OVERLAY_DEVICE = 'flannel.1';
const OVERLAY_PORT = 8472;

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
  /** A failed connection's packets hop by hop (`formatTrace`), when the data plane keeps full traces. */
  readonly hops?: string;
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
      // The dropped packet says which leg broke: the client's SYN on the way in, or the SYN-ACK on
      // the way back (with the source the client will see).
      const d = r.drops[0];
      return { ok: false, outcome: 'timed-out', detail: d === undefined ? 'no reply' : `${formatPacketView(d.packet)} dropped at ${d.host}: ${d.reason}`, server: null };
    }
    case 'error':
      return { ok: false, outcome: 'error', detail: `${r.errno}: ${r.reason}`, server: null };
  }
}

/** `cluster.nodes[0].network[2]` */
export function formatScenarioPath(path: readonly (string | number)[]): string {
  let out = '';
  for (const k of path) out += typeof k === 'number' ? `[${k}]` : out === '' ? k : `.${k}`;
  return out;
}

/** A kernel or netfilter refusal of a scenario's network line, as a located {@link SimError}. */
function scenarioNetError(path: readonly (string | number)[], e: unknown): SimError {
  if (isKernelError(e) || isNetfilterError(e)) return new SimError('invalid-argument', `scenario ${formatScenarioPath(path)}: ${e.message}`, { path });
  throw e;
}

/** A node as the data plane builds it: its identity and the scenario's extra host-file lines. */
export interface DatapathNode {
  readonly info: NodeInfo;
  readonly network?: readonly string[];
}

export interface ClusterDatapathOptions {
  readonly rng: RandomSource;
  readonly nodes: readonly DatapathNode[];
  readonly initialRuleset: Ruleset;
  readonly network?: NetworkSpec;
  /**
   * `full` keeps every packet decision, so a failed probe carries its hops; `lean` (default)
   * keeps only drops and stack events. Outcomes are the same either way.
   */
  readonly packetTrace?: 'full' | 'lean';
}

export class ClusterDatapath {
  readonly net: Network;
  readonly #pods = new Map<string, PodNs>();
  readonly #podCidrs: { readonly node: string; readonly cidr: ReturnType<typeof parseCidr> }[] = [];
  #seq = 0;
  readonly #fullTrace: boolean;
  /** The next ephemeral source port of each probing host (see {@link ClusterDatapath.freshPort}). */
  readonly #nextPort = new Map<string, number>();

  /**
   * Builds the default network, then the scenario's additions. Errors in the additions are
   * {@link SimError}s whose `path` names the scenario field (`cluster.nodes[i].network[j]`,
   * `cluster.network.hosts[i].network[j]`, `cluster.network.links[i]`).
   */
  constructor(opts: ClusterDatapathOptions) {
    // Probes need the outcome and the drops, not every hop: the kernel's lean traces are cheaper.
    // A traced run keeps them all, for the hops of a failed probe.
    const net = new Network({ rng: opts.rng, trace: opts.packetTrace ?? 'lean' });
    this.#fullTrace = opts.packetTrace === 'full';
    this.net = net;
    const spec = opts.network ?? {};
    const gw = net.addHost('gw');
    gw.run('ip link add eth0 type veth', 'ip link set eth0 up', `ip addr add ${GATEWAY_IP}/24 dev eth0`, 'ip link add eth1 type veth', 'ip link set eth1 up', 'ip addr add 203.0.113.1/24 dev eth1', 'sysctl -w net.ipv4.ip_forward=1');
    const ext = net.addHost('ext');
    ext.run('ip link add eth0 type veth', 'ip link set eth0 up', `ip addr add ${EXTERNAL_IP}/24 dev eth0`, 'ip route add default via 203.0.113.1', `listen tcp ${EXTERNAL_PORT}`);
    const lb = net.addHost('lb');
    lb.run('ip link add eth0 type veth', 'ip link set eth0 up', `ip addr add ${LB_IP}/24 dev eth0`, `ip route add default via ${GATEWAY_IP}`);
    const segments = new Map<string, string[]>([
      ['lan', ['lb/eth0', 'gw/eth0']],
      ['internet', ['gw/eth1', 'ext/eth0']],
    ]);
    const vxlan = spec.podNetwork === 'vxlan';
    for (const { info: n } of opts.nodes) {
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
      if (vxlan) h.run(`ip link add ${OVERLAY_DEVICE} type vxlan id 1 dstport ${OVERLAY_PORT} local ${n.ip}`, `ip link set ${OVERLAY_DEVICE} up`, `ip addr add ${formatIpv4(cidr.addr)}/32 dev ${OVERLAY_DEVICE}`);
      for (const { info: other } of opts.nodes) {
        if (other.name === n.name) continue;
        if (!vxlan) {
          h.run(`ip route add ${other.podCidr} via ${other.ip}`);
          continue;
        }
        // flannel's vxlan backend: the peer's Pod CIDR via the peer's flannel.1 address, and the
        // neighbour + FDB entries that put that address behind the peer's node IP.
        const peer = formatIpv4(parseCidr(other.podCidr).addr);
        h.run(`ip route add ${other.podCidr} via ${peer} dev ${OVERLAY_DEVICE} onlink`, `overlay ${OVERLAY_DEVICE} peer ${peer} underlay ${other.ip}`);
      }
      segments.get('lan')?.push(`${n.name}/eth0`);
    }

    // The scenario's additions, in the kernel's vocabulary.
    opts.nodes.forEach((n, i) => this.#runLines(n.info.name, n.network ?? [], ['cluster', 'nodes', i, 'network']));
    (spec.hosts ?? []).forEach((hs, i) => {
      const at = ['cluster', 'network', 'hosts', i];
      if (!BUILTIN_HOSTS.includes(hs.name)) {
        if (net.hostNames().includes(hs.name)) throw new SimError('invalid-argument', `scenario ${formatScenarioPath([...at, 'name'])}: host "${hs.name}" is defined twice (or is a node)`, { path: [...at, 'name'] });
        net.addHost(hs.name);
      }
      this.#runLines(hs.name, hs.network, [...at, 'network']);
      if (hs.rules !== undefined) {
        try {
          net.host(hs.name).setRuleset(parseSave(hs.rules, { file: `${hs.name} rules` }));
        } catch (e) {
          throw scenarioNetError([...at, 'rules'], e);
        }
      }
    });
    const wires: { readonly a: string; readonly b: string; readonly path: readonly (string | number)[] }[] = [];
    (spec.links ?? []).forEach((l, i) => {
      const at = ['cluster', 'network', 'links', i];
      const ends = l.kind === 'wire' ? l.ends : l.members;
      ends.forEach((e, k) => this.#checkEndpoint(e, [...at, l.kind === 'wire' ? 'ends' : 'members', k]));
      if (l.kind === 'wire') {
        wires.push({ a: l.ends[0], b: l.ends[1], path: at });
        return;
      }
      const members = segments.get(l.name);
      if (members === undefined) segments.set(l.name, [...l.members]);
      else members.push(...l.members);
    });
    for (const [name, members] of segments) net.segment(name, members);
    for (const w of wires) {
      try {
        net.wire(w.a, w.b);
      } catch (e) {
        throw scenarioNetError(w.path, e);
      }
    }
  }

  #runLines(host: string, lines: readonly string[], at: readonly (string | number)[]): void {
    const h = this.net.host(host);
    lines.forEach((line, j) => {
      try {
        runHostCommand(h, line);
      } catch (e) {
        throw scenarioNetError([...at, j], e);
      }
    });
  }

  #checkEndpoint(endpoint: string, at: readonly (string | number)[]): void {
    const slash = endpoint.indexOf('/');
    const host = slash < 0 ? '' : endpoint.slice(0, slash);
    const iface = slash < 0 ? '' : endpoint.slice(slash + 1);
    let why: string | undefined;
    if (host === '' || iface === '') why = `"${endpoint}" is not host/interface (like "node-1/eth1")`;
    else if (!this.net.hostNames().includes(host)) why = `no host "${host}" (hosts: ${this.net.hostNames().join(', ')})`;
    else if (!this.net.host(host).hasIface(iface)) why = `host "${host}" has no interface "${iface}" (add it with "ip link add ${iface} type physical")`;
    if (why !== undefined) throw new SimError('invalid-argument', `scenario ${formatScenarioPath(at)}: ${why}`, { path: at });
  }

  /** The node's host (its rules, conntrack, interfaces). */
  host(node: string): Host {
    return this.net.host(node);
  }

  /** Every host's name (nodes, the built-in hosts, scenario hosts). */
  hostNames(): readonly string[] {
    return this.net.hostNames();
  }

  /** Whether the data plane has a host of that name (a node, a built-in host, a scenario host). */
  hasHost(name: string): boolean {
    return this.net.hostNames().includes(name);
  }

  /**
   * One host-file line on a host now (a timeline action). Errors are {@link SimError}s naming
   * `path` when given.
   */
  runCommand(host: string, line: string, path: readonly (string | number)[] = []): void {
    if (!this.hasHost(host)) throw new SimError('unknown-name', `${path.length > 0 ? `scenario ${formatScenarioPath(path)}: ` : ''}no host "${host}" in the data plane`, { path });
    try {
      runHostCommand(this.net.host(host), line);
    } catch (e) {
      throw scenarioNetError(path, e);
    }
  }

  /** A Pod's sandbox started with `ip`: its namespace appears on the node's bridge, listening on its ports. */
  podUp(args: { readonly node: string; readonly pod: string; readonly uid: string; readonly ip: string; readonly tcpPorts: readonly number[]; readonly udpPorts?: readonly number[] }): void {
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
    // UDP servers answer every datagram (echo), so a probe sees which Pod got it.
    for (const p of args.udpPorts ?? []) h.run(`listen udp ${p}`);
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

  /**
   * A fresh ephemeral source port for a new flow from `from`: the host's
   * `net.ipv4.ip_local_port_range` walked in order, so a port comes back only after the whole
   * range was used. Real clients get fresh ports too (the kernel's connect offset moves on with
   * every connection); a port drawn at random could meet the conntrack entry of an earlier probe
   * to the same destination, still bound to an endpoint that has since gone, and blame the
   * controller for a flow no real client would make.
   */
  freshPort(from: string): number {
    const [lo, hi] = this.net.host(from).config.sysctls.localPortRange;
    const cur = this.#nextPort.get(from);
    const port = cur === undefined || cur < lo || cur > hi ? lo : cur;
    this.#nextPort.set(from, port >= hi ? lo : port + 1);
    return port;
  }

  /**
   * One TCP connection attempt that is closed again once established (a health check): the
   * accepting host and the peer address it saw, so a probe can tell whether the source was kept.
   */
  probeTcp(from: string, to: string, port: number, nowMs: number): ProbeOutcome & { readonly peer?: string; readonly reached?: string } {
    const r = this.net.connect(from, to, port, { nowMs, synRetries: 0, sport: this.freshPort(from) });
    const o = summarise(r);
    // Who answered the SYN, even when the answer did not make it back.
    if (!o.ok) {
      const s = r.trace.find((x): x is Extract<TraceStep, { kind: 'stack' }> => x.kind === 'stack' && x.event === 'syn-ack');
      if (s !== undefined) {
        const reached = { ...o, reached: s.host };
        return this.#fullTrace ? { ...reached, hops: formatTrace(r.trace) } : reached;
      }
    }
    if (r.kind === 'established') {
      // Closing leaves the conntrack entries in TIME_WAIT rather than ESTABLISHED for days.
      this.net.close(r.connection, { nowMs });
      return r.server === null ? o : { ...o, peer: r.server.peer };
    }
    return this.#fullTrace ? { ...o, hops: formatTrace(r.trace) } : o;
  }

  /**
   * One UDP request from `from`'s source port `sport` (a flow that keeps its port, as a DNS
   * client or a game does; default an ephemeral port) and its answer: which host answered, and the peer address it saw.
   */
  probeUdp(from: string, to: string, port: number, sport: number | undefined, nowMs: number): ProbeOutcome & { readonly peer?: string } {
    const r = this.net.udp(from, to, port, { nowMs, sport: sport ?? this.freshPort(from) });
    let server: string | null = null;
    let peer: string | undefined;
    for (const s of r.trace) {
      if (s.kind !== 'stack' || s.event !== 'udp-reply') continue;
      server = s.host;
      peer = / answers (\S+)$/.exec(s.detail)?.[1];
    }
    const hops = this.#fullTrace ? { hops: formatTrace(r.trace) } : {};
    switch (r.kind) {
      case 'answered':
        return { ok: true, outcome: 'answered', detail: server === null ? `answered from ${r.from}` : `answered by ${server} from ${r.from}, which saw ${peer ?? '?'}`, server, ...(peer !== undefined ? { peer } : {}) };
      case 'unreachable':
        return { ok: false, outcome: 'unreachable', detail: `${r.errno} (${r.icmp}) from ${r.by}`, server: null, ...hops };
      case 'no-answer': {
        const d = r.drops[0];
        const why = d !== undefined ? `${formatPacketView(d.packet)} dropped at ${d.host}: ${d.reason}` : r.strayReplies.length > 0 ? `stray replies: ${r.strayReplies.join(', ')}` : 'no reply';
        return { ok: false, outcome: 'no-answer', detail: why, server, ...hops };
      }
      case 'error':
        return { ok: false, outcome: 'error', detail: `${r.errno}: ${r.reason}`, server: null };
    }
  }

  /** One TCP connection attempt (a single SYN, as health checks with a short timeout make). */
  connect(from: string, to: string, port: number, nowMs: number): ProbeOutcome {
    const r = this.net.connect(from, to, port, { nowMs, synRetries: 0, sport: this.freshPort(from) });
    const o = summarise(r);
    return o.ok || !this.#fullTrace ? o : { ...o, hops: formatTrace(r.trace) };
  }
}
