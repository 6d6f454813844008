/**
 * One fast-check generator per scenario action kind (the generator part of each action; its
 * checks, effect and story lines are its module in `@netsim/sim`'s `actions/`). A generator
 * returns `undefined` when the cluster gives it nothing to act on (Service actions without
 * Services; address and `host.run` changes, which depend on a network a scenario describes).
 *
 * Beside the action kinds, one composite history: `blind-churn`, a Pod or Service change made
 * while the watches of a node are in a gap, so the agent learns of it only at the relist (a delete
 * becomes a `DeletedFinalStateUnknown` tombstone, a same-name recreate one update with a new uid).
 */
import fc from 'fast-check';
import type { Action, ActionKind, PodSpec, PortSpec, ServicePortSpec, ServiceSpec, TimedAction } from '@netsim/sim';

/** What a generator may refer to. */
export interface GeneratorContext {
  readonly nodes: readonly string[];
  /** Pod names are `web-0` … `web-(pool-1)`. */
  readonly pool: number;
  readonly labels: Readonly<Record<string, string>>;
  /** Container ports generated Pods pick from. */
  readonly ports: readonly PortSpec[];
  readonly maxPorts: number;
  /** Services a `service.create` / `.delete` / `.update` starts from (the cluster's and the profile's variants). */
  readonly services: readonly ServiceSpec[];
  /** Whole Services `service.create` and `service.update` may use as they are. */
  readonly serviceVariants: readonly ServiceSpec[];
  /** Agents running beside the controller under test, by name. */
  readonly agents: readonly string[];
}

/**
 * Histories made of action kinds in a particular shape, which a swarm turns on and weighs like an
 * action kind: `blind-churn` (a change during a watch gap), `graceful-delete` (a Pod deleted with
 * a grace period: a window where it terminates and its endpoints are `terminating`),
 * `relist-storm` (the watches break with 410 again and again), `iptables-outage` (every iptables
 * command on a node fails for a while: a persistent failure retries must outlast),
 * `failing-start` (a node reboots, or its agent crashes, and the first iptables commands of the
 * new process fail: a bootstrap that must be retried).
 */
export const HISTORY_SHAPES = ['blind-churn', 'graceful-delete', 'relist-storm', 'iptables-outage', 'failing-start', 'service-edit', 'failed-sync', 'drain'] as const;
export type HistoryShape = (typeof HISTORY_SHAPES)[number];

/**
 * History shapes that close a history: nothing happens after them, so what the oracles judge
 * once the settle time has passed is the state the controller leaves after that last change alone
 * (a later Pod or Service change would make it sync again and hide a change it lost):
 * `service-edit` (a Service's targetPort, ports or selector change, so the Pods and ports it
 * selects change), `failed-sync` (the next iptables-restore of a node fails, or its next
 * iptables commands, or every one for a while, just as a Pod change comes: the sync that carries
 * the change fails), `drain` (a Pod that keeps serving while it
 * terminates, a preStop hook sleeping, is created on a node and the node is drained: its Pods are
 * evicted at once, the draining one the node's last endpoint for a while).
 */
export const CLOSING_SHAPES: readonly HistoryShape[] = ['service-edit', 'failed-sync', 'drain'];

/**
 * A closing shape starts at least this long before the end of the actions' window, so the quiet
 * after it outlasts a retry period as well as the settle time that follows the window.
 */
export const CLOSING_QUIET_MS = 6000;

/** The label a StatefulSet gives each of its Pods: a Service may select one Pod by it. */
export const POD_NAME_LABEL = 'statefulset.kubernetes.io/pod-name';

/** A feature a swarm may turn on: an action kind, or a history shape. */
export type SwarmFeature = ActionKind | HistoryShape;

export function isHistoryShape(f: SwarmFeature): f is HistoryShape {
  return (HISTORY_SHAPES as readonly string[]).includes(f);
}

type Gen<K extends ActionKind> = (c: GeneratorContext) => fc.Arbitrary<Extract<Action, { readonly kind: K }>> | undefined;

