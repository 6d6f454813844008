/**
 * The scenario file's shape, as a valibot schema over the YAML document. It checks types and keys
 * only (every object is strict: an unknown key is an error, so a typo is never silently ignored);
 * references between fields (a Pod's node exists, a time is before the horizon) are checked after,
 * in `load.ts`. Every message starts with "expected …" and names what fits, so the loader can point
 * at the YAML node and say what was wrong with it.
 */
import * as v from 'valibot';
import { DURATION_EXPECTED, DURATION_PATTERN, parseDuration } from './duration.ts';

/** The version tag scenario files start with. */
export const SCENARIO_FORMAT = 'netsim.scenario/v1';

const NAME_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const NAME_EXPECTED = 'expected a DNS-1123 label (lower-case letters, digits and "-", like "node-1")';

/** A strict object: unknown keys are errors that list the keys that fit, missing keys say which. */
function obj<E extends v.ObjectEntries>(entries: E) {
  const keys = Object.keys(entries).join(', ');
  return v.strictObject(entries, (issue) => {
    if (issue.expected === 'never') return `unknown key ${issue.received} (expected one of: ${keys})`;
    if (issue.received === 'undefined' && issue.expected?.startsWith('"') === true) return `missing required key ${issue.expected}`;
    return `expected a mapping with keys ${keys}`;
  });
}

const str = (what = 'a string') => v.string(`expected ${what}`);
const name = () => v.pipe(str(), v.regex(NAME_RE, NAME_EXPECTED));
const int = (min: number, max: number, what: string) => v.pipe(v.number(`expected ${what}`), v.integer(`expected ${what}`), v.minValue(min, `expected ${what}`), v.maxValue(max, `expected ${what}`));
const duration = () =>
  v.pipe(
    v.string(DURATION_EXPECTED),
    v.regex(new RegExp(DURATION_PATTERN), DURATION_EXPECTED),
    v.check((s) => parseDuration(s) !== undefined, 'expected a whole number of milliseconds'),
  );
const stringMap = () => v.record(str(), str('a string (quote values such as "true" or "8080")'), 'expected a mapping of strings to strings');
const protocol = () => v.picklist(['TCP', 'UDP'], 'expected "TCP" or "UDP"');
const port = () => int(1, 65535, 'a port number from 1 to 65535');
const tableName = () => v.picklist(['raw', 'mangle', 'nat', 'filter'], 'expected one of "raw", "mangle", "nat", "filter"');

/** `8080`, `"8080/UDP"` or `{ port: 8080, protocol: TCP, name: http }`. */
const PORT_TEXT_RE = /^[0-9]{1,5}(\/(TCP|UDP))?$/;
const ContainerPort = v.union(
  [
    port(),
    v.pipe(v.string(), v.regex(PORT_TEXT_RE)),
    obj({ port: port(), protocol: v.optional(protocol()), name: v.optional(str()) }),
  ],
  'expected a port like 8080, "8080/UDP" or { port: 8080, protocol: TCP, name: http }',
);

const Pod = obj({
  name: name(),
  namespace: v.optional(name()),
  node: name(),
  labels: v.optional(stringMap()),
  ports: v.array(ContainerPort, 'expected a list of ports'),
  terminationGracePeriodSeconds: v.optional(int(0, 86_400, 'a whole number of seconds')),
  preStopSleepSeconds: v.optional(int(0, 86_400, 'a whole number of seconds')),
});

