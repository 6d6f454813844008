/**
 * fast-check arbitraries for simulation scenarios: clusters, Pod churn (create, delete,
 * same-name recreate, multi-port Pods, IP reuse), Service changes, faults, restarts and
 * schedules. Everything generated is plain data ({@link SimScenario}), so a shrunk
 * counterexample can be printed, saved and replayed.
 *
 * Churn draws Pod names from a small pool (`web-0` … `web-k`), so the same name is created,
 * deleted and recreated often: that is where identity bugs live. Timelines shrink towards fewer
 * actions at earlier times; the seed does not need to shrink.
 */
import fc from 'fast-check';
import {
  SIM_SCENARIO_FORMAT,
  type Action,
  type ActionKind,
  type ClusterSpec,
  type JsonObject,
  type PodSpec,
  type PortSpec,
  type ProbeSpec,
  type ServiceSpec,
  type SimScenario,
  type TimedAction,
} from '@netsim/sim';

/** Shape of the clusters to generate. */
export interface ClusterArbitraryOptions {
  /** Node count range (default 1..2). */
  readonly nodes?: { readonly min: number; readonly max: number };
  readonly queueModes?: readonly ('DeltaFIFO' | 'RealFIFO' | 'AtomicFIFO')[];
  /** Services present from the start (fixed: the controller's configuration, e.g. an NPL-enabled Service). */
  readonly services?: readonly ServiceSpec[];
  /** Pods present from the start: up to this many from the pool (default 2). */
  readonly initialPods?: number;
  readonly ipamPolicies?: readonly ('round-robin' | 'lowest-free')[];
  readonly nodeCidrMaskSize?: number;
}

/** Shape of the Pods churn creates. */
export interface PodArbitraryOptions {
  /** Names come from `web-0` … `web-(poolSize-1)` (default 3). */
  readonly poolSize?: number;
  /** Labels every Pod carries (so Services select them), default `{ app: 'web' }`. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Container ports to pick from (default 8080..8083/TCP). */
  readonly ports?: readonly PortSpec[];
  /** At most this many ports per Pod (default 3): multi-port Pods. */
  readonly maxPorts?: number;
}

export interface TimelineArbitraryOptions {
  /** Which actions to generate (default: Pod churn only). */
  readonly kinds?: readonly ActionKind[];
  readonly maxActions?: number;
  /** Actions happen in [startMs, endMs] (default [0, horizon − settle]). */
  readonly startMs?: number;
  readonly endMs?: number;
  /** Services `service.update` may produce (annotation or selector changes). */
  readonly serviceVariants?: readonly ServiceSpec[];
  /**
   * Agents running alongside the controller under test, by the name the trace gives them after
   * the node (`kube-proxy`): `agent.crash` and `agent.restart` then hit one of them or (no
   * `agent`) the controller under test's.
   */
  readonly agents?: readonly string[];
}

export interface ScenarioArbitraryOptions {
  readonly controller: { readonly name: string; readonly options?: JsonObject };
  /** Controllers deployed beside it on every node (`SimScenario.alongside`); name their agents in `timeline.agents`. */
  readonly alongside?: readonly { readonly name: string; readonly options?: JsonObject }[];
  readonly cluster?: ClusterArbitraryOptions;
  readonly pods?: PodArbitraryOptions;
  readonly timeline?: TimelineArbitraryOptions;
  readonly probes?: readonly ProbeSpec[];
  /** Default 20,000 ms. */
  readonly horizonMs?: number;
  /** Default 3,000 ms. */
  readonly settleMs?: number;
  /** `seed` (default): ties broken by the seed. `path`: also generate explicit tie-break choices that shrink towards FIFO. */
  readonly schedule?: 'seed' | 'path';
}

/** The Pod churn kinds. */
export const POD_CHURN: readonly ActionKind[] = ['pod.create', 'pod.delete', 'pod.recreate'];
/** Agent lifecycle faults. */
export const RESTARTS: readonly ActionKind[] = ['agent.crash', 'agent.restart'];
/** Watch faults. */
export const WATCH_FAULTS: readonly ActionKind[] = ['watch.gap', 'watch.reset', 'watch.delay'];
/** iptables faults. */
export const IPTABLES_FAULTS: readonly ActionKind[] = ['iptables.lock', 'iptables.fail', 'iptables.restore-fail', 'iptables.slow'];
/**
 * Network changes every default data plane accepts: a node's `rp_filter` (0, 1 or 2, all
 * interfaces) and its `eth0` going down or up. (Address and `host.run` changes depend on the
 * network a scenario describes: write them by hand.)
 */