/** A Pod from the pool on one of the nodes, with 1..maxPorts distinct ports. */
export function podSpecArbitrary(c: GeneratorContext): fc.Arbitrary<PodSpec> {
  return fc
    .record({
      index: fc.integer({ min: 0, max: c.pool - 1 }),
      node: fc.constantFrom(...c.nodes),
      ports: fc.uniqueArray(fc.constantFrom(...c.ports), { minLength: 1, maxLength: Math.min(c.maxPorts, c.ports.length), selector: (p) => `${p.port}/${p.protocol}` }),
    })
    .map(({ index, node, ports }) => ({ name: `web-${index}`, node, labels: { ...c.labels, [POD_NAME_LABEL]: `web-${index}` }, ports: [...ports].sort((a, b) => a.port - b.port) }));
}

const podName = (c: GeneratorContext): fc.Arbitrary<string> => fc.integer({ min: 0, max: c.pool - 1 }).map((i) => `web-${i}`);
const node = (c: GeneratorContext): fc.Arbitrary<string> => fc.constantFrom(...c.nodes);
const maybeNode = (c: GeneratorContext): fc.Arbitrary<string | undefined> => fc.option(node(c), { nil: undefined });
const agent = (c: GeneratorContext): fc.Arbitrary<string | undefined> => (c.agents.length === 0 ? fc.constant(undefined) : fc.option(fc.constantFrom(...c.agents), { nil: undefined }));

const NPL_ENABLED = 'nodeportlocal.antrea.io/enabled';

/**
 * A change of an existing Service, as users make them: a port added, removed or renamed, a
 * targetPort changed (to another number or a container port's name), the selector changed, the
 * type or externalTrafficPolicy changed, the NodePortLocal annotation toggled. One to three at once.
 */
export function serviceChangeArbitrary(c: GeneratorContext, base: ServiceSpec): fc.Arbitrary<ServiceSpec> {
  const targets: (number | string)[] = [...new Set([...c.ports.map((p) => p.port), ...c.ports.flatMap((p) => (p.name !== undefined ? [p.name] : [])), 9999])];
  type Change = (s: ServiceSpec) => ServiceSpec;
  const used = (s: ServiceSpec): Set<number> => new Set(s.ports.map((p) => p.port));
  const freePort = (s: ServiceSpec, from: number): number => {
    let p = from;
    while (used(s).has(p)) p++;
    return p;
  };
  const named = (ports: readonly ServicePortSpec[]): ServicePortSpec[] => (ports.length > 1 ? ports.map((p, i) => ({ ...p, name: p.name ?? `p${i}` })) : [...ports]);
  const changes: fc.Arbitrary<Change>[] = [
    // A port added: one of the Pods' ports, by number or name.
    fc.record({ t: fc.constantFrom(...c.ports), byName: fc.boolean() }).map(
      ({ t, byName }): Change =>
        (s) => ({ ...s, ports: named([...s.ports, { name: `x${s.ports.length}`, port: freePort(s, 80 + s.ports.length), targetPort: byName && t.name !== undefined ? t.name : t.port, protocol: t.protocol }]) }),
    ),
    // A port removed (never the last).
    fc.nat().map((i): Change => (s) => (s.ports.length < 2 ? s : { ...s, ports: named(s.ports.filter((_, k) => k !== i % s.ports.length)) })),
    // A port renamed.
    fc.record({ i: fc.nat(), name: fc.constantFrom('web', 'alt', 'metrics') }).map(({ i, name }): Change => (s) => ({ ...s, ports: s.ports.map((p, k) => (k === i % s.ports.length && !s.ports.some((o) => o.name === name) ? { ...p, name } : p)) })),
    // A targetPort changed: another number, or a container port's name.
    fc.record({ i: fc.nat(), t: fc.constantFrom(...targets) }).map(({ i, t }): Change => (s) => ({ ...s, ports: s.ports.map((p, k) => (k === i % s.ports.length ? { ...p, targetPort: t } : p)) })),
    // The selector: another app (selects nothing generated), or back.
    fc.constantFrom({ app: 'other' }, { ...c.labels }).map((selector): Change => (s) => ({ ...s, selector })),
    // The type, with a policy that fits it.
    fc.constantFrom('ClusterIP' as const, 'NodePort' as const, 'LoadBalancer' as const).map((type): Change => (s) => {
      const { externalTrafficPolicy: _etp, ...rest } = s;
      const ports = s.ports.map(({ nodePort: _np, ...p }) => p);
      return type === 'ClusterIP' ? { ...rest, type, ports } : { ...rest, type, ports, ...(s.externalTrafficPolicy !== undefined ? { externalTrafficPolicy: s.externalTrafficPolicy } : {}) };
    }),
    // externalTrafficPolicy toggled (NodePort and LoadBalancer only).
    fc.constant((s: ServiceSpec): ServiceSpec => (s.type === 'NodePort' || s.type === 'LoadBalancer' ? { ...s, externalTrafficPolicy: s.externalTrafficPolicy === 'Local' ? 'Cluster' : 'Local' } : s)),
    // The NodePortLocal annotation toggled.
    fc.constant((s: ServiceSpec): ServiceSpec => {
      const { [NPL_ENABLED]: on, ...others } = s.annotations ?? {};
      return { ...s, annotations: on === 'true' ? others : { ...others, [NPL_ENABLED]: 'true' } };
    }),
  ];
  return fc.array(fc.oneof(...changes), { minLength: 1, maxLength: 3 }).map((fs) => fs.reduce((s, f) => f(s), base));
}