/** A container port name, as Kubernetes' IANA_SVC_NAME: at most 15 lower-case letters, digits and "-". */
const PORT_NAME_RE = /^(?=.{1,15}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const ServicePort = obj({
  name: v.optional(str()),
  port: port(),
  targetPort: v.optional(v.union([port(), v.pipe(v.string(), v.regex(PORT_NAME_RE))], 'expected a port number from 1 to 65535 or a container port name like "http"')),
  protocol: v.optional(protocol()),
  nodePort: v.optional(int(1, 65535, 'a node port number from 1 to 65535')),
});

const Service = obj({
  name: name(),
  namespace: v.optional(name()),
  type: v.optional(v.picklist(['ClusterIP', 'NodePort', 'LoadBalancer'], 'expected "ClusterIP", "NodePort" or "LoadBalancer"')),
  selector: stringMap(),
  ports: v.array(ServicePort, 'expected a list of Service ports'),
  annotations: v.optional(stringMap()),
  externalTrafficPolicy: v.optional(v.picklist(['Cluster', 'Local'], 'expected "Cluster" or "Local"')),
  sessionAffinity: v.optional(v.picklist(['None', 'ClientIP'], 'expected "None" or "ClientIP"')),
  sessionAffinityTimeoutSeconds: v.optional(int(1, 86_400, 'a whole number of seconds from 1 to 86400')),
});

/** One host-file line (`ip addr add 198.51.100.11/25 dev eth1`, `sysctl -w net.ipv4.conf.all.rp_filter=1`). */
const hostLines = () => v.array(str('a host-file line such as "ip link add eth1 type physical"'), 'expected a list of host-file lines (ip link/addr/route/rule, sysctl -w, listen, overlay)');

/** An agent on a node by its controller's name, as the trace prints it after the node (`kube-proxy` for node-1/kube-proxy). */
const agentRef = () => str('an agent name such as "kube-proxy" (node-1/kube-proxy in the trace)');

/** A controller by registry name, with its options. */
const ControllerRef = obj({ name: str('a controller name such as "npl:fixed"'), options: v.optional(v.record(v.string(), v.unknown(), 'expected a mapping of options')) });

const Node = obj({ name: name(), network: v.optional(hostLines()), controller: v.optional(ControllerRef), alongside: v.optional(v.array(ControllerRef, 'expected a list of controllers, like [{ name: kube-proxy:fixed }]')) });

const IPV4_RE = /^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$/;
const ipv4 = () => v.pipe(str('an IPv4 address'), v.regex(IPV4_RE, 'expected an IPv4 address like 198.51.100.11'));
const CIDR_RE = /^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}\/([0-9]|[12][0-9]|3[0-2])$/;
const cidr = () => v.pipe(str('an address with its prefix'), v.regex(CIDR_RE, 'expected an address with its prefix like 198.51.100.11/25'));
const ENDPOINT_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[^\s/]+$/;
const endpoint = () => v.pipe(str('host/interface'), v.regex(ENDPOINT_RE, 'expected host/interface, like "node-1/eth1"'));

const Host = obj({ name: name(), network: hostLines(), rules: v.optional(str('the rules as iptables-save prints them')) });

const Link = v.variant(
  'kind',
  [
    obj({ kind: v.literal('wire'), ends: v.tuple([endpoint(), endpoint()], 'expected two ends, like [fw/eth1, client/eth0]') }),
    obj({ kind: v.literal('segment'), name: name(), members: v.pipe(v.array(endpoint(), 'expected a list of host/interface'), v.minLength(1, 'expected at least one member')) }),
  ],
  (issue) => `expected one of: ${(issue.expected ?? '').replace(/[()"]/g, '').split(' | ').join(', ')}`,
);

const Network = obj({
  podNetwork: v.optional(v.picklist(['host-gw', 'vxlan'], 'expected "host-gw" or "vxlan"')),
  hosts: v.optional(v.array(Host, 'expected a list of hosts')),
  links: v.optional(v.array(Link, 'expected a list of links')),
});

const Cluster = obj({
  nodes: v.pipe(v.array(Node, 'expected a list of nodes'), v.minLength(1, 'expected at least one node')),
  queueMode: v.optional(v.picklist(['DeltaFIFO', 'RealFIFO', 'AtomicFIFO'], 'expected "DeltaFIFO", "RealFIFO" or "AtomicFIFO"')),
  ipamPolicy: v.optional(v.picklist(['round-robin', 'lowest-free'], 'expected "round-robin" or "lowest-free"')),
  podCidrMaskSize: v.optional(int(8, 30, 'a prefix length from 8 to 30')),
  services: v.optional(v.array(Service, 'expected a list of Services')),
  pods: v.optional(v.array(Pod, 'expected a list of Pods')),
  network: v.optional(Network),
});

const at = () => duration();

/** A variant's message: the tags that fit, plainly. */
const oneOf = (issue: v.BaseIssue<unknown>): string => `expected one of: ${(issue.expected ?? '').replace(/[()"]/g, '').split(' | ').join(', ')}`;
const ns = () => v.optional(name());
const nodeRef = () => name();