export const NETWORK_CHANGES: readonly ActionKind[] = ['sysctl.set', 'link.set'];

const DEFAULT_PORTS: readonly PortSpec[] = [8080, 8081, 8082, 8083].map((port) => ({ port, protocol: 'TCP' as const }));

function nodeNames(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `node-${i + 1}`);
}

/** A Pod from the pool on one of `nodes`, with 1..maxPorts distinct ports. */
export function podArbitrary(nodes: readonly string[], opts: PodArbitraryOptions = {}): fc.Arbitrary<PodSpec> {
  const pool = opts.poolSize ?? 3;
  const ports = opts.ports ?? DEFAULT_PORTS;
  const labels = opts.labels ?? { app: 'web' };
  return fc
    .record({
      index: fc.integer({ min: 0, max: pool - 1 }),
      node: fc.constantFrom(...nodes),
      ports: fc.uniqueArray(fc.constantFrom(...ports), { minLength: 1, maxLength: Math.min(opts.maxPorts ?? 3, ports.length), selector: (p) => `${p.port}/${p.protocol}` }),
    })
    .map(({ index, node, ports: ps }) => ({ name: `web-${index}`, node, labels: { ...labels }, ports: [...ps].sort((a, b) => a.port - b.port) }));
}

/** The names churn uses. */
function podName(pool: number): fc.Arbitrary<string> {
  return fc.integer({ min: 0, max: pool - 1 }).map((i) => `web-${i}`);
}

