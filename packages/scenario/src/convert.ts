/**
 * Between the YAML shape ({@link RawScenario}: durations as text, short port forms) and the data
 * the engine runs ({@link ScenarioFile}). `toRaw(fromRaw(x))` may differ from `x` in form
 * (`"2000ms"` becomes `2s`), never in meaning; `fromRaw(toRaw(f))` equals `f`.
 */
import { SIM_SCENARIO_FORMAT, type Action, type JsonObject, type LinkSpec, type NetworkSpec, type PodSpec, type PortSpec, type ProbeSpec, type ServiceSpec, type SimScenario, type TimedAction } from '@netsim/sim';
import { formatDuration, parseDuration } from './duration.ts';
import type { Expectation, InvariantSpec, ScenarioFile } from './model.ts';
import { SCENARIO_FORMAT, type RawContainerPort, type RawExpectation, type RawInvariant, type RawNetwork, type RawPod, type RawProbe, type RawScenario, type RawService, type RawTimedAction } from './schema.ts';

/** Durations in a {@link RawScenario} have passed the schema: they parse. */
function ms(text: string): number {
  const n = parseDuration(text);
  if (n === undefined) throw new Error(`internal: duration "${text}" passed the schema but does not parse`);
  return n;
}

const d = formatDuration;

function port(p: RawContainerPort): PortSpec {
  if (typeof p === 'number') return { port: p, protocol: 'TCP' };
  if (typeof p === 'string') {
    const [n, proto] = p.split('/');
    return { port: Number(n), protocol: proto === 'UDP' ? 'UDP' : 'TCP' };
  }
  return { port: p.port, protocol: p.protocol ?? 'TCP', ...(p.name !== undefined ? { name: p.name } : {}) };
}

function rawPort(p: PortSpec): RawContainerPort {
  if (p.name !== undefined) return { port: p.port, protocol: p.protocol, name: p.name };
  return `${p.port}/${p.protocol}`;
}

function pod(p: RawPod): PodSpec {
  return {
    name: p.name,
    ...(p.namespace !== undefined ? { namespace: p.namespace } : {}),
    node: p.node,
    ...(p.labels !== undefined ? { labels: { ...p.labels } } : {}),
    ports: p.ports.map(port),
    ...(p.terminationGracePeriodSeconds !== undefined ? { terminationGracePeriodSeconds: p.terminationGracePeriodSeconds } : {}),
    ...(p.preStopSleepSeconds !== undefined ? { preStopSleepSeconds: p.preStopSleepSeconds } : {}),
  };
}

function rawPod(p: PodSpec): RawPod {
  return {
    name: p.name,
    ...(p.namespace !== undefined ? { namespace: p.namespace } : {}),
    node: p.node,
    ...(p.labels !== undefined ? { labels: { ...p.labels } } : {}),
    ports: p.ports.map(rawPort),
    ...(p.terminationGracePeriodSeconds !== undefined ? { terminationGracePeriodSeconds: p.terminationGracePeriodSeconds } : {}),
    ...(p.preStopSleepSeconds !== undefined ? { preStopSleepSeconds: p.preStopSleepSeconds } : {}),
  };
}

function service(s: RawService): ServiceSpec {
  return {
    name: s.name,
    ...(s.namespace !== undefined ? { namespace: s.namespace } : {}),
    ...(s.type !== undefined ? { type: s.type } : {}),
    selector: { ...s.selector },
    ports: s.ports.map((p) => ({
      ...(p.name !== undefined ? { name: p.name } : {}),
      port: p.port,
      targetPort: p.targetPort ?? p.port,
      protocol: p.protocol ?? 'TCP',
      ...(p.nodePort !== undefined ? { nodePort: p.nodePort } : {}),
    })),
    ...(s.annotations !== undefined ? { annotations: { ...s.annotations } } : {}),
    ...(s.externalTrafficPolicy !== undefined ? { externalTrafficPolicy: s.externalTrafficPolicy } : {}),
    ...(s.sessionAffinity !== undefined ? { sessionAffinity: s.sessionAffinity } : {}),
    ...(s.sessionAffinityTimeoutSeconds !== undefined ? { sessionAffinityTimeoutSeconds: s.sessionAffinityTimeoutSeconds } : {}),
  };
}