/** One timeline entry: `at`, `do` (the action) and the action's fields. */
const TimedAction = v.variant(
  'do',
  [
    obj({ at: at(), do: v.literal('pod.create'), pod: Pod }),
    obj({ at: at(), do: v.literal('pod.delete'), name: name(), namespace: ns(), graceSeconds: v.optional(int(0, 86_400, 'a whole number of seconds')) }),
    obj({ at: at(), do: v.literal('pod.recreate'), name: name(), namespace: ns(), gap: duration() }),
    obj({ at: at(), do: v.literal('pod.complete'), name: name(), namespace: ns(), phase: v.picklist(['Succeeded', 'Failed'], 'expected "Succeeded" or "Failed"') }),
    obj({
      at: at(),
      do: v.literal('workload.scale'),
      name: name(),
      namespace: ns(),
      replicas: int(0, 1000, 'a replica count from 0 to 1000'),
      nodes: v.pipe(v.array(nodeRef(), 'expected a list of node names'), v.minLength(1, 'expected at least one node')),
      labels: v.optional(stringMap()),
      ports: v.array(ContainerPort, 'expected a list of ports'),
    }),
    obj({ at: at(), do: v.literal('service.create'), service: Service }),
    obj({ at: at(), do: v.literal('service.update'), service: Service }),
    obj({ at: at(), do: v.literal('service.delete'), name: name(), namespace: ns() }),
    obj({ at: at(), do: v.literal('agent.crash'), node: nodeRef(), agent: v.optional(agentRef()), restartAfter: duration() }),
    obj({ at: at(), do: v.literal('agent.restart'), node: nodeRef(), agent: v.optional(agentRef()), grace: v.optional(duration()), down: duration() }),
    obj({ at: at(), do: v.literal('node.reboot'), node: nodeRef(), down: duration() }),
    obj({ at: at(), do: v.literal('node.drain'), node: nodeRef(), graceSeconds: v.optional(int(0, 86_400, 'a whole number of seconds')) }),
    obj({ at: at(), do: v.literal('watch.gap'), node: v.optional(nodeRef()), duration: duration() }),
    obj({ at: at(), do: v.literal('watch.reset'), node: v.optional(nodeRef()), count: v.optional(int(1, 1000, 'a count from 1 to 1000')), every: v.optional(duration()) }),
    obj({ at: at(), do: v.literal('watch.delay'), node: v.optional(nodeRef()), delay: duration(), duration: duration() }),
    obj({ at: at(), do: v.literal('informer.resync'), node: v.optional(nodeRef()) }),
    obj({ at: at(), do: v.literal('handlers.slow'), node: v.optional(nodeRef()), delay: duration(), duration: duration() }),
    obj({ at: at(), do: v.literal('iptables.lock'), node: nodeRef(), duration: duration() }),
    obj({ at: at(), do: v.literal('iptables.fail'), node: nodeRef(), count: v.optional(int(1, 1000, 'a count from 1 to 1000')), duration: v.optional(duration()) }),
    obj({ at: at(), do: v.literal('iptables.restore-fail'), node: nodeRef(), line: int(1, 1_000_000, 'a line number (1 or more)') }),
    obj({ at: at(), do: v.literal('iptables.slow'), node: nodeRef(), extra: duration(), duration: duration() }),
    obj({ at: at(), do: v.literal('sysctl.set'), host: name(), key: v.pipe(str('a sysctl key'), v.regex(/^net\.[a-z0-9_./-]+$/, 'expected a sysctl key like net.ipv4.conf.all.rp_filter')), value: v.union([str(), v.pipe(v.number(), v.integer())], 'expected a value like 1 or "2"') }),
    obj({ at: at(), do: v.literal('link.set'), host: name(), iface: str('an interface name'), state: v.picklist(['up', 'down'], 'expected "up" or "down"') }),
    obj({ at: at(), do: v.literal('addr.add'), host: name(), iface: str('an interface name'), address: cidr() }),
    obj({ at: at(), do: v.literal('addr.del'), host: name(), iface: str('an interface name'), address: cidr() }),
    obj({ at: at(), do: v.literal('route.add'), host: name(), route: str('a route like "198.51.100.128/25 via 192.0.2.3"') }),
    obj({ at: at(), do: v.literal('route.del'), host: name(), route: str('a route like "198.51.100.128/25 via 192.0.2.3"') }),
    obj({ at: at(), do: v.literal('host.run'), host: name(), command: str('a host-file line') }),
  ],
  oneOf,
);

const Probe = v.variant(
  'kind',
  [
    obj({ kind: v.literal('npl-health'), every: duration(), annotation: v.optional(str('an annotation key')) }),
    obj({ kind: v.literal('nodeport-health'), service: name(), namespace: ns(), every: duration() }),
    obj({ kind: v.literal('pod-egress'), every: duration() }),
    obj({
      kind: v.literal('connect'),
      from: v.union([obj({ host: name() }), obj({ pod: name(), namespace: ns() })], 'expected { host: NAME } or { pod: NAME, namespace: NS }'),
      to: ipv4(),
      port: port(),
      every: duration(),
    }),
  ],
  oneOf,
);

/** Rule target kinds of `@netsim/netfilter` a chain may be required to hold. */
const TARGETS = ['ACCEPT', 'DROP', 'RETURN', 'REJECT', 'DNAT', 'SNAT', 'MASQUERADE', 'MARK', 'CONNMARK', 'LOG', 'NFLOG', 'NOTRACK', 'CT', 'TRACE'] as const;

/** The built-in, controller-agnostic checks (see `@netsim/sim`'s `builtinInvariants`). */
export const BUILTIN_CHECKS = ['stale-dnat', 'duplicate-rules', 'owned-chains', 'mappings-served', 'datapath-probes', 'agents-live', 'resync-fixpoint'] as const;

