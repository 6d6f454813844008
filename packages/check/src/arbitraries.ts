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
  type SwarmConfig,
  type TimedAction,
} from '@netsim/sim';
import { ACTION_GENERATORS, CLOSING_SHAPES, closeTimeline, generatableFeatures, historyShapeArbitrary, isHistoryShape, podSpecArbitrary, shapeApplies, type GeneratorContext, type SwarmFeature } from './generators.ts';

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
  /** Which actions to generate (default: Pod churn only), and history shapes (`blind-churn`, `graceful-delete`, …, see `generators.ts`). */
  readonly kinds?: readonly SwarmFeature[];
  /** Relative weights of the kinds (default 1 each). */
  readonly weights?: { readonly [kind: string]: number };
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
  /**
   * Swarm testing (Groce et al., ISSTA 2012): each scenario first draws which of `timeline.kinds`
   * are on, and with what weight, so a fault that masks another is off in some runs. The draw is
   * part of the scenario (`SimScenario.swarm`) and shrinks towards fewer kinds.
   */
  readonly swarm?: boolean;
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

/** The generators' context for a cluster of `nodes`. */
export function generatorContext(nodes: readonly string[], opts: { readonly pods?: PodArbitraryOptions; readonly services?: readonly ServiceSpec[]; readonly serviceVariants?: readonly ServiceSpec[]; readonly agents?: readonly string[] } = {}): GeneratorContext {
  return {
    nodes,
    pool: opts.pods?.poolSize ?? 3,
    labels: opts.pods?.labels ?? { app: 'web' },
    ports: opts.pods?.ports ?? DEFAULT_PORTS,
    maxPorts: opts.pods?.maxPorts ?? 3,
    services: opts.services ?? [],
    serviceVariants: opts.serviceVariants ?? [],
    agents: opts.agents ?? [],
  };
}

/** A Pod from the pool on one of `nodes`, with 1..maxPorts distinct ports. */
export function podArbitrary(nodes: readonly string[], opts: PodArbitraryOptions = {}): fc.Arbitrary<PodSpec> {
  return podSpecArbitrary(generatorContext(nodes, { pods: opts }));
}

/** Options of {@link actionArbitrary}. */
export interface ActionArbitraryOptions {
  readonly pods?: PodArbitraryOptions;
  /** The cluster's Services: Service changes start from them. */
  readonly services?: readonly ServiceSpec[];
  readonly serviceVariants?: readonly ServiceSpec[];
  readonly agents?: readonly string[];
  readonly weights?: { readonly [kind: string]: number };
}

/** One action of the given kinds over a cluster of `nodes` (each kind by its generator in `generators.ts`). */
export function actionArbitrary(kinds: readonly ActionKind[], nodes: readonly string[], opts: ActionArbitraryOptions = {}): fc.Arbitrary<Action> {
  const c = generatorContext(nodes, opts);
  const arbs: { arbitrary: fc.Arbitrary<Action>; weight: number }[] = [];
  for (const kind of kinds) {
    const arb = (ACTION_GENERATORS[kind] as (c: GeneratorContext) => fc.Arbitrary<Action> | undefined)(c);
    if (arb !== undefined) arbs.push({ arbitrary: arb, weight: opts.weights?.[kind] ?? 1 });
  }
  if (arbs.length === 0) throw new Error(`actionArbitrary: no generator for kinds ${JSON.stringify(kinds)} (service actions need Services or serviceVariants)`);
  return fc.oneof(...arbs);
}

/** A timeline: actions at times in [startMs, endMs], sorted by time (shrinks to fewer, earlier actions). */
export function timelineArbitrary(
  nodes: readonly string[],
  horizonMs: number,
  settleMs: number,
  opts: TimelineArbitraryOptions & { readonly pods?: PodArbitraryOptions; readonly services?: readonly ServiceSpec[] } = {},
): fc.Arbitrary<TimedAction[]> {
  const start = opts.startMs ?? 0;
  const end = Math.max(start, opts.endMs ?? horizonMs - settleMs);
  const features = opts.kinds ?? POD_CHURN;
  const kinds = features.filter((k): k is ActionKind => !isHistoryShape(k));
  const shapes = features.filter(isHistoryShape);
  const c = generatorContext(nodes, opts);
  const actionOpts: ActionArbitraryOptions = { ...(opts.pods !== undefined ? { pods: opts.pods } : {}), ...(opts.services !== undefined ? { services: opts.services } : {}), ...(opts.serviceVariants !== undefined ? { serviceVariants: opts.serviceVariants } : {}), ...(opts.agents !== undefined ? { agents: opts.agents } : {}), ...(opts.weights !== undefined ? { weights: opts.weights } : {}) };
  const maxLength = opts.maxActions ?? 12;
  if (shapes.length === 0) {
    const action = actionArbitrary(kinds, nodes, actionOpts);
    return fc.array(fc.record({ atMs: fc.integer({ min: start, max: end }), action }), { maxLength }).map((xs) => [...xs].sort((a, b) => a.atMs - b.atMs));
  }
  // With composite histories, each entry is one or more timed actions; a closing shape ends the
  // history (see CLOSING_SHAPES in generators.ts).
  type Entry = { readonly actions: TimedAction[]; readonly closing: boolean };
  const entries: { arbitrary: fc.Arbitrary<Entry>; weight: number }[] = [];
  if (kinds.length > 0) {
    const action = actionArbitrary(kinds, nodes, actionOpts);
    const weight = kinds.reduce((sum, k) => sum + (opts.weights?.[k] ?? 1), 0);
    entries.push({ arbitrary: fc.record({ atMs: fc.integer({ min: start, max: end }), action }).map((t) => ({ actions: [t], closing: false })), weight });
  }
  for (const shape of shapes) {
    if (!shapeApplies(shape, c)) continue;
    const closing = CLOSING_SHAPES.includes(shape);
    entries.push({ arbitrary: historyShapeArbitrary(shape, c, start, end).map((actions) => ({ actions, closing })), weight: opts.weights?.[shape] ?? 1 });
  }
  if (entries.length === 0) return fc.constant([]);
  return fc.array(fc.oneof(...entries), { maxLength }).map((xs) => closeTimeline(xs, start, end));
}