function rawService(s: ServiceSpec): RawService {
  return {
    name: s.name,
    ...(s.namespace !== undefined ? { namespace: s.namespace } : {}),
    ...(s.type !== undefined ? { type: s.type } : {}),
    selector: { ...s.selector },
    ports: s.ports.map((p) => ({ ...(p.name !== undefined ? { name: p.name } : {}), port: p.port, targetPort: p.targetPort, protocol: p.protocol, ...(p.nodePort !== undefined ? { nodePort: p.nodePort } : {}) })),
    ...(s.annotations !== undefined ? { annotations: { ...s.annotations } } : {}),
    ...(s.externalTrafficPolicy !== undefined ? { externalTrafficPolicy: s.externalTrafficPolicy } : {}),
    ...(s.sessionAffinity !== undefined ? { sessionAffinity: s.sessionAffinity } : {}),
    ...(s.sessionAffinityTimeoutSeconds !== undefined ? { sessionAffinityTimeoutSeconds: s.sessionAffinityTimeoutSeconds } : {}),
  };
}

const opt = <K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } => (value !== undefined ? ({ [key]: value } as { [P in K]: V }) : {});

function action(a: RawTimedAction): TimedAction {
  const atMs = ms(a.at);
  let act: Action;
  switch (a.do) {
    case 'pod.create':
      act = { kind: a.do, pod: pod(a.pod) };
      break;
    case 'pod.delete':
      act = { kind: a.do, name: a.name, ...opt('namespace', a.namespace), ...opt('graceSeconds', a.graceSeconds) };
      break;
    case 'pod.recreate':
      act = { kind: a.do, name: a.name, ...opt('namespace', a.namespace), gapMs: ms(a.gap) };
      break;
    case 'pod.complete':
      act = { kind: a.do, name: a.name, ...opt('namespace', a.namespace), phase: a.phase };
      break;
    case 'node.reboot':
      act = { kind: a.do, node: a.node, downMs: ms(a.down) };
      break;
    case 'node.drain':
      act = { kind: a.do, node: a.node, ...opt('graceSeconds', a.graceSeconds) };
      break;
    case 'informer.resync':
      act = { kind: a.do, ...opt('node', a.node) };
      break;
    case 'handlers.slow':
      act = { kind: a.do, ...opt('node', a.node), delayMs: ms(a.delay), durationMs: ms(a.duration) };
      break;
    case 'workload.scale':
      act = { kind: a.do, name: a.name, ...opt('namespace', a.namespace), replicas: a.replicas, nodes: [...a.nodes], ...(a.labels !== undefined ? { labels: { ...a.labels } } : {}), ports: a.ports.map(port) };
      break;
    case 'route.add':
    case 'route.del':
      act = { kind: a.do, host: a.host, route: a.route };
      break;
    case 'service.create':
    case 'service.update':
      act = { kind: a.do, service: service(a.service) };
      break;
    case 'service.delete':
      act = { kind: a.do, name: a.name, ...opt('namespace', a.namespace) };
      break;
    case 'agent.crash':
      act = { kind: a.do, node: a.node, ...opt('agent', a.agent), restartAfterMs: ms(a.restartAfter) };
      break;
    case 'agent.restart':
      act = { kind: a.do, node: a.node, ...opt('agent', a.agent), ...(a.grace !== undefined ? { graceMs: ms(a.grace) } : {}), downMs: ms(a.down) };
      break;
    case 'watch.gap':
      act = { kind: a.do, ...opt('node', a.node), durationMs: ms(a.duration) };
      break;
    case 'watch.reset':
      act = { kind: a.do, ...opt('node', a.node), ...opt('count', a.count), ...(a.every !== undefined ? { everyMs: ms(a.every) } : {}) };
      break;
    case 'watch.delay':
      act = { kind: a.do, ...opt('node', a.node), delayMs: ms(a.delay), durationMs: ms(a.duration) };
      break;
    case 'iptables.lock':
      act = { kind: a.do, node: a.node, durationMs: ms(a.duration) };
      break;
    case 'iptables.fail':
      act = { kind: a.do, node: a.node, ...opt('count', a.count), ...(a.duration !== undefined ? { durationMs: ms(a.duration) } : {}) };
      break;
    case 'iptables.restore-fail':
      act = { kind: a.do, node: a.node, line: a.line };
      break;
    case 'iptables.slow':
      act = { kind: a.do, node: a.node, extraMs: ms(a.extra), durationMs: ms(a.duration) };
      break;
    case 'sysctl.set':
      act = { kind: a.do, host: a.host, key: a.key, value: String(a.value) };
      break;
    case 'link.set':
      act = { kind: a.do, host: a.host, iface: a.iface, state: a.state };
      break;
    case 'addr.add':
    case 'addr.del':
      act = { kind: a.do, host: a.host, iface: a.iface, address: a.address };
      break;
    case 'host.run':
      act = { kind: a.do, host: a.host, command: a.command };
      break;
  }
  return { atMs, action: act };
}

