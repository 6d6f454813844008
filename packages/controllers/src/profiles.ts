/**
 * Fuzz profiles: for a controller family, which histories to generate and which invariants to
 * check. `netsim fuzz --controller npl:faulty` looks up the profile of `npl` and writes any
 * counterexample as a scenario file with these invariants.
 */
import { IPTABLES_FAULTS, POD_CHURN, RESTARTS, WATCH_FAULTS, controllerProperty, scenarioArbitrary, type ScenarioArbitraryOptions, type SimulationProperty } from '@netsim/check';
import type { ControllerRegistry, JsonObject, PodSpec, PortSpec, ServiceSpec, SimScenario } from '@netsim/sim';
import { BUILTIN_SPECS, buildInvariant, type InvariantRegistry, type InvariantSpec } from '@netsim/scenario';

/** What to generate and check for one controller family. */
export interface FuzzProfile {
  /** Options of `@netsim/check`'s `scenarioArbitrary`, without the controller (filled in by name). */
  readonly scenarios: Omit<ScenarioArbitraryOptions, 'controller'>;
  /** Adjusts each generated scenario (applied inside the arbitrary, so shrinking keeps it). */
  readonly adjust?: (s: SimScenario) => SimScenario;
  readonly invariants: readonly InvariantSpec[];
  /** Check the built-in, controller-agnostic invariants too (default true). */
  readonly builtins?: boolean;
  /** Options every generated scenario gives the controller under test (e.g. a shorter retry period, so a run sees the retry). */
  readonly controllerOptions?: JsonObject;
}

/** The invariants a campaign with this profile checks: the profile's own, then the built-in ones (unless turned off). */
export function fuzzInvariants(profile: FuzzProfile): InvariantSpec[] {
  const own = [...profile.invariants];
  if (profile.builtins === false) return own;
  return [...own, ...BUILTIN_SPECS.filter((b) => !own.some((o) => o.kind === 'builtin' && b.kind === 'builtin' && o.check === b.check))];
}

/** Three TCP ports (one a Service targets by name) and a UDP one: NodePortLocal maps both protocols. */
const NPL_PORTS: readonly PortSpec[] = [
  { port: 8080, protocol: 'TCP', name: 'http' },
  { port: 8081, protocol: 'TCP', name: 'metrics' },
  { port: 8082, protocol: 'TCP', name: 'admin' },
  { port: 8083, protocol: 'UDP', name: 'dns' },
];

/**
 * Antrea programs a rule for every integer targetPort of a selecting Service, declared by the Pod
 * or not; "no stale DNAT" wants a declared port. Every generated Pod (created or scaled up)
 * declares all the Service's target ports, so the profile finds the incident's flaws rather than
 * that difference.
 */
function withAllNplPorts(s: SimScenario): SimScenario {
  return withPorts(s, NPL_PORTS);
}

/** Every Pod of the scenario (initial, created, scaled up) declares `ports`. */
function withPorts(s: SimScenario, ports: readonly PortSpec[]): SimScenario {
  const pod = (p: PodSpec): PodSpec => ({ ...p, ports: [...ports] });
  return {
    ...s,
    cluster: { ...s.cluster, ...(s.cluster.pods !== undefined ? { pods: s.cluster.pods.map(pod) } : {}) },
    timeline: s.timeline.map((t) =>
      t.action.kind === 'pod.create' ? { ...t, action: { ...t.action, pod: pod(t.action.pod) } } : t.action.kind === 'workload.scale' ? { ...t, action: { ...t.action, ports: [...ports] } } : t,
    ),
  };
}

/**
 * A `web` backend on node-1 that churn never touches (its name is outside the generated pool), so
 * the health-checked Service always has an endpoint and a failed check is the proxy's doing.
 */