/**
 * A swarm draw over `features` (those with a generator here): each one on or off, and a weight
 * from 1 to 4, with at least one on. Shrinks towards fewer features on.
 */
export function swarmArbitrary(features: readonly SwarmFeature[]): fc.Arbitrary<SwarmConfig> {
  return fc.tuple(fc.array(fc.boolean(), { minLength: features.length, maxLength: features.length }), fc.array(fc.integer({ min: 1, max: 4 }), { minLength: features.length, maxLength: features.length })).map(([on, weights]) => {
    const enabled: { [feature: string]: number } = {};
    features.forEach((f, i) => {
      if (on[i] === true) enabled[f] = weights[i] ?? 1;
    });
    // Nothing drawn: the first feature alone (Pod creates, in every profile).
    if (Object.keys(enabled).length === 0 && features[0] !== undefined) enabled[features[0]] = 1;
    return { features: enabled };
  });
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
  type Rest = { readonly seed: number; readonly timeline: TimedAction[]; readonly schedule: SimScenario['schedule']; readonly swarm?: SwarmConfig };
  // The rest of a scenario depends on the cluster only through its node names (and on the swarm
  // draw): build that arbitrary once per node list and draw (arbitraries are immutable
  // descriptions), not per generated value.
  const cache = new Map<string, fc.Arbitrary<Rest>>();
  const restFor = (nodes: readonly string[], swarm: SwarmConfig | undefined): fc.Arbitrary<Rest> => {
    const key = `${nodes.join('\u0000')}|${swarm === undefined ? '' : JSON.stringify(swarm.features)}`;
    let arb = cache.get(key);
    if (arb === undefined) {
      const timeline = { ...(opts.timeline ?? {}), ...(swarm !== undefined ? { kinds: Object.keys(swarm.features) as SwarmFeature[], weights: swarm.features } : {}) };
      arb = fc
        .record({
          seed: fc.integer({ min: 0, max: 0x7fffffff }),
          timeline: timelineArbitrary(nodes, horizonMs, settleMs, { ...timeline, ...(opts.pods !== undefined ? { pods: opts.pods } : {}), ...(opts.cluster?.services !== undefined ? { services: opts.cluster.services } : {}) }),
          schedule: opts.schedule === 'path' ? scheduleArbitrary().map((s) => s as SimScenario['schedule']) : fc.constant(undefined),
        })
        .map((r) => (swarm !== undefined ? { ...r, swarm } : r));
      cache.set(key, arb);
    }
    return arb;
  };
  const swarms = new Map<string, fc.Arbitrary<Rest>>();
  const restOf = (nodes: readonly string[]): fc.Arbitrary<Rest> => {
    if (opts.swarm !== true) return restFor(nodes, undefined);
    const key = nodes.join('\u0000');
    let arb = swarms.get(key);
    if (arb === undefined) {
      const c = generatorContext(nodes, { ...(opts.pods !== undefined ? { pods: opts.pods } : {}), ...(opts.cluster?.services !== undefined ? { services: opts.cluster.services } : {}), ...(opts.timeline?.serviceVariants !== undefined ? { serviceVariants: opts.timeline.serviceVariants } : {}) });
      arb = swarmArbitrary(generatableFeatures(c, opts.timeline?.kinds ?? POD_CHURN)).chain((swarm) => restFor(nodes, swarm));
      swarms.set(key, arb);
    }
    return arb;
  };
  return clusterArbitrary(opts.cluster, opts.pods).chain((cluster) => {
    const nodes = cluster.nodes.map((n) => n.name);
    return restOf(nodes)
      .map(({ seed, timeline, schedule, swarm }) => ({
        format: SIM_SCENARIO_FORMAT,
        seed,
        ...(schedule !== undefined ? { schedule } : {}),
        ...(swarm !== undefined ? { swarm } : {}),
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