/**
 * A Service edit that changes where the Service sends traffic: a targetPort changed (to another
 * of the Pods' ports, by number or name, or to a port they do not declare), a port removed (never
 * the last), or the selector changed (to select nothing, every Pod, or one Pod by its
 * StatefulSet name label), so the Pods and ports it selects change. One or two at once.
 */
export function serviceRetargetArbitrary(c: GeneratorContext, base: ServiceSpec): fc.Arbitrary<ServiceSpec> {
  const targets: (number | string)[] = [...new Set([...c.ports.map((p) => p.port), ...c.ports.flatMap((p) => (p.name !== undefined ? [p.name] : [])), 9999])];
  type Change = (s: ServiceSpec) => ServiceSpec;
  const named = (ports: readonly ServicePortSpec[]): ServicePortSpec[] => (ports.length > 1 ? ports.map((p, i) => ({ ...p, name: p.name ?? `p${i}` })) : [...ports]);
  const changes: fc.Arbitrary<Change>[] = [
    fc.record({ i: fc.nat(), t: fc.constantFrom(...targets) }).map(({ i, t }): Change => (s) => ({ ...s, ports: s.ports.map((p, k) => (k === i % s.ports.length ? { ...p, targetPort: t } : p)) })),
    fc.nat().map((i): Change => (s) => (s.ports.length < 2 ? s : { ...s, ports: named(s.ports.filter((_, k) => k !== i % s.ports.length)) })),
    fc
      .oneof(fc.constant({ app: 'other' }), fc.constant({ ...c.labels }), fc.integer({ min: 0, max: c.pool - 1 }).map((i) => ({ ...c.labels, [POD_NAME_LABEL]: `web-${i}` })))
      .map((selector): Change => (s) => ({ ...s, selector })),
  ];
  return fc.array(fc.oneof(...changes), { minLength: 1, maxLength: 2 }).map((fs) => fs.reduce((s, f) => f(s), base));
}

