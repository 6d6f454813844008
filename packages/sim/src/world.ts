/**
 * The world: nodes with their kernel state (rules), the API server with kubelets and the
 * EndpointSlice controller, a controller agent on every node, faults, probes and invariants, all
 * driven by one {@link Engine}. The simulator instance owns every source of nondeterminism.
 */
import {
  ApiServer,
  EndpointSliceController,
  Kubelet,
  isKubeError,
  type Informer,
  type IpamPolicy,
  type Kind,
  type KubeObject,
  type KubeTraceEvent,
  type KubeTraceSink,
  type KubeTraceType,
  type ObjectOf,
  type Pod,
  type Service,
} from '@netsim/kube';
import { NO_SCOPE, actionScope, applyAction, checkAction, type ActionWorld } from './actions/index.ts';
import { DEFAULT_NAMESPACE, podInput, serviceInput } from './actions/objects.ts';
import { freshRuleset, type Ruleset } from '@netsim/netfilter';
import { Agent, type AgentOptions, type AgentState, type Controller } from './agent.ts';
import { buildControllerContext, createConntrackHandle, type ControllerContext } from './context.ts';
import { Engine, type Bounds, type RunOutcome, type ScheduleOptions, type Task, type Finding } from './engine.ts';
import { DisruptionTracker, EVERY_NODE } from './disruption.ts';
import { SimError } from './errors.ts';
import { SeededIds } from './ids.ts';
import { instantiate, type Invariant, type InvariantSource } from './invariants.ts';
import { isCounting } from './oracles/counting.ts';
import { isProbing, type ProbeWorld } from './oracles/probes.ts';
import { NftExecError, createNftHandle, type NftHandleOptions, type NftStore } from './nft.ts';
import { emptyRuleset as emptyNftRuleset, type Ruleset as NftRuleset } from '@netsim/nftables';
import { IptablesError, createIptablesHandle, noIptablesFaults, type IptablesBackend, type IptablesFaultState, type IptablesHandleOptions, type RulesetStore } from './iptables.ts';
import { BUILTIN_HOSTS, ClusterDatapath, EXTERNAL_IP, EXTERNAL_PORT, type ProbeOutcome } from './datapath.ts';
import { netfilterBackend } from './netfilterBackend.ts';
import type { Action, ClusterSpec, ProbeSpec } from './scenario.ts';
import { TRACE_FORMAT_VERSION, type TraceEvent } from './trace.ts';
import { isPodLive, type AgentView, type IpOwner, type NodeInfo, type ProbeRecord, type WorldView } from './view.ts';

/** Timings of the kubelets (see `@netsim/kube`'s `Kubelet`). */
export interface KubeletTimings {
  readonly sandboxDelayMs?: number;
  readonly readyDelayMs?: number;
  readonly terminationDelayMs?: number;
  readonly removeDelayMs?: number;
  readonly ipamPolicy?: IpamPolicy;
}

export interface WorldOptions {
  readonly seed: number;
  readonly schedule?: ScheduleOptions;
  readonly bounds?: Partial<Bounds>;
  /** Record the trace (default true). */
  readonly trace?: boolean;
  readonly cluster: ClusterSpec;
  /** The controller under test, deployed on every node (but those in {@link controllers}). */
  readonly controller?: Controller<ControllerContext>;
  /** Per-node controllers, by node name, instead of {@link controller} there (different versions or variants on different nodes). */
  readonly controllers?: { readonly [node: string]: Controller<ControllerContext> };
  /**
   * Other controllers, each deployed as its own agent on every node beside the one under test
   * (kube-proxy next to a CNI's masquerade agent): they share the node's rules and API server.
   * Names must differ from the controller under test's and from each other's.
   */
  readonly alongside?: readonly Controller<ControllerContext>[];
  /** Per-node lists instead of {@link alongside} there, by node name (an empty list: none beside the controller). */
  readonly alongsideByNode?: { readonly [node: string]: readonly Controller<ControllerContext>[] };
  readonly invariants?: readonly InvariantSource[];
  readonly probes?: readonly ProbeSpec[];
  /**
   * Build the data plane (`@netsim/kernel` hosts for nodes, Pods, a load balancer and an external
   * host) so probes can run through it. Default: built when there are probes or the cluster
   * describes a network (`cluster.network`, a node's `network` lines).
   */
  readonly datapath?: boolean;
  /** Default settle time of invariants and probes (default 3000 ms). */
  readonly settleMs?: number;
  /** A controller error is a finding that stops the run (default), or crashes the agent, which restarts. */
  readonly controllerErrors?: 'finding' | 'crash';
  /** How `iptables` commands and restores behave on the nodes (default: `@netsim/netfilter`'s). */
  readonly iptablesBackend?: IptablesBackend;
  readonly iptables?: IptablesHandleOptions;
  /** How `nft` commands behave on the nodes (latency, nft release). */
  readonly nft?: NftHandleOptions;
  /** Latency of one API request from a controller (default 1 ms). */
  readonly kubeLatencyMs?: number;
  readonly agent?: AgentOptions;
  readonly kubelet?: KubeletTimings;
}

interface NodeState {
  readonly info: NodeInfo;
  /** The node's rules: the kernel host's when the datapath is built, else a plain cell. */
  rules: RulesetStore;
  /** The node's nft ruleset: the kernel host's when the datapath is built, else a plain cell. */
  nft: NftStore;
  readonly faults: IptablesFaultState;
  readonly informers: Set<Informer<Kind>>;
  /** The node's agents: the controller under test's first, then those running alongside it. */
  readonly agents: Agent<ControllerContext>[];
  /** Reboots so far (each loses the node's kernel state). */
  boots: number;
}