function rawAction(t: TimedAction): RawTimedAction {
  const at = d(t.atMs);
  const a = t.action;
  switch (a.kind) {
    case 'pod.create':
      return { at, do: a.kind, pod: rawPod(a.pod) };
    case 'pod.delete':
      return { at, do: a.kind, name: a.name, ...opt('namespace', a.namespace), ...opt('graceSeconds', a.graceSeconds) };
    case 'pod.recreate':
      return { at, do: a.kind, name: a.name, ...opt('namespace', a.namespace), gap: d(a.gapMs) };
    case 'pod.complete':
      return { at, do: a.kind, name: a.name, ...opt('namespace', a.namespace), phase: a.phase };
    case 'node.reboot':
      return { at, do: a.kind, node: a.node, down: d(a.downMs) };
    case 'node.drain':
      return { at, do: a.kind, node: a.node, ...opt('graceSeconds', a.graceSeconds) };
    case 'informer.resync':
      return { at, do: a.kind, ...opt('node', a.node) };
    case 'handlers.slow':
      return { at, do: a.kind, ...opt('node', a.node), delay: d(a.delayMs), duration: d(a.durationMs) };
    case 'service.create':
      return { at, do: a.kind, service: rawService(a.service) };
    case 'service.update':
      return { at, do: a.kind, service: rawService(a.service) };
    case 'service.delete':
      return { at, do: a.kind, name: a.name, ...opt('namespace', a.namespace) };
    case 'agent.crash':
      return { at, do: a.kind, node: a.node, ...opt('agent', a.agent), restartAfter: d(a.restartAfterMs) };
    case 'agent.restart':
      return { at, do: a.kind, node: a.node, ...opt('agent', a.agent), ...(a.graceMs !== undefined ? { grace: d(a.graceMs) } : {}), down: d(a.downMs) };
    case 'watch.gap':
      return { at, do: a.kind, ...opt('node', a.node), duration: d(a.durationMs) };
    case 'watch.reset':
      return { at, do: a.kind, ...opt('node', a.node), ...opt('count', a.count), ...(a.everyMs !== undefined ? { every: d(a.everyMs) } : {}) };
    case 'watch.delay':
      return { at, do: a.kind, ...opt('node', a.node), delay: d(a.delayMs), duration: d(a.durationMs) };
    case 'iptables.lock':
      return { at, do: a.kind, node: a.node, duration: d(a.durationMs) };
    case 'iptables.fail':
      return { at, do: a.kind, node: a.node, ...opt('count', a.count), ...(a.durationMs !== undefined ? { duration: d(a.durationMs) } : {}) };
    case 'iptables.restore-fail':
      return { at, do: a.kind, node: a.node, line: a.line };
    case 'iptables.slow':
      return { at, do: a.kind, node: a.node, extra: d(a.extraMs), duration: d(a.durationMs) };
    case 'sysctl.set':
      return { at, do: a.kind, host: a.host, key: a.key, value: a.value };
    case 'link.set':
      return { at, do: a.kind, host: a.host, iface: a.iface, state: a.state };
    case 'addr.add':
      return { at, do: a.kind, host: a.host, iface: a.iface, address: a.address };
    case 'addr.del':
      return { at, do: a.kind, host: a.host, iface: a.iface, address: a.address };
    case 'workload.scale':
      return { at, do: a.kind, name: a.name, ...opt('namespace', a.namespace), replicas: a.replicas, nodes: [...a.nodes], ...(a.labels !== undefined ? { labels: { ...a.labels } } : {}), ports: a.ports.map(rawPort) };
    case 'route.add':
      return { at, do: a.kind, host: a.host, route: a.route };
    case 'route.del':
      return { at, do: a.kind, host: a.host, route: a.route };
    case 'host.run':
      return { at, do: a.kind, host: a.host, command: a.command };
  }
}