/** The generators, by action kind. */
export const ACTION_GENERATORS: { readonly [K in ActionKind]: Gen<K> } = {
  'pod.create': (c) => podSpecArbitrary(c).map((pod) => ({ kind: 'pod.create', pod })),
  'pod.delete': (c) => podName(c).map((name) => ({ kind: 'pod.delete', name })),
  'pod.recreate': (c) => fc.record({ name: podName(c), gapMs: fc.integer({ min: 0, max: 2000 }) }).map((r) => ({ kind: 'pod.recreate', ...r })),
  'pod.complete': (c) => fc.record({ name: podName(c), phase: fc.constantFrom('Succeeded' as const, 'Failed' as const) }).map((r) => ({ kind: 'pod.complete', ...r })),
  'workload.scale': (c) =>
    fc
      .record({ replicas: fc.integer({ min: 0, max: c.pool }), nodes: fc.uniqueArray(node(c), { minLength: 1, maxLength: c.nodes.length }), port: fc.constantFrom(...c.ports) })
      .map((r) => ({ kind: 'workload.scale', name: 'web', replicas: r.replicas, nodes: r.nodes, labels: { ...c.labels }, ports: [r.port] })),
  'service.create': (c) => {
    const all = [...c.services, ...c.serviceVariants];
    return all.length === 0 ? undefined : fc.constantFrom(...all).map((service) => ({ kind: 'service.create', service }));
  },
  'service.update': (c) => {
    const arbs: fc.Arbitrary<ServiceSpec>[] = [];
    if (c.serviceVariants.length > 0) arbs.push(fc.constantFrom(...c.serviceVariants));
    for (const s of c.services) arbs.push(serviceChangeArbitrary(c, s));
    return arbs.length === 0 ? undefined : fc.oneof(...arbs).map((service) => ({ kind: 'service.update', service }));
  },
  'service.delete': (c) => {
    const all = [...c.services, ...c.serviceVariants];
    return all.length === 0 ? undefined : fc.constantFrom(...all).map((s) => ({ kind: 'service.delete', name: s.name, ...(s.namespace !== undefined ? { namespace: s.namespace } : {}) }));
  },
  'agent.crash': (c) => fc.record({ node: node(c), agent: agent(c), restartAfterMs: fc.integer({ min: 0, max: 5000 }) }).map(({ agent: a, ...r }) => ({ kind: 'agent.crash', ...r, ...(a !== undefined ? { agent: a } : {}) })),
  'agent.restart': (c) => fc.record({ node: node(c), agent: agent(c), downMs: fc.integer({ min: 0, max: 5000 }) }).map(({ agent: a, ...r }) => ({ kind: 'agent.restart', ...r, ...(a !== undefined ? { agent: a } : {}) })),
  'node.reboot': (c) => fc.record({ node: node(c), downMs: fc.integer({ min: 500, max: 5000 }) }).map((r) => ({ kind: 'node.reboot', ...r })),
  'node.drain': (c) => node(c).map((n) => ({ kind: 'node.drain', node: n })),
  'watch.gap': (c) => fc.record({ node: maybeNode(c), durationMs: fc.integer({ min: 1, max: 5000 }) }).map(({ node: n, durationMs }) => ({ kind: 'watch.gap', durationMs, ...(n !== undefined ? { node: n } : {}) })),
  'watch.reset': (c) => maybeNode(c).map((n) => ({ kind: 'watch.reset', ...(n !== undefined ? { node: n } : {}) })),
  'watch.delay': (c) =>
    fc.record({ node: maybeNode(c), delayMs: fc.integer({ min: 1, max: 2000 }), durationMs: fc.integer({ min: 1, max: 5000 }) }).map(({ node: n, ...r }) => ({ kind: 'watch.delay', ...r, ...(n !== undefined ? { node: n } : {}) })),
  'informer.resync': (c) => maybeNode(c).map((n) => ({ kind: 'informer.resync', ...(n !== undefined ? { node: n } : {}) })),
  'handlers.slow': (c) =>
    fc.record({ node: maybeNode(c), delayMs: fc.integer({ min: 50, max: 1000 }), durationMs: fc.integer({ min: 500, max: 5000 }) }).map(({ node: n, ...r }) => ({ kind: 'handlers.slow', ...r, ...(n !== undefined ? { node: n } : {}) })),
  'iptables.lock': (c) => fc.record({ node: node(c), durationMs: fc.integer({ min: 1, max: 3000 }) }).map((r) => ({ kind: 'iptables.lock', ...r })),
  'iptables.fail': (c) => fc.record({ node: node(c), count: fc.integer({ min: 1, max: 3 }) }).map((r) => ({ kind: 'iptables.fail', ...r })),
  'iptables.restore-fail': (c) => fc.record({ node: node(c), line: fc.integer({ min: 1, max: 10 }) }).map((r) => ({ kind: 'iptables.restore-fail', ...r })),
  'iptables.slow': (c) => fc.record({ node: node(c), extraMs: fc.integer({ min: 1, max: 500 }), durationMs: fc.integer({ min: 1, max: 5000 }) }).map((r) => ({ kind: 'iptables.slow', ...r })),
  'sysctl.set': (c) => fc.record({ host: node(c), value: fc.constantFrom('0', '1', '2') }).map((r) => ({ kind: 'sysctl.set', host: r.host, key: 'net.ipv4.conf.all.rp_filter', value: r.value })),
  'link.set': (c) => fc.record({ host: node(c), state: fc.constantFrom('down' as const, 'up' as const) }).map((r) => ({ kind: 'link.set', host: r.host, iface: 'eth0', state: r.state })),
  'addr.add': () => undefined,
  'addr.del': () => undefined,
  'route.add': () => undefined,
  'route.del': () => undefined,
  'host.run': () => undefined,
};

/** Whether a history shape has anything to act on in a context (`service-edit` needs a Service). */
export function shapeApplies(shape: HistoryShape, c: GeneratorContext): boolean {
  return shape !== 'service-edit' || c.services.length > 0;
}