function withStableBackend(s: SimScenario): SimScenario {
  const stable: PodSpec = { name: 'stable-0', node: s.cluster.nodes[0]?.name ?? 'node-1', labels: { app: 'web' }, ports: [...PROXY_PORTS] };
  const all = withPorts(s, PROXY_PORTS);
  return { ...all, cluster: { ...all.cluster, pods: [stable, ...(all.cluster.pods ?? [])] } };
}

/** The backends of the proxied Services serve HTTP over TCP and DNS over UDP. */
const PROXY_PORTS: readonly PortSpec[] = [
  { port: 8080, protocol: 'TCP' },
  { port: 5353, protocol: 'UDP' },
];

const NPL_ANNOTATION = 'nodeportlocal.antrea.io';

/**
 * The container ports of the generic cluster's Pods: named TCP ports a Service targets by name,
 * a UDP port, and one port no Service targets (a Pod's ports need not match a Service's).
 */
const GENERIC_PORTS: readonly PortSpec[] = [
  { port: 8080, protocol: 'TCP', name: 'http' },
  { port: 8081, protocol: 'TCP', name: 'metrics' },
  { port: 8443, protocol: 'TCP', name: 'https' },
  { port: 5353, protocol: 'UDP', name: 'dns' },
  { port: 9090, protocol: 'TCP', name: 'admin' },
];

/**
 * The generic cluster's Services: every kind a node-networking controller may care about. A
 * ClusterIP Service with a named targetPort and a UDP port; NodePorts under externalTrafficPolicy
 * Cluster and Local; a LoadBalancer; a NodePortLocal-enabled Service with a TCP, a named and a UDP
 * target port.
 */