/** One action of the given kinds over a cluster of `nodes`. */
export function actionArbitrary(kinds: readonly ActionKind[], nodes: readonly string[], opts: { readonly pods?: PodArbitraryOptions; readonly serviceVariants?: readonly ServiceSpec[]; readonly agents?: readonly string[] } = {}): fc.Arbitrary<Action> {
  const pool = opts.pods?.poolSize ?? 3;
  const node = fc.constantFrom(...nodes);
  // Which agent a lifecycle fault hits: the controller under test's (no `agent`) or one alongside it.
  const agents = opts.agents ?? [];
  const agent = agents.length === 0 ? fc.constant(undefined) : fc.option(fc.constantFrom(...agents), { nil: undefined });
  const maybeNode = fc.option(node, { nil: undefined });
  const arbs: fc.Arbitrary<Action>[] = [];
  for (const kind of kinds) {
    switch (kind) {
      case 'pod.create':
        arbs.push(podArbitrary(nodes, opts.pods).map((pod) => ({ kind, pod })));
        break;
      case 'pod.delete':
        arbs.push(podName(pool).map((name) => ({ kind, name })));
        break;
      case 'pod.recreate':
        arbs.push(fc.record({ name: podName(pool), gapMs: fc.integer({ min: 0, max: 2000 }) }).map((r) => ({ kind, ...r })));
        break;
      case 'service.create':
      case 'service.update':
        if (opts.serviceVariants !== undefined && opts.serviceVariants.length > 0) arbs.push(fc.constantFrom(...opts.serviceVariants).map((service) => ({ kind, service })));
        break;
      case 'service.delete':
        if (opts.serviceVariants !== undefined && opts.serviceVariants.length > 0) arbs.push(fc.constantFrom(...opts.serviceVariants).map((s) => ({ kind, name: s.name, ...(s.namespace !== undefined ? { namespace: s.namespace } : {}) })));
        break;
      case 'agent.crash':
        arbs.push(fc.record({ node, agent, restartAfterMs: fc.integer({ min: 0, max: 5000 }) }).map(({ agent: a, ...r }) => ({ kind, ...r, ...(a !== undefined ? { agent: a } : {}) })));
        break;
      case 'agent.restart':
        arbs.push(fc.record({ node, agent, downMs: fc.integer({ min: 0, max: 5000 }) }).map(({ agent: a, ...r }) => ({ kind, ...r, ...(a !== undefined ? { agent: a } : {}) })));
        break;
      case 'watch.gap':
        arbs.push(fc.record({ node: maybeNode, durationMs: fc.integer({ min: 1, max: 5000 }) }).map(({ node: n, durationMs }) => ({ kind, durationMs, ...(n !== undefined ? { node: n } : {}) })));
        break;
      case 'watch.reset':
        arbs.push(maybeNode.map((n) => ({ kind, ...(n !== undefined ? { node: n } : {}) })));
        break;
      case 'watch.delay':
        arbs.push(
          fc.record({ node: maybeNode, delayMs: fc.integer({ min: 1, max: 2000 }), durationMs: fc.integer({ min: 1, max: 5000 }) }).map(({ node: n, ...r }) => ({ kind, ...r, ...(n !== undefined ? { node: n } : {}) })),
        );
        break;
      case 'iptables.lock':
        arbs.push(fc.record({ node, durationMs: fc.integer({ min: 1, max: 3000 }) }).map((r) => ({ kind, ...r })));
        break;
      case 'iptables.fail':
        arbs.push(fc.record({ node, count: fc.integer({ min: 1, max: 3 }) }).map((r) => ({ kind, ...r })));
        break;
      case 'iptables.restore-fail':
        arbs.push(fc.record({ node, line: fc.integer({ min: 1, max: 10 }) }).map((r) => ({ kind, ...r })));
        break;
      case 'iptables.slow':
        arbs.push(fc.record({ node, extraMs: fc.integer({ min: 1, max: 500 }), durationMs: fc.integer({ min: 1, max: 5000 }) }).map((r) => ({ kind, ...r })));
        break;
      case 'sysctl.set':
        arbs.push(fc.record({ host: node, value: fc.constantFrom('0', '1', '2') }).map((r) => ({ kind, host: r.host, key: 'net.ipv4.conf.all.rp_filter', value: r.value })));
        break;
      case 'link.set':
        arbs.push(fc.record({ host: node, state: fc.constantFrom('down' as const, 'up' as const) }).map((r) => ({ kind, host: r.host, iface: 'eth0', state: r.state })));
        break;
      case 'workload.scale': {
        const ports = opts.pods?.ports ?? DEFAULT_PORTS;
        arbs.push(
          fc
            .record({ replicas: fc.integer({ min: 0, max: pool }), nodes: fc.uniqueArray(node, { minLength: 1, maxLength: nodes.length }), port: fc.constantFrom(...ports) })
            .map((r) => ({ kind, name: 'web', replicas: r.replicas, nodes: r.nodes, labels: { ...(opts.pods?.labels ?? { app: 'web' }) }, ports: [r.port] })),
        );
        break;
      }
      case 'addr.add':
      case 'addr.del':
      case 'route.add':
      case 'route.del':
      case 'host.run':
        break;
    }
  }
  if (arbs.length === 0) throw new Error(`actionArbitrary: no generator for kinds ${JSON.stringify(kinds)} (service actions need serviceVariants)`);
  return fc.oneof(...arbs);
}

/** A timeline: actions at times in [startMs, endMs], sorted by time (shrinks to fewer, earlier actions). */
export function timelineArbitrary(nodes: readonly string[], horizonMs: number, settleMs: number, opts: TimelineArbitraryOptions & { readonly pods?: PodArbitraryOptions } = {}): fc.Arbitrary<TimedAction[]> {
  const start = opts.startMs ?? 0;
  const end = Math.max(start, opts.endMs ?? horizonMs - settleMs);
  const action = actionArbitrary(opts.kinds ?? POD_CHURN, nodes, { ...(opts.pods !== undefined ? { pods: opts.pods } : {}), ...(opts.serviceVariants !== undefined ? { serviceVariants: opts.serviceVariants } : {}), ...(opts.agents !== undefined ? { agents: opts.agents } : {}) });
  return fc
    .array(fc.record({ atMs: fc.integer({ min: start, max: end }), action }), { maxLength: opts.maxActions ?? 12 })
    .map((xs) => [...xs].sort((a, b) => a.atMs - b.atMs));
}

/** A cluster: nodes, queue mode, IPAM policy, Services and a few initial Pods. */
export function clusterArbitrary(opts: ClusterArbitraryOptions = {}, pods: PodArbitraryOptions = {}): fc.Arbitrary<ClusterSpec> {
  const range = opts.nodes ?? { min: 1, max: 2 };
  // Arbitraries are immutable descriptions: build the one for n nodes once, not per generated value.
  const byCount = new Map<number, fc.Arbitrary<ClusterSpec>>();
  return fc.integer({ min: range.min, max: range.max }).chain((n) => {
    let arb = byCount.get(n);
    if (arb === undefined) {
      arb = clusterOf(n, opts, pods);
      byCount.set(n, arb);
    }
    return arb;
  });
}

