/**
 * A simulation scenario as plain data: the cluster, the controller under test, a timeline of
 * actions and faults, probes and the run's horizon. Property tests generate these; a failing one
 * is exported as-is, so it can be saved, replayed and turned into a scenario file by
 * `@netsim/scenario` (which owns the YAML format): every field is JSON-able and nothing refers to
 * code except by name (the controller, through a registry).
 */
import { BUILTIN_HOSTS } from './datapath.ts';
import { checkAction } from './actions/index.ts';
import { SimError } from './errors.ts';
import type { JsonObject } from './json.ts';

/** The version tag of this data shape; bumped on incompatible changes. */
export const SIM_SCENARIO_FORMAT = 'netsim.sim-scenario/v1';

export type Protocol = 'TCP' | 'UDP';

/** A container port a Pod declares and listens on once running. */
export interface PortSpec {
  readonly port: number;
  readonly protocol: Protocol;
  readonly name?: string;
}

/** A Pod to create, bound to a node. */
export interface PodSpec {
  readonly namespace?: string;
  readonly name: string;
  readonly node: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly ports: readonly PortSpec[];
  /** Seconds of graceful termination on delete (default 0 in scenarios: churn is fast). */
  readonly terminationGracePeriodSeconds?: number;
  /**
   * A `preStop` hook that sleeps this many seconds (at most the grace period): on a graceful
   * delete the Pod keeps running and serving that long, its endpoints terminating, before its
   * containers stop.
   */
  readonly preStopSleepSeconds?: number;
}

export interface ServicePortSpec {
  readonly name?: string;
  readonly port: number;
  /** A container port number, or the name of a container port (resolved per Pod, as Kubernetes does). */
  readonly targetPort: number | string;
  readonly protocol: Protocol;
  /** NodePort / LoadBalancer services: a fixed node port (else allocated). */
  readonly nodePort?: number;
}

/** A Service selecting Pods by labels. */
export interface ServiceSpec {
  readonly namespace?: string;
  readonly name: string;
  readonly type?: 'ClusterIP' | 'NodePort' | 'LoadBalancer';
  readonly selector: Readonly<Record<string, string>>;
  readonly ports: readonly ServicePortSpec[];
  readonly annotations?: Readonly<Record<string, string>>;
  readonly externalTrafficPolicy?: 'Cluster' | 'Local';
  /** `ClientIP`: each client sticks to one endpoint (default `None`). */
  readonly sessionAffinity?: 'None' | 'ClientIP';
  /** With `ClientIP`: `sessionAffinityConfig.clientIP.timeoutSeconds` (default 10800). */
  readonly sessionAffinityTimeoutSeconds?: number;
}

export interface NodeSpec {
  readonly name: string;
  /**
   * Host-file lines (`@netsim/kernel`'s vocabulary: `ip link add eth1 type physical`, `ip addr add
   * 198.51.100.11/25 dev eth1`, `ip route add …`, `sysctl -w net.ipv4.conf.all.rp_filter=1`) run on
   * the node after the world has built its default network (eth0 on the LAN, cni0, the Pod network).
   */
  readonly network?: readonly string[];
  /**
   * The controller this node runs instead of the scenario's `controller` (by registry name, with
   * its own options): a node on another version or variant, as in a rollout. `World` ignores it;
   * `runScenario` resolves it into {@link WorldOptions.controllers}.
   */
  readonly controller?: { readonly name: string; readonly options?: JsonObject };
  /** The controllers this node runs beside its controller, instead of the scenario's `alongside` (an empty list: none). */
  readonly alongside?: readonly { readonly name: string; readonly options?: JsonObject }[];
}

/** A host of the data plane that is not a node: a client, a router, a firewall, a second load balancer. */
export interface HostSpec {
  /** A new host's name, or `lb`, `gw`, `ext` to add lines to a built-in one. */
  readonly name: string;
  /** Host-file lines run in order (interfaces, addresses, routes, sysctls, `listen tcp PORT`). */
  readonly network: readonly string[];
  /** The host's rules as `iptables-save` prints them (e.g. a stateful firewall); no agent manages them. */
  readonly rules?: string;
}