function network(n: RawNetwork): NetworkSpec {
  return {
    ...opt('podNetwork', n.podNetwork),
    ...(n.hosts !== undefined ? { hosts: n.hosts.map((h) => ({ name: h.name, network: [...h.network], ...opt('rules', h.rules) })) } : {}),
    ...(n.links !== undefined ? { links: n.links.map((l): LinkSpec => (l.kind === 'wire' ? { kind: 'wire', ends: [l.ends[0], l.ends[1]] } : { kind: 'segment', name: l.name, members: [...l.members] })) } : {}),
  };
}

function rawNetwork(n: NetworkSpec): RawNetwork {
  return {
    ...opt('podNetwork', n.podNetwork),
    ...(n.hosts !== undefined ? { hosts: n.hosts.map((h) => ({ name: h.name, network: [...h.network], ...opt('rules', h.rules) })) } : {}),
    ...(n.links !== undefined ? { links: n.links.map((l) => (l.kind === 'wire' ? { kind: 'wire' as const, ends: [l.ends[0], l.ends[1]] as [string, string] } : { kind: 'segment' as const, name: l.name, members: [...l.members] })) } : {}),
  };
}

function probe(p: RawProbe): ProbeSpec {
  switch (p.kind) {
    case 'npl-health':
      return { kind: p.kind, everyMs: ms(p.every), ...opt('annotation', p.annotation) };
    case 'pod-egress':
      return { kind: p.kind, everyMs: ms(p.every) };
    case 'nodeport-health':
      return { kind: p.kind, service: p.service, ...opt('namespace', p.namespace), everyMs: ms(p.every) };
    case 'connect':
      return { kind: p.kind, from: 'host' in p.from ? { host: p.from.host } : { pod: p.from.pod, ...opt('namespace', p.from.namespace) }, to: p.to, port: p.port, everyMs: ms(p.every) };
  }
}

function rawProbe(p: ProbeSpec): RawProbe {
  switch (p.kind) {
    case 'npl-health':
      return { kind: p.kind, every: d(p.everyMs), ...opt('annotation', p.annotation) };
    case 'pod-egress':
      return { kind: p.kind, every: d(p.everyMs) };
    case 'nodeport-health':
      return { kind: p.kind, service: p.service, ...opt('namespace', p.namespace), every: d(p.everyMs) };
    case 'connect':
      return { kind: p.kind, from: 'host' in p.from ? { host: p.from.host } : { pod: p.from.pod, ...opt('namespace', p.from.namespace) }, to: p.to, port: p.port, every: d(p.everyMs) };
  }
}