/** The Pod changes a failed sync may carry: a Pod deleted, created, recreated, or the workload scaled. */
function podChangeArbitrary(c: GeneratorContext): fc.Arbitrary<Action> {
  return fc.oneof(
    ACTION_GENERATORS['pod.delete'](c) as fc.Arbitrary<Action>,
    ACTION_GENERATORS['pod.create'](c) as fc.Arbitrary<Action>,
    ACTION_GENERATORS['pod.recreate'](c) as fc.Arbitrary<Action>,
    ACTION_GENERATORS['workload.scale'](c) as fc.Arbitrary<Action>,
  );
}

/**
 * Timed actions of a history shape, in [start, end] (a closing shape, see {@link CLOSING_SHAPES},
 * starts by `end - CLOSING_QUIET_MS`).
 */
export function historyShapeArbitrary(shape: HistoryShape, c: GeneratorContext, start: number, end: number): fc.Arbitrary<TimedAction[]> {
  const at = fc.integer({ min: start, max: end });
  const closingAt = fc.integer({ min: start, max: Math.max(start, end - CLOSING_QUIET_MS) });
  const one = (action: fc.Arbitrary<Action>): fc.Arbitrary<TimedAction[]> => fc.record({ atMs: at, action }).map((t) => [t]);
  switch (shape) {
    case 'blind-churn':
      return blindChurnArbitrary(c, start, end);
    case 'graceful-delete':
      // Long windows too: a Pod that terminates for longer than the settle time is where the
      // handling of terminating endpoints shows.
      return one(fc.record({ name: podName(c), graceSeconds: fc.constantFrom(1, 2, 5, 10, 30) }).map((r): Action => ({ kind: 'pod.delete', ...r })));
    case 'relist-storm':
      return one(fc.record({ node: maybeNode(c), count: fc.integer({ min: 2, max: 5 }), everyMs: fc.integer({ min: 100, max: 1500 }) }).map(({ node: n, ...r }): Action => ({ kind: 'watch.reset', ...r, ...(n !== undefined ? { node: n } : {}) })));
    case 'failing-start':
      return fc
        .record({ atMs: at, node: node(c), reboot: fc.boolean(), downMs: fc.integer({ min: 500, max: 3000 }), count: fc.integer({ min: 1, max: 3 }) })
        .map(({ atMs, node: n, reboot, downMs, count }): TimedAction[] => [
          { atMs, action: reboot ? { kind: 'node.reboot', node: n, downMs } : { kind: 'agent.crash', node: n, restartAfterMs: downMs } },
          { atMs, action: { kind: 'iptables.fail', node: n, count } },
        ]);
    case 'iptables-outage':
      return one(fc.record({ node: node(c), durationMs: fc.integer({ min: 200, max: 4000 }) }).map((r): Action => ({ kind: 'iptables.fail', ...r })));
    case 'service-edit': {
      const base = c.services.length === 0 ? undefined : fc.constantFrom(...c.services);
      if (base === undefined) return fc.constant([]);
      return fc
        .record({ atMs: closingAt, service: base.chain((s) => serviceRetargetArbitrary(c, s)) })
        .map(({ atMs, service }): TimedAction[] => [{ atMs, action: { kind: 'service.update', service } }]);
    }
    case 'failed-sync': {
      // The next iptables-restore fails, or the next few iptables commands, or every one for a while.
      const fault = fc.oneof(
        fc.integer({ min: 1, max: 10 }).map((line) => (n: string): Action => ({ kind: 'iptables.restore-fail', node: n, line })),
        fc.integer({ min: 1, max: 3 }).map((count) => (n: string): Action => ({ kind: 'iptables.fail', node: n, count })),
        // Long enough to cover a new Pod's start (its sandbox, then Ready): every sync of it fails.
        fc.integer({ min: 1000, max: 3000 }).map((durationMs) => (n: string): Action => ({ kind: 'iptables.fail', node: n, durationMs })),
      );
      return fc
        .record({ atMs: closingAt, node: node(c), fault, afterMs: fc.integer({ min: 0, max: 500 }), change: podChangeArbitrary(c) })
        .map(({ atMs, node: n, fault: f, afterMs, change }): TimedAction[] => {
          // The node the change lands on, when the change says (a created Pod's, a scaled workload's first).
          const on = change.kind === 'pod.create' ? change.pod.node : change.kind === 'workload.scale' ? (change.nodes[0] ?? n) : n;
          return [
            { atMs, action: f(on) },
            { atMs: atMs + afterMs, action: change },
          ];
        });
    }
    case 'drain':
      return drainArbitrary(c, start, end);
  }
}