/** An L2 link between interfaces named `host/iface`. */
export type LinkSpec =
  /** A cable or veth pair between two interfaces. */
  | { readonly kind: 'wire'; readonly ends: readonly [string, string] }
  /** A switch: every member in one broadcast domain. The built-in `lan` (nodes' eth0, lb, gw) and `internet` (gw's eth1, ext) may be extended. */
  | { readonly kind: 'segment'; readonly name: string; readonly members: readonly string[] };

/** The data plane beyond the default one (see `docs/engine.md`, "The world"). */
export interface NetworkSpec {
  /**
   * How nodes reach each other's Pod CIDRs: `host-gw` (default: routes via the node IPs on the LAN)
   * or `vxlan` (flannel's VXLAN backend: a `flannel.1` device holding the first address of the
   * node's Pod CIDR as /32, peers' Pod CIDRs routed `via <peer>.0 dev flannel.1 onlink`, VXLAN over
   * the node IPs, port 8472).
   */
  readonly podNetwork?: 'host-gw' | 'vxlan';
  /** Extra hosts, or extra lines and rules for the built-in `lb`, `gw` and `ext`. */
  readonly hosts?: readonly HostSpec[];
  /** Wires and switches joining the hosts' interfaces. */
  readonly links?: readonly LinkSpec[];
}

export interface ClusterSpec {
  readonly nodes: readonly NodeSpec[];
  /**
   * Which client-go informer queue the agents' informers use (default DeltaFIFO, what client-go up
   * to v0.35 and most deployed agents run; RealFIFO is the InOrderInformers default; AtomicFIFO
   * adds atomic relists). See docs/kube.md.
   */
  readonly queueMode?: 'DeltaFIFO' | 'RealFIFO' | 'AtomicFIFO';
  /** Objects present before the agents start. */
  readonly services?: readonly ServiceSpec[];
  readonly pods?: readonly PodSpec[];
  /** Prefix length of each node's Pod CIDR (default 24). Small CIDRs make Pod IP reuse likely. */
  readonly nodeCidrMaskSize?: number;
  /**
   * How kubelets pick Pod IPs: `round-robin` (CNI host-local, the default) or `lowest-free`
   * (a freed IP comes back at once: IP reuse).
   */
  readonly ipamPolicy?: 'round-robin' | 'lowest-free';
  /** The data plane beyond the default one: a Pod overlay, extra hosts, links (nodes' own lines are on {@link NodeSpec}). */
  readonly network?: NetworkSpec;
}