function invariant(i: RawInvariant): InvariantSpec {
  switch (i.kind) {
    case 'no-stale-dnat':
      return { kind: i.kind, chains: [...i.chains], ...opt('table', i.table), ...(i.settle !== undefined ? { settleMs: ms(i.settle) } : {}) };
    case 'chain-never-empty':
      return { kind: i.kind, chain: i.chain, ...opt('table', i.table), ...opt('requiredTarget', i.requiredTarget), ...opt('name', i.name) };
    case 'annotations-agree':
      return { kind: i.kind, annotation: i.annotation, chain: i.chain, ...opt('table', i.table), ...(i.settle !== undefined ? { settleMs: ms(i.settle) } : {}) };
    case 'no-duplicate-rules':
      return { kind: i.kind, ...opt('table', i.table), ...(i.chains !== undefined ? { chains: [...i.chains] } : {}), ...(i.settle !== undefined ? { settleMs: ms(i.settle) } : {}) };
    case 'probes-succeed':
      return { kind: i.kind, ...(i.settle !== undefined ? { settleMs: ms(i.settle) } : {}) };
    case 'builtin':
      return { kind: i.kind, check: i.check, ...(i.settle !== undefined ? { settleMs: ms(i.settle) } : {}) };
    case 'custom':
      return { kind: i.kind, name: i.name, ...(i.options !== undefined ? { options: i.options as JsonObject } : {}) };
  }
}

function rawInvariant(i: InvariantSpec): RawInvariant {
  const settle = 'settleMs' in i && i.settleMs !== undefined ? { settle: d(i.settleMs) } : {};
  switch (i.kind) {
    case 'no-stale-dnat':
      return { kind: i.kind, chains: [...i.chains], ...opt('table', i.table), ...settle };
    case 'chain-never-empty':
      return { kind: i.kind, chain: i.chain, ...opt('table', i.table), ...opt('requiredTarget', i.requiredTarget), ...opt('name', i.name) };
    case 'annotations-agree':
      return { kind: i.kind, annotation: i.annotation, chain: i.chain, ...opt('table', i.table), ...settle };
    case 'no-duplicate-rules':
      return { kind: i.kind, ...opt('table', i.table), ...(i.chains !== undefined ? { chains: [...i.chains] } : {}), ...settle };
    case 'probes-succeed':
      return { kind: i.kind, ...settle };
    case 'builtin':
      return { kind: i.kind, check: i.check, ...settle };
    case 'custom':
      return { kind: i.kind, name: i.name, ...(i.options !== undefined ? { options: i.options } : {}) };
  }
}

function expectation(e: RawExpectation): Expectation {
  const story = { ...(e.storyIncludes !== undefined ? { storyIncludes: [...e.storyIncludes] } : {}), ...(e.storyExcludes !== undefined ? { storyExcludes: [...e.storyExcludes] } : {}) };
  switch (e.outcome) {
    case 'ok':
      return { outcome: 'ok', ...story };
    case 'violation':
      return { outcome: 'violation', invariant: e.invariant, ...(e.between !== undefined ? { betweenMs: [ms(e.between[0]), ms(e.between[1])] as const } : {}), ...opt('message', e.message), ...story };
    case 'finding':
      return { outcome: 'finding', kind: e.kind, ...(e.between !== undefined ? { betweenMs: [ms(e.between[0]), ms(e.between[1])] as const } : {}), ...opt('message', e.message), ...story };
  }
}

function rawExpectation(e: Expectation): RawExpectation {
  const story = { ...(e.storyIncludes !== undefined ? { storyIncludes: [...e.storyIncludes] } : {}), ...(e.storyExcludes !== undefined ? { storyExcludes: [...e.storyExcludes] } : {}) };
  switch (e.outcome) {
    case 'ok':
      return { outcome: 'ok', ...story };
    case 'violation':
      return { outcome: 'violation', invariant: e.invariant, ...(e.betweenMs !== undefined ? { between: [d(e.betweenMs[0]), d(e.betweenMs[1])] as [string, string] } : {}), ...opt('message', e.message), ...story };
    case 'finding':
      return { outcome: 'finding', kind: e.kind, ...(e.betweenMs !== undefined ? { between: [d(e.betweenMs[0]), d(e.betweenMs[1])] as [string, string] } : {}), ...opt('message', e.message), ...story };
  }
}