function clusterOf(n: number, opts: ClusterArbitraryOptions, pods: PodArbitraryOptions): fc.Arbitrary<ClusterSpec> {
  const nodes = nodeNames(n);
  return fc
    .record({
      queueMode: fc.constantFrom(...(opts.queueModes ?? ['DeltaFIFO' as const])),
      ipamPolicy: fc.constantFrom(...(opts.ipamPolicies ?? ['round-robin' as const])),
      pods: fc.uniqueArray(podArbitrary(nodes, pods), { maxLength: opts.initialPods ?? 2, selector: (p) => p.name }),
    })
    .map((r) => ({
      nodes: nodes.map((name) => ({ name })),
      queueMode: r.queueMode,
      ipamPolicy: r.ipamPolicy,
      services: [...(opts.services ?? [])],
      pods: r.pods,
      ...(opts.nodeCidrMaskSize !== undefined ? { nodeCidrMaskSize: opts.nodeCidrMaskSize } : {}),
    }));
}

/** Explicit tie-break choices that shrink towards FIFO (all zeros, then none). */
export function scheduleArbitrary(maxChoices = 64): fc.Arbitrary<{ readonly path: number[]; readonly whenPathExhausted: 'fifo' }> {
  return fc.array(fc.nat({ max: 7 }), { maxLength: maxChoices }).map((path) => ({ path, whenPathExhausted: 'fifo' as const }));
}

/**
 * Whole scenarios for one controller.
 *
 * @example
 * ```ts
 * const scenarios = scenarioArbitrary({
 *   controller: { name: 'npl' },
 *   cluster: { services: [nplService] },
 *   timeline: { kinds: [...POD_CHURN, ...WATCH_FAULTS, ...RESTARTS] },
 * });
 * ```
 */
export function scenarioArbitrary(opts: ScenarioArbitraryOptions): fc.Arbitrary<SimScenario> {
  const horizonMs = opts.horizonMs ?? 20_000;
  const settleMs = opts.settleMs ?? 3000;
  // The rest of a scenario depends on the cluster only through its node names: build that
  // arbitrary once per node list (arbitraries are immutable descriptions), not per generated value.
  const byNodes = new Map<string, fc.Arbitrary<{ readonly seed: number; readonly timeline: TimedAction[]; readonly schedule: SimScenario['schedule'] }>>();
  const restOf = (nodes: readonly string[]): fc.Arbitrary<{ readonly seed: number; readonly timeline: TimedAction[]; readonly schedule: SimScenario['schedule'] }> => {
    const key = nodes.join('\u0000');
    let arb = byNodes.get(key);
    if (arb === undefined) {
      arb = fc.record({
        seed: fc.integer({ min: 0, max: 0x7fffffff }),
        timeline: timelineArbitrary(nodes, horizonMs, settleMs, { ...(opts.timeline ?? {}), ...(opts.pods !== undefined ? { pods: opts.pods } : {}) }),
        schedule: opts.schedule === 'path' ? scheduleArbitrary().map((s) => s as SimScenario['schedule']) : fc.constant(undefined),
      });
      byNodes.set(key, arb);
    }
    return arb;
  };
  return clusterArbitrary(opts.cluster, opts.pods).chain((cluster) => {
    const nodes = cluster.nodes.map((n) => n.name);
    return restOf(nodes)
      .map(({ seed, timeline, schedule }) => ({
        format: SIM_SCENARIO_FORMAT,
        seed,
        ...(schedule !== undefined ? { schedule } : {}),
        cluster,
        controller: opts.controller.options !== undefined ? { name: opts.controller.name, options: opts.controller.options } : { name: opts.controller.name },
        ...(opts.alongside !== undefined && opts.alongside.length > 0 ? { alongside: opts.alongside.map((c) => ({ ...c })) } : {}),
        timeline,
        ...(opts.probes !== undefined ? { probes: [...opts.probes] } : {}),
        horizonMs,
        settleMs,
      }));
  });
}