/**
 * `drain`: a Pod whose preStop hook sleeps (it keeps serving for a while after a delete) is
 * created on a node, becomes Ready, and the node is drained: the node's other Pods go at once,
 * and the draining Pod is the node's last endpoint, serving and terminating, for longer than the
 * settle time. A closing shape: the probes judge that window.
 */
export function drainArbitrary(c: GeneratorContext, start: number, end: number): fc.Arbitrary<TimedAction[]> {
  return fc
    .record({
      atMs: fc.integer({ min: start, max: Math.max(start, end - CLOSING_QUIET_MS) }),
      pod: podSpecArbitrary(c),
      sleep: fc.constantFrom(6, 10),
      grace: fc.constantFrom(10, 30),
      readyAfterMs: fc.integer({ min: 1500, max: 3000 }),
    })
    .map(({ atMs, pod, sleep, grace, readyAfterMs }): TimedAction[] => {
      // A name outside the pool: no churn names it, so it is created with its hook.
      const name = `web-${c.pool}`;
      const draining: PodSpec = { ...pod, name, labels: { ...c.labels, [POD_NAME_LABEL]: name }, terminationGracePeriodSeconds: grace, preStopSleepSeconds: sleep };
      return [
        { atMs, action: { kind: 'pod.create', pod: draining } },
        { atMs: atMs + readyAfterMs, action: { kind: 'node.drain', node: pod.node } },
      ];
    });
}

/**
 * `blind-churn`: the watches of one node lose every event for a while, and meanwhile a Pod is
 * deleted (gracefully or not), recreated under its name, or a Service is deleted; the agent sees
 * it only when it relists.
 */
export function blindChurnArbitrary(c: GeneratorContext, start: number, end: number): fc.Arbitrary<TimedAction[]> {
  const changes: fc.Arbitrary<Action>[] = [
    (ACTION_GENERATORS['pod.delete'](c) as fc.Arbitrary<Action>),
    fc.record({ name: podName(c), gapMs: fc.integer({ min: 0, max: 500 }) }).map((r): Action => ({ kind: 'pod.recreate', ...r })),
  ];
  const sdel = ACTION_GENERATORS['service.delete'](c);
  if (sdel !== undefined) changes.push(sdel);
  return fc
    .record({ atMs: fc.integer({ min: start, max: end }), node: node(c), durationMs: fc.integer({ min: 1500, max: 5000 }), offset: fc.integer({ min: 1, max: 1000 }), change: fc.oneof(...changes) })
    .map(({ atMs, node: n, durationMs, offset, change }) => [
      { atMs, action: { kind: 'watch.gap', node: n, durationMs } },
      { atMs: Math.min(end, atMs + Math.min(offset, durationMs - 1)), action: change },
    ]);
}

/** Every feature that has a generator in a context (a swarm draws among these). */
export function generatableFeatures(c: GeneratorContext, among: readonly SwarmFeature[]): SwarmFeature[] {
  return among.filter((f) => (isHistoryShape(f) ? shapeApplies(f, c) : ACTION_GENERATORS[f](c) !== undefined));
}

/**
 * Closes a timeline (see {@link CLOSING_SHAPES}): the first closing entry's actions end it, and
 * every other action at or after its start moves before it (times scaled into [start, its start),
 * in order). Entries are each one or more timed actions, with whether they close.
 */
export function closeTimeline(entries: readonly { readonly actions: readonly TimedAction[]; readonly closing: boolean }[], start: number, end: number): TimedAction[] {
  const last = entries.find((e) => e.closing && e.actions.length > 0);
  if (last === undefined) return entries.flatMap((e) => e.actions).sort((a, b) => a.atMs - b.atMs);
  const t0 = Math.min(...last.actions.map((a) => a.atMs));
  const span = end - start + 1;
  const others = entries
    .filter((e) => e !== last)
    .flatMap((e) => e.actions)
    .map((a) => (a.atMs < t0 ? a : { ...a, atMs: start + Math.floor(((a.atMs - start) * (t0 - start)) / span) }))
    .sort((a, b) => a.atMs - b.atMs);
  return [...others, ...[...last.actions].sort((a, b) => a.atMs - b.atMs)];
}