/** A controller reference (`{ name, options }`), its options copied, in either direction. */
function controllerRef(c: { readonly name: string; readonly options?: Readonly<Record<string, unknown>> | undefined }): { name: string; options?: JsonObject } {
  return { name: c.name, ...(c.options !== undefined ? { options: { ...c.options } as JsonObject } : {}) };
}

/** The engine's data from a schema-checked YAML document. */
export function fromRaw(r: RawScenario): ScenarioFile {
  const c = r.cluster;
  const scenario: SimScenario = {
    format: SIM_SCENARIO_FORMAT,
    seed: r.seed,
    ...(r.schedule !== undefined ? { schedule: { path: [...r.schedule.path], ...opt('whenPathExhausted', r.schedule.whenPathExhausted) } } : {}),
    ...(r.swarm !== undefined ? { swarm: { features: { ...r.swarm } } } : {}),
    cluster: {
      nodes: c.nodes.map((n) => ({
        name: n.name,
        ...(n.network !== undefined ? { network: [...n.network] } : {}),
        ...(n.controller !== undefined ? { controller: controllerRef(n.controller) } : {}),
        ...(n.alongside !== undefined ? { alongside: n.alongside.map(controllerRef) } : {}),
      })),
      ...opt('queueMode', c.queueMode),
      ...(c.services !== undefined ? { services: c.services.map(service) } : {}),
      ...(c.pods !== undefined ? { pods: c.pods.map(pod) } : {}),
      ...opt('nodeCidrMaskSize', c.podCidrMaskSize),
      ...opt('ipamPolicy', c.ipamPolicy),
      ...(c.network !== undefined ? { network: network(c.network) } : {}),
    },
    controller: controllerRef(r.controller),
    ...(r.alongside !== undefined ? { alongside: r.alongside.map(controllerRef) } : {}),
    timeline: (r.timeline ?? []).map(action),
    ...(r.probes !== undefined ? { probes: r.probes.map(probe) } : {}),
    horizonMs: ms(r.horizon),
    settleMs: ms(r.settle),
  };
  return {
    name: r.name,
    ...opt('description', r.description),
    scenario,
    invariants: r.invariants.map(invariant),
    expect: expectation(r.expect),
  };
}

/** The YAML shape of a scenario file (keys in the order files are written). */
export function toRaw(f: ScenarioFile): RawScenario {
  const s = f.scenario;
  const c = s.cluster;
  return {
    format: SCENARIO_FORMAT,
    name: f.name,
    ...opt('description', f.description),
    seed: s.seed,
    horizon: d(s.horizonMs),
    settle: d(s.settleMs),
    ...(s.schedule !== undefined ? { schedule: { path: [...s.schedule.path], ...opt('whenPathExhausted', s.schedule.whenPathExhausted) } } : {}),
    ...(s.swarm !== undefined ? { swarm: { ...s.swarm.features } } : {}),
    cluster: {
      nodes: c.nodes.map((n) => ({
        name: n.name,
        ...(n.network !== undefined ? { network: [...n.network] } : {}),
        ...(n.controller !== undefined ? { controller: controllerRef(n.controller) } : {}),
        ...(n.alongside !== undefined ? { alongside: n.alongside.map(controllerRef) } : {}),
      })),
      ...opt('queueMode', c.queueMode),
      ...opt('ipamPolicy', c.ipamPolicy),
      ...opt('podCidrMaskSize', c.nodeCidrMaskSize),
      ...(c.network !== undefined ? { network: rawNetwork(c.network) } : {}),
      ...(c.services !== undefined ? { services: c.services.map(rawService) } : {}),
      ...(c.pods !== undefined ? { pods: c.pods.map(rawPod) } : {}),
    },
    controller: controllerRef(s.controller),
    ...(s.alongside !== undefined ? { alongside: s.alongside.map(controllerRef) } : {}),
    ...(s.timeline.length > 0 ? { timeline: s.timeline.map(rawAction) } : {}),
    ...(s.probes !== undefined ? { probes: s.probes.map(rawProbe) } : {}),
    invariants: f.invariants.map(rawInvariant),
    expect: rawExpectation(f.expect),
  };
}