const Invariant = v.variant(
  'kind',
  [
    obj({ kind: v.literal('no-stale-dnat'), chains: v.pipe(v.array(str('a chain name'), 'expected a list of chain names'), v.minLength(1, 'expected at least one chain')), table: v.optional(tableName()), settle: v.optional(duration()) }),
    obj({ kind: v.literal('chain-never-empty'), chain: str('a chain name'), table: v.optional(tableName()), requiredTarget: v.optional(v.picklist(TARGETS, `expected a target: ${TARGETS.join(', ')}`)), name: v.optional(str()) }),
    obj({ kind: v.literal('annotations-agree'), annotation: str('an annotation key'), chain: str('a chain name'), table: v.optional(tableName()), settle: v.optional(duration()) }),
    obj({ kind: v.literal('no-duplicate-rules'), table: v.optional(tableName()), chains: v.optional(v.array(str('a chain name'), 'expected a list of chain names')), settle: v.optional(duration()) }),
    obj({ kind: v.literal('probes-succeed'), settle: v.optional(duration()) }),
    obj({ kind: v.literal('builtin'), check: v.picklist(BUILTIN_CHECKS, `expected a built-in check: ${BUILTIN_CHECKS.join(', ')}`), settle: v.optional(duration()) }),
    obj({ kind: v.literal('custom'), name: str('the name a --controllers module registers the invariant under (its "invariants" export)'), options: v.optional(v.record(v.string(), v.unknown(), 'expected a mapping of options')) }),
  ],
  oneOf,
);

const between = () => v.optional(v.pipe(v.tuple([duration(), duration()], 'expected [earliest, latest], like [4s, 10s]'), v.check(([a, b]) => (parseDuration(a) ?? 0) <= (parseDuration(b) ?? 0), 'expected the earliest time first')));

/** Pieces of text that must each appear (`storyIncludes`) or never appear (`storyExcludes`) in the run's story. */
const storyText = () => v.optional(v.array(str('a piece of a story line'), 'expected a list of texts'));

const Expectation = v.variant(
  'outcome',
  [
    obj({ outcome: v.literal('ok'), storyIncludes: storyText(), storyExcludes: storyText() }),
    obj({ outcome: v.literal('violation'), invariant: str('the name of an invariant, as it reports itself'), between: between(), message: v.optional(str('a piece of the violation message')), storyIncludes: storyText(), storyExcludes: storyText() }),
    obj({ outcome: v.literal('finding'), kind: str('a finding kind, like "livelock"'), between: between(), message: v.optional(str('a piece of the finding message')), storyIncludes: storyText(), storyExcludes: storyText() }),
  ],
  oneOf,
);

/** The scenario file, as YAML writes it. */
export const ScenarioSchema = obj({
  format: v.literal(SCENARIO_FORMAT, `expected "${SCENARIO_FORMAT}"`),
  name: name(),
  description: v.optional(str()),
  seed: int(0, Number.MAX_SAFE_INTEGER, 'a non-negative integer'),
  horizon: duration(),
  settle: duration(),
  schedule: v.optional(
    obj({
      path: v.array(int(0, 1_000_000, 'a choice index (0 or more)'), 'expected a list of choice indexes'),
      whenPathExhausted: v.optional(v.picklist(['prng', 'fifo'], 'expected "prng" or "fifo"')),
    }),
  ),
  /** The swarm draw that generated the scenario (action kinds and their weights), as `netsim fuzz` writes it. */
  swarm: v.optional(v.record(str(), int(1, 1000, 'a weight from 1 to 1000'), 'expected a mapping of action kinds to weights, like { pod.create: 2, watch.gap: 1 }')),
  cluster: Cluster,
  controller: ControllerRef,
  alongside: v.optional(v.array(ControllerRef, 'expected a list of controllers, like [{ name: kube-proxy:fixed }]')),
  timeline: v.optional(v.array(TimedAction, 'expected a list of actions')),
  probes: v.optional(v.array(Probe, 'expected a list of probes')),
  invariants: v.array(Invariant, 'expected a list of invariants'),
  expect: Expectation,
});

/** A scenario file as YAML writes it (durations as text, ports in short form). */
export type RawScenario = v.InferOutput<typeof ScenarioSchema>;
export type RawPod = v.InferOutput<typeof Pod>;
export type RawService = v.InferOutput<typeof Service>;
export type RawTimedAction = v.InferOutput<typeof TimedAction>;
export type RawProbe = v.InferOutput<typeof Probe>;
export type RawInvariant = v.InferOutput<typeof Invariant>;
export type RawExpectation = v.InferOutput<typeof Expectation>;
export type RawContainerPort = v.InferOutput<typeof ContainerPort>;
export type RawNetwork = v.InferOutput<typeof Network>;