const GENERIC_SERVICES: readonly ServiceSpec[] = [
  { name: 'web', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }, { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP' }] },
  { name: 'web-np', type: 'NodePort', externalTrafficPolicy: 'Cluster', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30080 }, { name: 'dns', port: 53, targetPort: 'dns', protocol: 'UDP', nodePort: 30053 }] },
  { name: 'web-local', type: 'NodePort', externalTrafficPolicy: 'Local', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30081 }] },
  { name: 'web-lb', type: 'LoadBalancer', selector: { app: 'web' }, ports: [{ name: 'https', port: 443, targetPort: 'https', protocol: 'TCP', nodePort: 30443 }] },
  {
    name: 'web-npl',
    selector: { app: 'web' },
    annotations: { [`${NPL_ANNOTATION}/enabled`]: 'true' },
    ports: [
      { name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' },
      { name: 'metrics', port: 81, targetPort: 'metrics', protocol: 'TCP' },
      { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP' },
    ],
  },
];

/**
 * What the generic swarm may turn on: every history real clusters produce that a controller's
 * own network does not break by itself (network changes such as rp_filter or a link down are left
 * to scenarios that describe them).
 */
export const SWARM_KINDS = [
  'pod.create',
  ...POD_CHURN.filter((k) => k !== 'pod.create'),
  'pod.complete',
  'workload.scale',
  'service.update',
  'service.delete',
  'service.create',
  ...RESTARTS,
  'node.reboot',
  ...WATCH_FAULTS,
  'handlers.slow',
  'informer.resync',
  ...IPTABLES_FAULTS,
  'blind-churn',
  'graceful-delete',
  'relist-storm',
  'iptables-outage',
  'failing-start',
  'service-edit',
  'failed-sync',
  'drain',
] as const;

/**
 * The default profile of any controller without a preset: a swarm over a generic cluster of one
 * to three nodes (lowest-free or round-robin IPAM, so IPs come back), with the Services of
 * {@link GENERIC_SERVICES}, multi-port Pods on several nodes, and every kind of
 * {@link SWARM_KINDS}. Each run draws which kinds are on and their weights; the built-in,
 * controller-agnostic invariants check it.
 */
export const GENERIC_PROFILE: FuzzProfile = {
  scenarios: {
    cluster: { nodes: { min: 1, max: 3 }, initialPods: 3, services: GENERIC_SERVICES, ipamPolicies: ['lowest-free', 'round-robin'] },
    pods: { poolSize: 4, maxPorts: 3, ports: GENERIC_PORTS },
    timeline: { kinds: [...SWARM_KINDS], maxActions: 8 },
    swarm: true,
    horizonMs: 20_000,
    settleMs: 3000,
  },
  invariants: [],
};

/** The NodePortLocal-enabled Service of the npl preset: three TCP target ports (one named) and a UDP one. */
const NPL_SERVICE: ServiceSpec = {
  name: 'web',
  selector: { app: 'web' },
  annotations: { [`${NPL_ANNOTATION}/enabled`]: 'true' },
  ports: [
    { name: 'p0', port: 80, targetPort: 8080, protocol: 'TCP' },
    { name: 'p1', port: 81, targetPort: 'metrics', protocol: 'TCP' },
    { name: 'p2', port: 82, targetPort: 8082, protocol: 'TCP' },
    { name: 'p3', port: 83, targetPort: 8083, protocol: 'UDP' },
  ],
};

/**
 * Presets of the reference controllers, by the part of the name before `:`. Each is a swarm over
 * every kind of {@link SWARM_KINDS} that applies to its cluster (each run draws which kinds are on
 * and their weights), checked by the built-in, controller-agnostic invariants; a preset only
 * chooses the cluster the family is about.
 */
export const FUZZ_PROFILES: { readonly [family: string]: FuzzProfile } = {
  npl: {
    scenarios: {
      cluster: { nodes: { min: 1, max: 2 }, initialPods: 2, services: [NPL_SERVICE], ipamPolicies: ['lowest-free', 'round-robin'] },
      pods: { poolSize: 3, maxPorts: 1, ports: NPL_PORTS },
      timeline: { kinds: [...SWARM_KINDS], maxActions: 8 },
      swarm: true,
      horizonMs: 20_000,
      settleMs: 3000,
    },
    adjust: withAllNplPorts,
    invariants: [],
  },
  flannel: {
    scenarios: {
      cluster: { nodes: { min: 1, max: 2 }, initialPods: 2, ipamPolicies: ['lowest-free', 'round-robin'] },
      pods: { poolSize: 3, maxPorts: 1 },
      timeline: { kinds: [...SWARM_KINDS], maxActions: 6 },
      swarm: true,
      horizonMs: 20_000,
      settleMs: 3000,
    },
    invariants: [],
  },
  'kube-proxy': {
    scenarios: {
      cluster: {
        nodes: { min: 1, max: 2 },
        initialPods: 2,
        ipamPolicies: ['lowest-free', 'round-robin'],
        // The same Pods behind a Cluster-policy NodePort and a Local-policy one: wherever churn
        // leaves a node without a local endpoint, the Local Service's rules differ.
        services: [
          {
            name: 'web',
            type: 'NodePort',
            selector: { app: 'web' },
            ports: [
              { name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30080 },
              { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP', nodePort: 30053 },
            ],
          },
          {
            name: 'web-local',
            type: 'NodePort',
            externalTrafficPolicy: 'Local',
            selector: { app: 'web' },
            ports: [
              { name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30081 },
              { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP', nodePort: 30054 },
            ],
          },
        ],
      },
      pods: { poolSize: 3, maxPorts: 2, ports: PROXY_PORTS },
      timeline: { kinds: [...SWARM_KINDS], maxActions: 6 },
      swarm: true,
      horizonMs: 20_000,
      settleMs: 3000,
    },
    // A failed sync is retried after --iptables-sync-period: 5 s, so a run sees the retry.
    controllerOptions: { syncPeriodMs: 5000 },
    adjust: withStableBackend,
    invariants: [],
  },
  // kube-proxy in nftables mode: the same Services and health checks, with failed `nft -f`
  // transactions among the churn (an injected restore failure fails the next one) and a 3 s
  // retry, so a sync that fails and its retry both fall inside the horizon.
  'kube-proxy-nft': {
    scenarios: {
      cluster: {
        nodes: { min: 1, max: 2 },
        initialPods: 2,
        services: [
          { name: 'web', type: 'NodePort', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30080 }, { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP', nodePort: 30053 }] },
          { name: 'web-local', type: 'NodePort', externalTrafficPolicy: 'Local', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30081 }, { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP', nodePort: 30054 }] },
        ],
      },
      pods: { poolSize: 3, maxPorts: 2, ports: PROXY_PORTS },
      timeline: { kinds: [...POD_CHURN, 'iptables.restore-fail', 'workload.scale'], maxActions: 6 },
      probes: [{ kind: 'nodeport-health', service: 'web', everyMs: 1000 }],
      horizonMs: 20_000,
      settleMs: 3000,
    },
    adjust: (s) => {
      const t = withStableBackend(s);
      return { ...t, controller: { ...t.controller, options: { syncPeriodMs: 3000, ...t.controller.options } } };
    },
    invariants: [{ kind: 'probes-succeed' }],
  },
};

/** The profile for a controller name: an exact entry first, then the family before `:`, else the generic swarm. */
export function fuzzProfileFor(controller: string, profiles: { readonly [key: string]: FuzzProfile } = FUZZ_PROFILES): FuzzProfile {
  return profiles[controller] ?? profiles[controller.split(':')[0] ?? controller] ?? GENERIC_PROFILE;
}

export interface FuzzPropertyOptions {
  /** Controllers deployed beside the one under test on every node; the generated restarts hit them too. */
  readonly alongside?: readonly { readonly name: string; readonly options?: JsonObject }[];
  /** Users' invariants by name, for the profile's `kind: custom` entries. */
  readonly invariants?: InvariantRegistry;
  /** Check the built-in, controller-agnostic invariants beside the profile's (see {@link fuzzInvariants}); `netsim fuzz` does. Default false. */
  readonly builtins?: boolean;
  /** More invariants to check (`netsim fuzz` adds a `--controllers` module's registered ones as `kind: custom`). */
  readonly extra?: readonly InvariantSpec[];
}

/**
 * The property `netsim fuzz` checks: the profile's histories, run with the named controller,
 * keep the profile's invariants.
 *
 * @example
 * ```ts
 * const prop = fuzzProperty('npl:faulty', FUZZ_PROFILES.npl, registry);
 * const result = await checkProperty(prop, { seed: 1, numRuns: 200 });
 * ```
 */
export function fuzzProperty(controller: string, profile: FuzzProfile, controllers: ControllerRegistry, opts: FuzzPropertyOptions = {}): SimulationProperty<SimScenario> {
  const alongside = opts.alongside ?? [];
  // The agents' names (`kube-proxy` for node-1/kube-proxy), for restarts that hit one of them.
  const agents = alongside.map((c) => {
    const f = controllers[c.name];
    if (f === undefined) throw new Error(`fuzzProperty: controller "${c.name}" (alongside) is not registered`);
    return f(c.options ?? {}).name;
  });
  const scenarios = scenarioArbitrary({
    ...profile.scenarios,
    controller: { name: controller, ...(profile.controllerOptions !== undefined ? { options: profile.controllerOptions } : {}) },
    ...(alongside.length > 0 ? { alongside, timeline: { ...profile.scenarios.timeline, agents } } : {}),
  });
  const specs = [...(opts.builtins === true ? fuzzInvariants(profile) : profile.invariants), ...(opts.extra ?? [])];
  return controllerProperty({
    name: `${controller}${alongside.map((c) => ` beside ${c.name}`).join('')} keeps ${specs.length === 1 ? 'its invariant' : 'its invariants'}`,
    scenarios: scenarios.map(profile.adjust ?? ((x) => x)),
    controllers,
    invariants: specs.map((s) => buildInvariant(s, opts.invariants ?? {})),
  });
}