/** Everything that can happen on a timeline: Kubernetes changes, faults and lifecycle events. */
export type Action =
  | { readonly kind: 'pod.create'; readonly pod: PodSpec }
  | { readonly kind: 'pod.delete'; readonly namespace?: string; readonly name: string; readonly graceSeconds?: number }
  /** Delete then create a Pod of the same name and spec `gapMs` later (a StatefulSet restart). */
  | { readonly kind: 'pod.recreate'; readonly namespace?: string; readonly name: string; readonly gapMs: number }
  /**
   * A running Pod's containers exit on their own with a terminal phase: its IP is released while
   * the Pod stays in the API (status still showing the IP) until deleted.
   */
  | { readonly kind: 'pod.complete'; readonly namespace?: string; readonly name: string; readonly phase: 'Succeeded' | 'Failed' }
  /**
   * Scale a workload to `replicas` Pods, named as a StatefulSet names them (`<name>-0`, `<name>-1`,
   * …) and handled as one with `podManagementPolicy: Parallel`: every missing ordinal below
   * `replicas` is created at once from the template, on `nodes[ordinal % nodes.length]`; every Pod
   * with an ordinal at or above it is deleted at once, highest first.
   */
  | {
      readonly kind: 'workload.scale';
      readonly namespace?: string;
      readonly name: string;
      readonly replicas: number;
      readonly nodes: readonly string[];
      readonly labels?: Readonly<Record<string, string>>;
      readonly ports: readonly PortSpec[];
    }
  | { readonly kind: 'service.create'; readonly service: ServiceSpec }
  | { readonly kind: 'service.update'; readonly service: ServiceSpec }
  | { readonly kind: 'service.delete'; readonly namespace?: string; readonly name: string }
  /**
   * The agent on `node` (the controller under test's, or with `agent` the one of that controller
   * name: `kube-proxy` for `node-1/kube-proxy`) dies at once (SIGKILL, OOM) and starts again
   * `restartAfterMs` later.
   */
  | { readonly kind: 'agent.crash'; readonly node: string; readonly agent?: string; readonly restartAfterMs: number }
  /** The agent on `node` (as for agent.crash) gets SIGTERM (its shutdown code runs), exits, and starts again `downMs` after exiting. */
  | { readonly kind: 'agent.restart'; readonly node: string; readonly agent?: string; readonly graceMs?: number; readonly downMs: number }
  /** `node` reboots: its rules and conntrack are lost at once, its agents die and start again `downMs` later. */
  | { readonly kind: 'node.reboot'; readonly node: string; readonly downMs: number }
  /** `node` is drained (`kubectl drain`): each of its Pods is evicted with its own grace period, or `graceSeconds`. */
  | { readonly kind: 'node.drain'; readonly node: string; readonly graceSeconds?: number }
  /** The watches of the agents' informers (on `node`, or everywhere) lose every event for `durationMs`, then relist. */
  | { readonly kind: 'watch.gap'; readonly node?: string; readonly durationMs: number }
  /** The watches break now with 410 Gone: the informers relist after their backoff; with `count` > 1, again every `everyMs` (a relist storm). */
  | { readonly kind: 'watch.reset'; readonly node?: string; readonly count?: number; readonly everyMs?: number }
  /** Watch events reach the informers `delayMs` late for `durationMs`. */
  | { readonly kind: 'watch.delay'; readonly node?: string; readonly delayMs: number; readonly durationMs: number }
  /**
   * The agents' informers (on `node`, or everywhere) resync now: every cached object is delivered
   * again to every handler as an unchanged update. A controller at its fixpoint changes nothing.
   */
  | { readonly kind: 'informer.resync'; readonly node?: string }
  /** The agents' informers (on `node`, or everywhere) take `delayMs` per queued change for `durationMs`: slow event handlers. */
  | { readonly kind: 'handlers.slow'; readonly node?: string; readonly delayMs: number; readonly durationMs: number }
  /** Another program holds the xtables lock on `node` for `durationMs`. */
  | { readonly kind: 'iptables.lock'; readonly node: string; readonly durationMs: number }
  /**
   * iptables commands and restores on `node` fail with "Resource temporarily unavailable": the
   * next `count` of them (transient), and with `durationMs` every one for that long (persistent).
   */
  | { readonly kind: 'iptables.fail'; readonly node: string; readonly count?: number; readonly durationMs?: number }
  /** The next iptables-restore on `node` fails at input line `line`. */
  | { readonly kind: 'iptables.restore-fail'; readonly node: string; readonly line: number }
  /** iptables commands on `node` take `extraMs` longer for `durationMs`. */
  | { readonly kind: 'iptables.slow'; readonly node: string; readonly extraMs: number; readonly durationMs: number }
  /** `sysctl -w key=value` on a host of the data plane (a node, `lb`, `gw`, `ext` or a scenario host). */
  | { readonly kind: 'sysctl.set'; readonly host: string; readonly key: string; readonly value: string }
  /** `ip link set IFACE up|down` on a host. */
  | { readonly kind: 'link.set'; readonly host: string; readonly iface: string; readonly state: 'up' | 'down' }
  /** `ip addr add|del ADDRESS/PREFIX dev IFACE` on a host. */
  | { readonly kind: 'addr.add' | 'addr.del'; readonly host: string; readonly iface: string; readonly address: string }
  /** `ip route add|del ROUTE` on a host (`route` is what follows: `198.51.100.128/25 via 192.0.2.3`). */
  | { readonly kind: 'route.add' | 'route.del'; readonly host: string; readonly route: string }
  /** Any host-file line on a host (`ip route add …`, `ip rule add …`, `listen tcp 80`). */
  | { readonly kind: 'host.run'; readonly host: string; readonly command: string };