/** How many of the latest injected-failure times the world keeps per node (for the retry-rate oracle). */
const INJECTED_TIMES_KEPT = 64;

/** How long after an injected iptables failure an iptables error escaping a task is blamed on it. */
const INJECTED_FAILURE_WINDOW_MS = 1000;

/** The kube trace events the world acts on (sandboxes for the data plane, relists and backoffs as disruptions). */
const WORLD_KUBE_EVENTS: readonly KubeTraceType[] = ['kube.kubelet', 'kube.ipam', 'kube.reflector.list', 'kube.reflector.backoff'];

/** The node of an informer named `node/controller/kind`, or every node for another name. */
function informerNode(name: unknown): string {
  const s = typeof name === 'string' ? name : '';
  const i = s.indexOf('/');
  return i > 0 ? s.slice(0, i) : EVERY_NODE;
}

/** Where a {@link LiveView} reads the world. */
interface ViewSource extends Omit<WorldView, 'nowMs' | 'lastDisruptionMs' | 'nodes' | 'settleMs' | 'agents' | 'boots' | 'nftRuleset' | 'resyncs' | 'injectedFailuresMs'> {
  nftRuleset(node: string): NftRuleset;
  injectedFailuresMs(node: string): readonly number[];
  agents(node: string): readonly AgentView[];
  resyncs(): readonly { readonly node: string; readonly atMs: number }[];
  boots(node: string): number;
  nowMs(): number;
  lastDisruptionMs(): number;
}

/**
 * The world's read-only view. A class, not an object literal with getters: such a literal gets a
 * hidden class of its own per evaluation, allocated in V8's old generation, and that hidden class
 * holds the getters, so every run's world would stay reachable until the next full collection.
 */
class LiveView implements WorldView {
  readonly nodes: readonly NodeInfo[];
  readonly settleMs: number;
  readonly #src: ViewSource;

  constructor(nodes: readonly NodeInfo[], settleMs: number, src: ViewSource) {
    this.nodes = nodes;
    this.settleMs = settleMs;
    this.#src = src;
  }

  get nowMs(): number {
    return this.#src.nowMs();
  }

  get lastDisruptionMs(): number {
    return this.#src.lastDisruptionMs();
  }

  calmSince(node: string): number {
    return this.#src.calmSince(node);
  }

  ruleset(node: string): Ruleset {
    return this.#src.ruleset(node);
  }

  nftRuleset(node: string): NftRuleset {
    return this.#src.nftRuleset(node);
  }

  pods(): readonly Pod[] {
    return this.#src.pods();
  }

  services(): readonly Service[] {
    return this.#src.services();
  }

  agentState(node: string): AgentState {
    return this.#src.agentState(node);
  }

  probes(): readonly ProbeRecord[] {
    return this.#src.probes();
  }

  ipOwner(ip: string): IpOwner | undefined {
    return this.#src.ipOwner(ip);
  }

  agents(node: string): readonly AgentView[] {
    return this.#src.agents(node);
  }

  boots(node: string): number {
    return this.#src.boots(node);
  }

  resyncs(): readonly { readonly node: string; readonly atMs: number }[] {
    return this.#src.resyncs();
  }

  injectedFailuresMs(node: string): readonly number[] {
    return this.#src.injectedFailuresMs(node);
  }

  recheckAt(atMs: number): void {
    this.#src.recheckAt(atMs);
  }
}

/**
 * A simulated cluster running one controller on every node.
 *
 * @example
 * ```ts
 * const world = new World({ seed: 7, cluster: { nodes: [{ name: 'node-1' }] }, controller: myController, invariants: [noStaleDnat({ chains: ['X'] })] });
 * world.at(1000, { kind: 'pod.create', pod: { name: 'web-0', node: 'node-1', ports: [{ port: 8080, protocol: 'TCP' }] } });
 * const outcome = await world.run(10_000);
 * ```
 */
export class World {
  readonly engine: Engine;
  readonly api: ApiServer;
  readonly view: WorldView;
  readonly settleMs: number;
  readonly #nodes = new Map<string, NodeState>();
  readonly #owners = new Map<string, IpOwner>();
  readonly #probeResults = new Map<string, ProbeRecord>();
  /** The targets each probe reported last round. */
  readonly #probeTargets = new Map<ProbeSpec, ReadonlySet<string>>();
  readonly #kubelets = new Map<string, Kubelet>();
  /** Node names, for action scopes. */
  readonly #nodeSet = new Set<string>();
  /** What actions see of the world (built once). */
  readonly #actionWorld: ActionWorld;
  /** The rules every node boots with (what a reboot goes back to). */
  readonly #bootRuleset: Ruleset;
  readonly #invariants: Invariant[] = [];
  /** Who was disturbed when: what settle-based invariants forgive (see {@link DisruptionTracker}). */
  readonly disruptions = new DisruptionTracker();
  /** Per node: the times (distinct, latest last) at which commands met an injected failure. */
  readonly #injectedTimes = new Map<string, number[]>();
  /** Every `informer.resync` so far, per node, in order. */
  readonly #resyncs: { readonly node: string; readonly atMs: number }[] = [];
  /** Per node: the last injected iptables failure a command met, the streak it belongs to, and when its forgiveness ends. */
  readonly #injected = new Map<string, { readonly atMs: number; readonly streak: number; readonly untilMs: number }>();
  /** Agents whose process an injected fault ended: their next start is a disruption (a start after their own failure is not). */
  readonly #injectedDown = new Map<Agent<ControllerContext>, number>();
  /** When each agent's process failed on its own (controller errors under the crash policy). */
  readonly #ownFailures = new Map<Agent<ControllerContext>, number[]>();
  /** Why, in the same order. */
  readonly #ownFailureReasons = new Map<Agent<ControllerContext>, string[]>();
  #datapath: ClusterDatapath | undefined;
  #started = false;