/** The actions that run a command on a host of the data plane (`sysctl.set`, `link.set`, `addr.*`, `route.*`, `host.run`). */
export type HostAction = Extract<Action, { readonly host: string }>;

export function isHostAction(a: Action): a is HostAction {
  return 'host' in a;
}

export type ActionKind = Action['kind'];

export interface TimedAction {
  readonly atMs: number;
  readonly action: Action;
}

/** A periodic probe run through the datapath. */
export type ProbeSpec =
  /** A load balancer health-checks every node port the NodePortLocal annotations publish (annotation default `nodeportlocal.antrea.io`). */
  | { readonly kind: 'npl-health'; readonly everyMs: number; readonly annotation?: string }
  /** A load balancer health-checks a NodePort on every node. */
  | { readonly kind: 'nodeport-health'; readonly service: string; readonly namespace?: string; readonly everyMs: number }
  /** Every running Pod opens a connection to an external host (egress through masquerade). */
  | { readonly kind: 'pod-egress'; readonly everyMs: number }
  /**
   * One TCP connection from a host (`lb`, a scenario host) or a running Pod to `to:port` — a client
   * reaching a node by a chosen address, or a Pod calling a NodePort.
   */
  | { readonly kind: 'connect'; readonly from: ProbeSource; readonly to: string; readonly port: number; readonly everyMs: number };

/** Where a `connect` probe starts: a host of the data plane, or a Pod (while it runs). */
export type ProbeSource = { readonly host: string } | { readonly pod: string; readonly namespace?: string };

/**
 * A swarm draw: the action kinds (and composite histories such as `blind-churn`) a generated
 * scenario was drawn with, each with its relative weight. Informational when replaying (the
 * timeline is what runs); the trace and story show it so a counterexample says which swarm found it.
 */
export interface SwarmConfig {
  readonly features: { readonly [feature: string]: number };
}

export interface SimScenario {
  readonly format: typeof SIM_SCENARIO_FORMAT;
  /** The swarm draw that generated this scenario, when one did. */
  readonly swarm?: SwarmConfig;
  /** The simulation seed: every tie-break, id and random choice derives from it. */
  readonly seed: number;
  /** Optional explicit tie-break choices (replay by path). */
  readonly schedule?: { readonly path: readonly number[]; readonly whenPathExhausted?: 'prng' | 'fifo' };
  readonly cluster: ClusterSpec;
  /** The controller under test, by registry name, deployed on every node; options are passed to its factory. */
  readonly controller: { readonly name: string; readonly options?: JsonObject };
  /**
   * Other controllers, by registry name, each an agent of its own on every node beside the one
   * under test (kube-proxy next to flannel): `runScenario` resolves them into
   * {@link WorldOptions.alongside}.
   */
  readonly alongside?: readonly { readonly name: string; readonly options?: JsonObject }[];
  readonly timeline: readonly TimedAction[];
  readonly probes?: readonly ProbeSpec[];
  /** The agents start at t=0; the run ends here. */
  readonly horizonMs: number;
  /** How long after a disruption transient disagreement (rules vs Pods, failing probes) is tolerated. */
  readonly settleMs: number;
}

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function fail(path: string, msg: string): never {
  throw new SimError('invalid-argument', `scenario ${path}: ${msg}`, { path: path.split(/\.|\[|\]/).filter((k) => k !== '').map((k) => (/^[0-9]+$/.test(k) ? Number(k) : k)) });
}

const IPV4 = /^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$/;

function checkMs(path: string, v: unknown, min = 0): void {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) fail(path, `must be an integer of milliseconds >= ${min}, got ${JSON.stringify(v)}`);
}

function checkNode(path: string, node: string | undefined, nodes: ReadonlySet<string>): void {
  if (node !== undefined && !nodes.has(node)) fail(path, `unknown node "${node}" (nodes: ${[...nodes].join(', ')})`);
}