  constructor(opts: WorldOptions) {
    const controllerErrors = opts.controllerErrors ?? 'finding';
    const engine = new Engine({
      seed: opts.seed,
      ...(opts.schedule ?? {}),
      ...(opts.bounds !== undefined ? { bounds: opts.bounds } : {}),
      trace: opts.trace ?? true,
      onTaskError: (task: Task, finding: Finding, error: unknown) => {
        const agent = this.#agentOfOwner(task.owner);
        // An iptables command that failed because the world injected a failure (shortly before, on
        // the agent's node) ends the process, as a Go agent exits on an error it cannot handle and
        // its kubelet restarts it: the environment's doing, not a finding. Whether the agent
        // recovers is for the invariants to judge.
        const injected = agent !== undefined && (error instanceof IptablesError || error instanceof NftExecError) && this.#injectedRecently(agent.node);
        if (controllerErrors === 'finding' && !injected) return 'stop';
        if (agent === undefined) return 'stop';
        if (injected) {
          agent.fail(`${finding.kind}: ${finding.message}`);
          return 'continue';
        }
        const failures = this.#ownFailures.get(agent) ?? [];
        failures.push(engine.now());
        this.#ownFailures.set(agent, failures);
        const reasons = this.#ownFailureReasons.get(agent) ?? [];
        reasons.push(`${finding.kind}: ${finding.message}`);
        this.#ownFailureReasons.set(agent, reasons);
        agent.fail(`${finding.kind}: ${finding.message}`);
        return 'continue';
      },
    });
    this.engine = engine;
    engine.emit('sim.start', { format: TRACE_FORMAT_VERSION, seed: opts.seed, nodes: opts.cluster.nodes.map((n) => n.name), controller: opts.controller?.name ?? null, ...(opts.alongside !== undefined && opts.alongside.length > 0 ? { alongside: opts.alongside.map((c) => c.name) } : {}) });
    this.settleMs = opts.settleMs ?? 3000;
    if (!Number.isSafeInteger(this.settleMs) || this.settleMs < 0) throw new SimError('invalid-argument', `settleMs must be a non-negative integer, got ${String(this.settleMs)}`);
    const ids = new SeededIds(engine.streams.ids);
    const onKubeEvent = (e: KubeTraceEvent): void => {
      // Pod sandboxes come and go with the kubelet: so do their network namespaces.
      if (this.#datapath !== undefined) this.#followSandboxes(e);
      // A relist is when a controller that was blind (a watch gap, a reset) learns the truth: the
      // settle time of eventual invariants counts from there.
      // Informers are named `node/controller/kind`: the relist disturbs that node only.
      if (e.type === 'kube.reflector.list' && Number(e.fields['list']) > 1) this.#disrupted(informerNode(e.fields['informer']), 'relist');
      // A broken watch waiting out its backoff leaves the controller blind until the relist.
      if (e.type === 'kube.reflector.backoff') this.#disruptedUntil(informerNode(e.fields['informer']), e.at + Number(e.fields['delayMs']), 'watch backoff');
      engine.trace.record(engine.step, e.at, e.type, e.fields);
    };
    // With the trace off the world needs only the events it acts on: kube skips building the rest.
    const kubeTrace: KubeTraceSink = engine.trace.enabled ? onKubeEvent : Object.assign(onKubeEvent, { only: new Set(WORLD_KUBE_EVENTS) });
    this.api = new ApiServer({
      runtime: { scheduler: engine, random: engine.streams.kube, ids: { next() { return ids.next('uid'); } } },
      trace: kubeTrace,
      ...(opts.cluster.nodeCidrMaskSize !== undefined ? { nodeCIDRMaskSize: opts.cluster.nodeCidrMaskSize } : {}),
    });
    const api = this.api;

    // Who had each Pod IP, for messages about stale rules; and the view's lists go stale.
    api.onChange((c) => {
      this.#listCache.delete(c.kind);
      if (c.kind !== 'Pod') return;
      const p = c.object as Pod;
      const ip = p.status.podIP;
      // A completed Pod's status keeps its IP after the CNI released it: it holds it no more.
      if (ip !== undefined && ip !== '' && p.status.phase !== 'Succeeded' && p.status.phase !== 'Failed') {
        const before = this.#owners.get(ip);
        if (before?.uid !== p.metadata.uid) this.#owners.set(ip, { pod: `${p.metadata.namespace}/${p.metadata.name}`, uid: p.metadata.uid, node: p.spec.nodeName ?? '', sinceMs: engine.now() });
      }
    });

    const backend = opts.iptablesBackend ?? netfilterBackend();
    const initial = backend.initialRuleset?.() ?? freshRuleset();
    this.#bootRuleset = initial;
    opts.cluster.nodes.forEach((n, i) => {
      if (this.#nodes.has(n.name)) throw new SimError('duplicate-name', `cluster.nodes: node "${n.name}" is listed twice`);
      if (i > 240) throw new SimError('invalid-argument', 'cluster.nodes: at most 241 nodes (node addresses come from 192.0.2.0/24)');
      const ip = `192.0.2.${11 + i}`;
      const node = api.create('Node', { metadata: { name: n.name }, status: { addresses: [{ type: 'InternalIP', address: ip }] } });
      const podCidr = node.spec.podCIDR ?? '';
      let cell = initial;
      let nftCell = emptyNftRuleset();
      this.#nodes.set(n.name, { info: { name: n.name, ip, podCidr }, rules: { get() { return cell; }, set(r) { cell = r; } }, nft: { get() { return nftCell; }, set(r) { nftCell = r; } }, faults: noIptablesFaults(), informers: new Set(), agents: [], boots: 0 });
      const ipamPolicy = opts.kubelet?.ipamPolicy ?? opts.cluster.ipamPolicy;
      const kubelet = new Kubelet(api, { nodeName: n.name, ...(opts.kubelet ?? {}), ...(ipamPolicy !== undefined ? { ipamPolicy } : {}), trace: kubeTrace });
      kubelet.start();
      this.#kubelets.set(n.name, kubelet);
      this.#nodeSet.add(n.name);
    });
    const describesNetwork = opts.cluster.network !== undefined || opts.cluster.nodes.some((n) => n.network !== undefined);
    if (opts.datapath === false && describesNetwork) throw new SimError('invalid-argument', 'the cluster describes a network: do not set datapath: false together with cluster.network or a node\'s network lines');
    // Invariants that send packets (the built-in datapath probes) get the data plane they need.
    const invariants = (opts.invariants ?? []).map(instantiate);
    if (opts.datapath ?? ((opts.probes ?? []).length > 0 || describesNetwork || invariants.some(isProbing))) {
      for (const n of opts.cluster.nodes) if (BUILTIN_HOSTS.includes(n.name)) throw new SimError('invalid-argument', `cluster.nodes: a node cannot be named "${n.name}" (a host of the data plane: ${BUILTIN_HOSTS.join(', ')})`);
      const dp = new ClusterDatapath({
        rng: engine.streams.kernel,
        nodes: opts.cluster.nodes.map((n) => ({ info: this.#node(n.name).info, ...(n.network !== undefined ? { network: n.network } : {}) })),
        initialRuleset: initial,
        packetTrace: engine.trace.enabled ? 'full' : 'lean',
        ...(opts.cluster.network !== undefined ? { network: opts.cluster.network } : {}),
      });
      this.#datapath = dp;
      for (const st of this.#nodes.values()) {
        const h = dp.host(st.info.name);
        st.rules = { get() { return h.ruleset; }, set(r) { h.setRuleset(r); } };
        st.nft = { get() { return h.nft; }, set(r) { h.setNft(r); }, listing() { return h.nftListing; } };
      }
    }
    new EndpointSliceController(api).start();
    for (const s of opts.cluster.services ?? []) api.create('Service', serviceInput(s));
    for (const p of opts.cluster.pods ?? []) {
      if (!this.#nodes.has(p.node)) throw new SimError('unknown-name', `cluster.pods: Pod ${p.name} is on unknown node "${p.node}"`);
      api.create('Pod', podInput(p));
    }

    for (const node of Object.keys(opts.controllers ?? {})) if (!this.#nodes.has(node)) throw new SimError('unknown-name', `controllers: no node "${node}" in the cluster`);
    for (const node of Object.keys(opts.alongsideByNode ?? {})) if (!this.#nodes.has(node)) throw new SimError('unknown-name', `alongsideByNode: no node "${node}" in the cluster`);
    // One agent: a controller deployed on a node, with its own iptables handle and context.
    const agentOn = (st: NodeState, controller: Controller<ControllerContext>): Agent<ControllerContext> => {
      const node = st.info.name;
      return new Agent<ControllerContext>(
        engine,
        node,
        controller,
        (base, proc) => {
          // The first start, and a start after an injected crash or restart, is a disruption: the
          // new process starts blind and needs the settle time. A restart after the process's own
          // failure is not: a crash-looping controller is blamed for what it leaves behind.
          const agentNow = st.agents.find((a) => a.name === base.agent);
          const window = agentNow === undefined ? undefined : this.#injectedDown.get(agentNow);
          if (agentNow !== undefined && window !== undefined) {
            this.#injectedDown.delete(agentNow);
            this.disruptions.endEarly(window, engine.now());
          }
          if (base.incarnation === 1 || window !== undefined) this.#disrupted(node, `start ${base.agent}`);
          const iptables = createIptablesHandle({
            engine,
            node,
            agent: base.agent,
            backend,
            store: { get() { return st.rules.get(); }, set(r) { st.rules.set(r); } },
            faults: st.faults,
            ...(opts.iptables !== undefined ? { options: opts.iptables } : {}),
          });
          const nft = createNftHandle({ engine, node, agent: base.agent, store: st.nft, faults: st.faults, ...(opts.nft !== undefined ? { options: opts.nft } : {}) });
          const conntrack = createConntrackHandle({ engine, node, agent: base.agent, table: () => this.#datapath?.host(node).conntrack });
          return buildControllerContext(base, proc, {
            engine,
            api,
            nodeInfo: st.info,
            iptables,
            nft,
            conntrack,
            queueMode: opts.cluster.queueMode ?? 'DeltaFIFO',
            random: engine.streams.kube,
            kubeLatencyMs: opts.kubeLatencyMs ?? 1,
            kubeTrace,
            onInformer(inf) {
              st.informers.add(inf);
              proc.onExit(() => st.informers.delete(inf));
            },
          });
        },
        opts.agent ?? {},
      );
    };
    {
      for (const st of this.#nodes.values()) {
        const node = st.info.name;
        const main = opts.controllers?.[node] ?? opts.controller;
        const controllers = [...(main !== undefined ? [main] : []), ...(opts.alongsideByNode?.[node] ?? opts.alongside ?? [])];
        for (const controller of controllers) {
          if (controllers.filter((c) => c.name === controller.name).length > 1) {
            throw new SimError('invalid-argument', `node ${node}: two agents would be named "${node}/${controller.name}": controllers running alongside each other need different names`);
          }
        }
        for (const controller of controllers) st.agents.push(agentOn(st, controller));
      }
    }

    this.#actionWorld = World.#actionWorldOf(this);
    const nodes = [...this.#nodes.values()].map((s) => s.info);
    const owners = this.#owners;
    const probeResults = this.#probeResults;
    this.view = new LiveView(nodes, this.settleMs, World.#viewSource(this, owners, probeResults));
    const disruptions = this.disruptions;
    engine.onAfterStep(() => {
      this.#followInjectedFailures();
      disruptions.advance(engine.now());
    });
    for (const inv of invariants) {
      this.#invariants.push(inv);
      engine.addInvariant(inv.name, () => inv.check(this.view));
      if (isProbing(inv) && this.#datapath !== undefined) inv.attach(this.#probeWorld(this.#datapath));
    }
    const probes = opts.probes ?? [];
    if (probes.length > 0 && this.#datapath === undefined) {
      throw new SimError('invalid-argument', 'probes run through the data plane: do not set datapath: false together with probes');
    }
    for (const spec of probes) this.#scheduleProbe(spec);
  }

  /**
   * The view's source: methods (not named arrows, which some TypeScript runners rename with a
   * defineProperty each, on every world built); `w` is the world it reads.
   */
  static #viewSource(w: World, owners: ReadonlyMap<string, IpOwner>, probeResults: ReadonlyMap<string, ProbeRecord>): ViewSource {
    const engine = w.engine;
    return {
      nowMs() {
        return engine.now();
      },
      lastDisruptionMs() {
        return w.disruptions.calmSinceAnywhere(engine.now());
      },
      calmSince(node) {
        return w.disruptions.calmSince(node, engine.now());
      },
      ruleset(node) {
        return w.#node(node).rules.get();
      },
      nftRuleset(node) {
        return w.#node(node).nft.get();
      },
      pods() {
        return w.#listCached('Pod');
      },
      services() {
        return w.#listCached('Service');
      },
      agentState(node) {
        return w.#node(node).agents[0]?.state ?? 'down';
      },
      agents(node) {
        return w.#node(node).agents.map((a) => ({ name: a.name, node: a.node, state: a.state, incarnation: a.incarnation, ...(a.controller.declares !== undefined ? { declares: a.controller.declares } : {}), ownFailuresMs: w.#ownFailures.get(a) ?? [], ownFailureReasons: w.#ownFailureReasons.get(a) ?? [] }));
      },
      boots(node) {
        return w.#node(node).boots;
      },
      resyncs() {
        return w.#resyncs;
      },
      injectedFailuresMs(node) {
        return w.#injectedTimes.get(node) ?? [];
      },
      probes() {
        return [...probeResults.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      },
      ipOwner(ip) {
        return owners.get(ip);
      },
      recheckAt(atMs) {
        engine.recheckAt(atMs);
      },
    };
  }

  /** What actions see of the world: methods of one object (see {@link World.#viewSource} for why not arrows). */
  static #actionWorldOf(w: World): ActionWorld {
    const engine = w.engine;
    return {
      engine,
      api: w.api,
      get datapath() {
        return w.#datapath;
      },
      nodeNames: [...w.#nodes.keys()],
      emit(type, fields) {
        engine.emit(type, fields);
      },
      tolerate(what, fn) {
        try {
          fn();
        } catch (e) {
          if (!isKubeError(e)) throw e;
          engine.emit('world.action-skipped', { action: what, reason: e.message });
        }
      },
      disrupted(scope, cause) {
        w.#disrupted(scope, cause);
      },
      disruptedUntil(scope, untilMs, cause) {
        return w.#disruptedUntil(scope, untilMs, cause);
      },
      faults(node) {
        return w.#node(node).faults;
      },
      informers(node) {
        return w.#informers(node);
      },
      agent(node, name) {
        return w.agent(node, name);
      },
      agents(node) {
        return w.#node(node).agents;
      },
      injectedDown(agent, window) {
        w.#injectedDown.set(agent, window);
      },
      maxBackoffOn(node) {
        return w.#maxBackoffOn(node);
      },
      kubelet(node) {
        const k = w.#kubelets.get(node);
        if (k === undefined) throw new SimError('unknown-name', `unknown node "${node}"`);
        return k;
      },
      resynced(node) {
        w.#resyncs.push({ node, atMs: engine.now() });
      },
      resetKernel(node) {
        const st = w.#node(node);
        st.rules.set(w.#bootRuleset);
        st.nft.set(emptyNftRuleset());
        w.#datapath?.host(node).conntrack.flush();
        st.boots++;
      },
    };
  }

  /**
   * What each invariant that counts examined so far in this run (rules, chains, mappings,
   * agents), by name; invariants that do not count are absent.
   */
  coverage(): { readonly [invariant: string]: number } {
    const out: { [invariant: string]: number } = {};
    for (const inv of this.#invariants) if (isCounting(inv)) out[inv.name] = inv.examined();
    return out;
  }

  /** What a probing invariant reads and drives: the data plane, the objects, a periodic step. */
  #probeWorld(datapath: ClusterDatapath): ProbeWorld {
    return World.#probeWorldOf(this, datapath);
  }

  static #probeWorldOf(w: World, datapath: ClusterDatapath): ProbeWorld {
    const engine = w.engine;
    return {
      datapath,
      nodes: [...w.#nodes.values()].map((s) => s.info),
      nowMs() {
        return engine.now();
      },
      every(periodMs, label, fn) {
        const tick = (): void => {
          fn();
          engine.after(periodMs, { kind: 'probe', label }, tick);
        };
        engine.after(periodMs, { kind: 'probe', label }, tick);
      },
      pods() {
        return w.#listCached('Pod');
      },
      services() {
        return w.#listCached('Service');
      },
      endpointSlices() {
        return w.api.list('EndpointSlice').items;
      },
      agents(node) {
        return w.view.agents?.(node) ?? [];
      },
      emit(type, fields) {
        engine.emit(type, fields);
      },
    };
  }

  /** The data plane, when built. */
  get datapath(): ClusterDatapath | undefined {
    return this.#datapath;
  }

  #scheduleProbe(spec: ProbeSpec): void {
    if (!Number.isSafeInteger(spec.everyMs) || spec.everyMs < 1) throw new SimError('invalid-argument', `probe ${spec.kind}: everyMs must be a positive integer, got ${String(spec.everyMs)}`);
    const tick = (): void => {
      this.#runProbe(spec);
      this.engine.after(spec.everyMs, { kind: 'probe', label: `probe ${spec.kind}` }, tick);
    };
    this.engine.after(spec.everyMs, { kind: 'probe', label: `probe ${spec.kind}` }, tick);
  }

  #runProbe(spec: ProbeSpec): void {
    const dp = this.#datapath;
    if (dp === undefined) return;
    const now = this.engine.now();
    const results: { readonly id: string; readonly o: ProbeOutcome; readonly node?: string }[] = [];
    const pods = this.api.list('Pod').items.filter(isPodLive);
    switch (spec.kind) {
      case 'npl-health': {
        const annotation = spec.annotation ?? 'nodeportlocal.antrea.io';
        for (const p of pods) {
          const text = p.metadata.annotations[annotation];
          if (text === undefined) continue;
          let entries: unknown;
          try {
            entries = JSON.parse(text);
          } catch {
            continue;
          }
          if (!Array.isArray(entries)) continue;
          const expected = dp.podHost(p.metadata.uid);
          for (const e of entries as { nodeIP?: unknown; nodePort?: unknown; podPort?: unknown; protocol?: unknown }[]) {
            if (typeof e.nodeIP !== 'string' || typeof e.nodePort !== 'number' || (typeof e.protocol === 'string' && e.protocol.toLowerCase() !== 'tcp')) continue;
            const o = dp.connect('lb', e.nodeIP, e.nodePort, now);
            const id = `npl-health ${p.metadata.namespace}/${p.metadata.name}:${String(e.podPort)} via ${e.nodeIP}:${e.nodePort}`;
            results.push({ id, ...(p.spec.nodeName !== undefined ? { node: p.spec.nodeName } : {}), o: o.ok && o.server !== expected ? { ok: false, outcome: 'wrong-backend', detail: `${o.detail}, expected ${expected ?? 'the Pod'}`, server: o.server } : o });
          }
        }
        break;
      }
      case 'nodeport-health': {
        const svc = this.api.find('Service', spec.namespace ?? DEFAULT_NAMESPACE, spec.service);
        if (svc === undefined) break;
        for (const port of svc.spec.ports) {
          // A health check is a TCP connect: UDP ports are the built-in datapath probes' to check.
          if (port.nodePort === undefined || port.protocol !== 'TCP') continue;
          for (const st of this.#nodes.values()) {
            results.push({ id: `nodeport-health ${svc.metadata.namespace}/${svc.metadata.name} via ${st.info.ip}:${port.nodePort}`, o: dp.connect('lb', st.info.ip, port.nodePort, now) });
          }
        }
        break;
      }
      case 'pod-egress':
        for (const p of pods) {
          const from = dp.podHost(p.metadata.uid);
          if (from === undefined) continue;
          results.push({ id: `pod-egress ${p.metadata.namespace}/${p.metadata.name} → ${EXTERNAL_IP}:${EXTERNAL_PORT}`, ...(p.spec.nodeName !== undefined ? { node: p.spec.nodeName } : {}), o: dp.connect(from, EXTERNAL_IP, EXTERNAL_PORT, now) });
        }
        break;
      case 'connect': {
        const src = spec.from;
        let from: string | undefined;
        let label: string;
        if ('host' in src) {
          from = src.host;
          label = src.host;
        } else {
          const ns = src.namespace ?? DEFAULT_NAMESPACE;
          label = `${ns}/${src.pod}`;
          // A Pod that is not running has no namespace to connect from: no result this round.
          const p = pods.find((x) => x.metadata.namespace === ns && x.metadata.name === src.pod);
          from = p === undefined ? undefined : dp.podHost(p.metadata.uid);
        }
        if (from !== undefined) results.push({ id: `connect ${label} → ${spec.to}:${spec.port}`, o: dp.connect(from, spec.to, spec.port, now) });
        break;
      }
    }
    // Targets this probe had last round and not now (a Pod gone, a mapping removed) have no result
    // any more; other probes' targets, even of the same kind, are theirs to keep.
    const current = new Set(results.map((r) => r.id));
    for (const id of this.#probeTargets.get(spec) ?? []) if (!current.has(id)) this.#probeResults.delete(id);
    this.#probeTargets.set(spec, current);
    for (const { id, o, node } of results) {
      const before = this.#probeResults.get(id);
      this.#probeResults.set(id, { id, kind: spec.kind, ok: o.ok, outcome: o.outcome, detail: o.detail, atMs: now, ...(node !== undefined ? { node } : {}) });
      // A change is news; so is a `connect` probe's first answer, good or bad: it is one chosen
      // path, and a scenario may want to show that it works.
      if (before === undefined ? !o.ok || spec.kind === 'connect' : before.ok !== o.ok) this.engine.emit('probe.result', { probe: id, ok: o.ok, outcome: o.outcome, detail: o.detail, ...(before === undefined ? { first: true } : {}), ...(o.hops !== undefined ? { hops: o.hops } : {}) });
    }
  }

  /** Node names, in cluster order. */
  get nodeNames(): readonly string[] {
    return [...this.#nodes.keys()];
  }

  /**
   * The agent on `node`: the controller under test's, or with `controller`, the one of that
   * controller's name (`node-1/kube-proxy` is `agent('node-1', 'kube-proxy')`).
   */
  agent(node: string, controller?: string): Agent<ControllerContext> {
    const agents = this.#node(node).agents;
    const a = controller === undefined ? agents[0] : agents.find((x) => x.name === `${node}/${controller}`);
    if (a !== undefined) return a;
    if (agents.length === 0) throw new SimError('unknown-name', `no controller runs on node "${node}" (the world was built without a controller)`);
    throw new SimError('unknown-name', `no agent "${node}/${String(controller)}" (agents on ${node}: ${agents.map((x) => x.name).join(', ')})`);
  }

  /** Every agent on `node`, the controller under test's first. */
  agents(node: string): readonly Agent<ControllerContext>[] {
    return this.#node(node).agents;
  }

  /** The node's current rules. */
  ruleset(node: string): Ruleset {
    return this.#node(node).rules.get();
  }

  /** The node's current nftables ruleset (its kernel state, without counters). */
  nftRuleset(node: string): NftRuleset {
    return this.#node(node).nft.get();
  }

  /** The node's info (IP, Pod CIDR). */
  node(node: string): NodeInfo {
    return this.#node(node).info;
  }

  /** Every trace event so far. */
  get events(): readonly TraceEvent[] {
    return this.engine.events;
  }

  /**
   * Schedule an action at absolute time `atMs` (its own step). The action is checked now, as data
   * (a known kind, its fields present and typed, known nodes): a mistake is a `SimError` naming
   * the field, not a crash inside the run.
   */
  at(atMs: number, action: Action): void {
    if (typeof atMs !== 'number' || !Number.isSafeInteger(atMs) || atMs < 0) throw new SimError('invalid-argument', `World.at: the time must be an integer of milliseconds >= 0, got ${JSON.stringify(atMs) ?? String(atMs)}`);
    checkAction(action, { prefix: `World.at(${atMs}): `, path: 'action', nodes: new Set(this.#nodes.keys()), ...(this.#datapath !== undefined ? { hosts: new Set(this.#datapath.hostNames()) } : {}) });
    this.engine.at(atMs, { kind: 'action', label: action.kind }, () => this.act(action));
  }

  /** Apply an action now (inside a step); unlike {@link at}, it is not checked first. */
  act(action: Action): void {
    const scope = actionScope(action, this.#nodeSet);
    if (scope !== NO_SCOPE) this.#disrupted(scope, action.kind);
    applyAction(action, this.#actionWorld);
  }

  /** Start every agent at the current time, each in its own step. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    for (const st of this.#nodes.values()) {
      for (const agent of st.agents) {
        this.engine.after(0, { kind: 'lifecycle', label: `start ${agent.name}` }, () => {
          agent.start();
        });
      }
    }
  }

  /** Start the agents (if not yet) and run until `untilMs`. */
  async run(untilMs: number): Promise<RunOutcome> {
    this.start();
    return this.engine.run({ untilMs });
  }

  /** The view's lists, per kind, dropped by the API server's next write of that kind. */
  readonly #listCache = new Map<Kind, readonly KubeObject[]>();

  /** The API server's objects of a kind, the same array while none of them was written (checkers compare identities). */
  #listCached<K extends 'Pod' | 'Service'>(kind: K): readonly ObjectOf<K>[] {
    const c = this.#listCache.get(kind);
    if (c !== undefined) return c as readonly ObjectOf<K>[];
    const items = this.api.list(kind).items;
    this.#listCache.set(kind, items);
    return items;
  }

  #followSandboxes(e: KubeTraceEvent): void {
    const dp = this.#datapath;
    if (dp === undefined) return;
    const f = e.fields;
    if (e.type === 'kube.kubelet' && (f['transition'] === 'running' || f['transition'] === 'running+ready') && typeof f['ip'] === 'string') {
      const [ns, name] = String(f['pod']).split('/') as [string, string];
      const pod = this.api.find('Pod', ns, name);
      if (pod === undefined || pod.metadata.uid !== f['uid'] || pod.spec.hostNetwork) return;
      const tcpPorts = pod.spec.containers.flatMap((c) => c.ports.filter((p) => p.protocol === 'TCP').map((p) => p.containerPort));
      const udpPorts = pod.spec.containers.flatMap((c) => c.ports.filter((p) => p.protocol === 'UDP').map((p) => p.containerPort));
      dp.podUp({ node: String(f['node']), pod: String(f['pod']), uid: String(f['uid']), ip: f['ip'], tcpPorts, udpPorts });
    } else if (e.type === 'kube.ipam' && f['result'] === 'released') {
      dp.podDown(String(f['uid']));
    }
  }

  /** A disruption of `scope` happens now. */
  #disrupted(scope: string, cause: string): void {
    this.disruptions.mark(scope, this.engine.now(), cause);
  }

  /** A disruption of `scope` from now until `untilMs`. */
  #disruptedUntil(scope: string, untilMs: number, cause: string): number {
    const now = this.engine.now();
    return this.disruptions.add({ scope, fromMs: now, untilMs: Math.max(now, untilMs), cause });
  }

  /**
   * An injected iptables or nft failure that a command met disturbs its node for as long as the
   * node's agents declare they wait before retrying: the first retry delay, doubled for every
   * further failure met while one is being waited out (an exponential backoff), up to
   * the longest. A controller that retries as it declares is not blamed for the time between; one
   * that never retries, or waits longer, is.
   */
  #followInjectedFailures(): void {
    for (const st of this.#nodes.values()) {
      const at = st.faults.lastInjectedMs;
      const name = st.info.name;
      const seen = this.#injected.get(name);
      if (at < 0 || seen?.atMs === at) continue;
      // Every failure met while the previous one is still being waited out (or by its retry,
      // within twice its delay) may be the same work item failing again: the controller may then
      // wait twice as long. Work items are not told apart, so this errs towards forgiving.
      const { firstMs, maxMs } = this.#backoffOn(name);
      const delay = (streak: number): number => Math.min(maxMs, firstMs * 2 ** Math.min(streak - 1, 30));
      const continues = seen !== undefined && at <= seen.untilMs + delay(seen.streak);
      const streak = continues ? seen.streak + 1 : 1;
      const delayMs = delay(streak);
      const untilMs = Math.max(at + delayMs, continues ? seen.untilMs : 0);
      this.#injected.set(name, { atMs: at, streak, untilMs });
      this.disruptions.add({ scope: name, fromMs: at, untilMs, cause: `injected iptables failure (retry within ${delayMs}ms)` });
      const times = this.#injectedTimes.get(name) ?? [];
      times.push(at);
      // Bounded: the retry-rate oracle looks at the latest few only.
      if (times.length > INJECTED_TIMES_KEPT) times.splice(0, times.length - INJECTED_TIMES_KEPT);
      this.#injectedTimes.set(name, times);
    }
  }

  /** Whether an iptables failure was injected on `node` within the last second. */
  #injectedRecently(node: string): boolean {
    const last = this.#nodes.get(node)?.faults.lastInjectedMs ?? -1;
    return last >= 0 && this.engine.now() - last <= INJECTED_FAILURE_WINDOW_MS;
  }

  /** The longest retry backoff the agents on `node` declare (0 when none does). */
  #maxBackoffOn(node: string): number {
    return this.#backoffOn(node).maxMs;
  }

  /** The first and the longest retry delay the agents on `node` declare (the largest of each; 0 when none does). */
  #backoffOn(node: string): { readonly firstMs: number; readonly maxMs: number } {
    let firstMs = 0;
    let maxMs = 0;
    for (const a of this.#node(node).agents) {
      const d = a.controller.declares;
      maxMs = Math.max(maxMs, d?.maxBackoffMs ?? 0);
      firstMs = Math.max(firstMs, d?.firstBackoffMs ?? d?.maxBackoffMs ?? 0);
    }
    return { firstMs, maxMs: Math.max(maxMs, firstMs) };
  }

  #node(name: string): NodeState {
    const n = this.#nodes.get(name);
    if (n === undefined) throw new SimError('unknown-name', `unknown node "${name}" (nodes: ${[...this.#nodes.keys()].join(', ')})`);
    return n;
  }

  #informers(node: string | undefined): Informer<Kind>[] {
    const out: Informer<Kind>[] = [];
    for (const st of this.#nodes.values()) if (node === undefined || st.info.name === node) out.push(...st.informers);
    return out;
  }

  #agentOfOwner(owner: string): Agent<ControllerContext> | undefined {
    for (const st of this.#nodes.values()) for (const a of st.agents) if (a.owner === owner) return a;
    return undefined;
  }

  /** Live Pods on a node (Running, with an IP, not terminating). */
  livePods(node: string): Pod[] {
    return this.api.list('Pod', { nodeName: node }).items.filter(isPodLive);
  }
}