/**
 * Check a scenario's shape and references (node names, times) and name the offending field.
 * Throws a `SimError` with code `invalid-argument`.
 */
export function validateScenario(s: SimScenario): void {
  const format: unknown = s.format;
  if (format !== SIM_SCENARIO_FORMAT) fail('format', `expected "${SIM_SCENARIO_FORMAT}", got ${JSON.stringify(format)}`);
  if (!Number.isSafeInteger(s.seed)) fail('seed', `must be a safe integer, got ${JSON.stringify(s.seed)}`);
  if (s.cluster.nodes.length === 0) fail('cluster.nodes', 'needs at least one node');
  const nodes = new Set<string>();
  s.cluster.nodes.forEach((n, i) => {
    if (!NAME.test(n.name)) fail(`cluster.nodes[${i}].name`, `"${n.name}" is not a DNS-1123 label`);
    if (nodes.has(n.name)) fail(`cluster.nodes[${i}].name`, `duplicate node "${n.name}"`);
    nodes.add(n.name);
    if (n.controller !== undefined && n.controller.name === '') fail(`cluster.nodes[${i}].controller.name`, 'must name a controller');
  });
  (s.alongside ?? []).forEach((c, i) => {
    if (c.name === '') fail(`alongside[${i}].name`, 'must name a controller');
  });
  (s.cluster.pods ?? []).forEach((p, i) => checkNode(`cluster.pods[${i}].node`, p.node, nodes));
  // The data plane's hosts: nodes, the built-in ones, and the scenario's.
  const hosts = new Set<string>([...nodes, ...BUILTIN_HOSTS]);
  const net = s.cluster.network;
  (net?.hosts ?? []).forEach((h, i) => {
    const at = `cluster.network.hosts[${i}].name`;
    if (!NAME.test(h.name)) fail(at, `"${h.name}" is not a DNS-1123 label`);
    if (nodes.has(h.name)) fail(at, `"${h.name}" is a node: give a node's lines in cluster.nodes[].network`);
    if (!BUILTIN_HOSTS.includes(h.name) && hosts.has(h.name)) fail(at, `duplicate host "${h.name}"`);
    hosts.add(h.name);
  });
  (net?.links ?? []).forEach((l, i) => {
    if (l.kind === 'segment' && !NAME.test(l.name)) fail(`cluster.network.links[${i}].name`, `"${l.name}" is not a DNS-1123 label`);
    const ends = l.kind === 'wire' ? l.ends : l.members;
    ends.forEach((e, k) => {
      const host = e.split('/')[0] ?? '';
      if (!hosts.has(host)) fail(`cluster.network.links[${i}].${l.kind === 'wire' ? 'ends' : 'members'}[${k}]`, `unknown host "${host}" in "${e}" (hosts: ${[...hosts].join(', ')})`);
    });
  });
  const checkHost = (path: string, host: string): void => {
    if (!hosts.has(host)) fail(path, `unknown host "${host}" (hosts: ${[...hosts].join(', ')})`);
  };
  (s.probes ?? []).forEach((p, i) => {
    checkMs(`probes[${i}].everyMs`, p.everyMs, 1);
    if (p.kind !== 'connect') return;
    if ('host' in p.from) checkHost(`probes[${i}].from.host`, p.from.host);
    if (!IPV4.test(p.to)) fail(`probes[${i}].to`, `expected an IPv4 address, got ${JSON.stringify(p.to)}`);
    if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65535) fail(`probes[${i}].port`, `expected a port from 1 to 65535, got ${JSON.stringify(p.port)}`);
  });
  checkMs('horizonMs', s.horizonMs, 1);
  checkMs('settleMs', s.settleMs);
  s.timeline.forEach((t, i) => {
    const at = `timeline[${i}]`;
    checkMs(`${at}.atMs`, t.atMs);
    if (t.atMs > s.horizonMs) fail(`${at}.atMs`, `${t.atMs} is after the horizon ${s.horizonMs}`);
    checkAction(t.action, { prefix: 'scenario ', path: `${at}.action`, nodes, hosts });
  });
}
