/**
 * The world: nodes with their kernel state (rules), the API server with kubelets and the
 * EndpointSlice controller, a controller agent on every node, faults, probes and invariants, all
 * driven by one {@link Engine}. The simulator instance owns every source of nondeterminism.
 */
import {
  ApiServer,
  EndpointSliceController,
  Kubelet,
  alreadyExistsMessage,
  isKubeError,
  notFoundMessage,
  type Informer,
  type IpamPolicy,
  type Kind,
  type KubeObject,
  type KubeTraceEvent,
  type KubeTraceSink,
  type KubeTraceType,
  type ObjectOf,
  type Pod,
  type PodInput,
  type Service,
  type ServiceInput,
} from '@netsim/kube';
import { freshRuleset, type Ruleset } from '@netsim/netfilter';
import { Agent, type AgentOptions, type AgentState, type Controller } from './agent.ts';
import { buildControllerContext, createConntrackHandle, type ControllerContext } from './context.ts';
import { Engine, type Bounds, type RunOutcome, type ScheduleOptions, type Task, type Finding } from './engine.ts';
import { DisruptionTracker, EVERY_NODE } from './disruption.ts';
import { SimError } from './errors.ts';
import { SeededIds } from './ids.ts';
import { instantiate, type Invariant, type InvariantSource } from './invariants.ts';
import { isCounting } from './oracles/counting.ts';
import { createNftHandle, type NftHandleOptions, type NftStore } from './nft.ts';
import { emptyRuleset as emptyNftRuleset } from '@netsim/nftables';
import { createIptablesHandle, noIptablesFaults, type IptablesBackend, type IptablesFaultState, type IptablesHandleOptions, type RulesetStore } from './iptables.ts';
import { BUILTIN_HOSTS, ClusterDatapath, EXTERNAL_IP, EXTERNAL_PORT, type ProbeOutcome } from './datapath.ts';
import type { JsonObject } from './json.ts';
import { netfilterBackend } from './netfilterBackend.ts';
import { isHostAction, type Action, type ClusterSpec, type HostAction, type PodSpec, type ProbeSpec, type ServiceSpec } from './scenario.ts';
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

const DEFAULT_NAMESPACE = 'default';

function namespaceOr(n: string | undefined): string {
  return n ?? DEFAULT_NAMESPACE;
}

/** The kube trace events the world acts on (sandboxes for the data plane, relists and backoffs as disruptions). */
const WORLD_KUBE_EVENTS: readonly KubeTraceType[] = ['kube.kubelet', 'kube.ipam', 'kube.reflector.list', 'kube.reflector.backoff'];

/** The node of an informer named `node/controller/kind`, or every node for another name. */
function informerNode(name: unknown): string {
  const s = typeof name === 'string' ? name : '';
  const i = s.indexOf('/');
  return i > 0 ? s.slice(0, i) : EVERY_NODE;
}

function podInput(p: PodSpec): PodInput {
  return {
    metadata: { name: p.name, namespace: p.namespace ?? DEFAULT_NAMESPACE, labels: { ...(p.labels ?? {}) } },
    spec: {
      nodeName: p.node,
      containers: [{ name: 'main', ports: p.ports.map((x) => ({ containerPort: x.port, protocol: x.protocol, ...(x.name !== undefined ? { name: x.name } : {}) })) }],
      terminationGracePeriodSeconds: p.terminationGracePeriodSeconds ?? 0,
    },
  };
}

function serviceInput(s: ServiceSpec): ServiceInput {
  return {
    metadata: { name: s.name, namespace: s.namespace ?? DEFAULT_NAMESPACE, annotations: { ...(s.annotations ?? {}) } },
    spec: {
      type: s.type ?? 'ClusterIP',
      selector: { ...s.selector },
      ports: s.ports.map((p) => ({ port: p.port, targetPort: p.targetPort, protocol: p.protocol, ...(p.name !== undefined ? { name: p.name } : {}), ...(p.nodePort !== undefined ? { nodePort: p.nodePort } : {}) })),
      ...(s.externalTrafficPolicy !== undefined ? { externalTrafficPolicy: s.externalTrafficPolicy } : {}),
      ...(s.sessionAffinity !== undefined ? { sessionAffinity: s.sessionAffinity } : {}),
      ...(s.sessionAffinityTimeoutSeconds !== undefined ? { sessionAffinityConfig: { clientIP: { timeoutSeconds: s.sessionAffinityTimeoutSeconds } } } : {}),
    },
  };
}

/** The host-file line a network action runs. */
export function hostCommandOf(a: HostAction): string {
  switch (a.kind) {
    case 'sysctl.set':
      return `sysctl -w ${a.key}=${a.value}`;
    case 'link.set':
      return `ip link set ${a.iface} ${a.state}`;
    case 'addr.add':
      return `ip addr add ${a.address} dev ${a.iface}`;
    case 'addr.del':
      return `ip addr del ${a.address} dev ${a.iface}`;
    case 'route.add':
      return `ip route add ${a.route}`;
    case 'route.del':
      return `ip route del ${a.route}`;
    case 'host.run':
      return a.command;
  }
}

function specOfPod(p: Pod): PodSpec {
  return {
    namespace: p.metadata.namespace,
    name: p.metadata.name,
    node: p.spec.nodeName ?? '',
    labels: p.metadata.labels,
    ports: p.spec.containers.flatMap((c) => c.ports.map((x) => ({ port: x.containerPort, protocol: x.protocol === 'UDP' ? ('UDP' as const) : ('TCP' as const), ...(x.name !== undefined ? { name: x.name } : {}) }))),
    terminationGracePeriodSeconds: p.spec.terminationGracePeriodSeconds,
  };
}

/** Where a {@link LiveView} reads the world. */
interface ViewSource extends Omit<WorldView, 'nowMs' | 'lastDisruptionMs' | 'nodes' | 'settleMs' | 'agents' | 'boots'> {
  agents(node: string): readonly AgentView[];
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
  readonly #kubelets: Kubelet[] = [];
  readonly #invariants: Invariant[] = [];
  /** Who was disturbed when: what settle-based invariants forgive (see {@link DisruptionTracker}). */
  readonly disruptions = new DisruptionTracker();
  /** Agents whose process an injected fault ended: their next start is a disruption (a start after their own failure is not). */
  readonly #injectedDown = new Map<Agent<ControllerContext>, number>();
  /** When each agent's process failed on its own (controller errors under the crash policy). */
  readonly #ownFailures = new Map<Agent<ControllerContext>, number[]>();
  #datapath: ClusterDatapath | undefined;
  #started = false;

  constructor(opts: WorldOptions) {
    const controllerErrors = opts.controllerErrors ?? 'finding';
    const engine = new Engine({
      seed: opts.seed,
      ...(opts.schedule ?? {}),
      ...(opts.bounds !== undefined ? { bounds: opts.bounds } : {}),
      trace: opts.trace ?? true,
      onTaskError: (task: Task, finding: Finding) => {
        if (controllerErrors === 'finding') return 'stop';
        const agent = this.#agentOfOwner(task.owner);
        if (agent === undefined) return 'stop';
        const failures = this.#ownFailures.get(agent) ?? [];
        failures.push(engine.now());
        this.#ownFailures.set(agent, failures);
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
      if (ip !== undefined && ip !== '') {
        const before = this.#owners.get(ip);
        if (before?.uid !== p.metadata.uid) this.#owners.set(ip, { pod: `${p.metadata.namespace}/${p.metadata.name}`, uid: p.metadata.uid, node: p.spec.nodeName ?? '', sinceMs: engine.now() });
      }
    });

    const backend = opts.iptablesBackend ?? netfilterBackend();
    const initial = backend.initialRuleset?.() ?? freshRuleset();
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
      this.#kubelets.push(kubelet);
    });
    const describesNetwork = opts.cluster.network !== undefined || opts.cluster.nodes.some((n) => n.network !== undefined);
    if (opts.datapath === false && describesNetwork) throw new SimError('invalid-argument', 'the cluster describes a network: do not set datapath: false together with cluster.network or a node\'s network lines');
    if (opts.datapath ?? ((opts.probes ?? []).length > 0 || describesNetwork)) {
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

    const nodes = [...this.#nodes.values()].map((s) => s.info);
    const owners = this.#owners;
    const probeResults = this.#probeResults;
    this.view = new LiveView(nodes, this.settleMs, World.#viewSource(this, owners, probeResults));
    const disruptions = this.disruptions;
    engine.onAfterStep(() => disruptions.advance(engine.now()));
    for (const src of opts.invariants ?? []) {
      const inv = instantiate(src);
      this.#invariants.push(inv);
      engine.addInvariant(inv.name, () => inv.check(this.view));
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
        return w.#node(node).agents.map((a) => ({ name: a.name, node: a.node, state: a.state, incarnation: a.incarnation, ...(a.controller.declares !== undefined ? { declares: a.controller.declares } : {}), ownFailuresMs: w.#ownFailures.get(a) ?? [] }));
      },
      boots(node) {
        return w.#node(node).boots;
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

  /**
   * What each invariant that counts examined so far in this run (rules, chains, mappings,
   * agents), by name; invariants that do not count are absent.
   */
  coverage(): { readonly [invariant: string]: number } {
    const out: { [invariant: string]: number } = {};
    for (const inv of this.#invariants) if (isCounting(inv)) out[inv.name] = inv.examined();
    return out;
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
          if (port.nodePort === undefined) continue;
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

  /** The node's info (IP, Pod CIDR). */
  node(node: string): NodeInfo {
    return this.#node(node).info;
  }

  /** Every trace event so far. */
  get events(): readonly TraceEvent[] {
    return this.engine.events;
  }

  /** Schedule an action at absolute time `atMs` (its own step). */
  at(atMs: number, action: Action): void {
    this.engine.at(atMs, { kind: 'action', label: action.kind }, () => this.act(action));
  }

  /** Apply an action now (inside a step). */
  act(action: Action): void {
    const engine = this.engine;
    const api = this.api;
    this.#disrupted(this.#scopeOf(action), action.kind);
    // Helpers as methods of one object (not arrow functions bound to names, which some TypeScript
    // runners rename at a cost on every call of act).
    const h = {
      emit(this: void, type: string, fields: JsonObject): void {
        engine.emit(type, fields);
      },
      tolerate(this: void, what: string, fn: () => void): void {
        try {
          fn();
        } catch (e) {
          if (!isKubeError(e)) throw e;
          engine.emit('world.action-skipped', { action: what, reason: e.message });
        }
      },
    };
    const emit = h.emit;
    const tolerate = h.tolerate;
    const ns = namespaceOr;
    if (isHostAction(action)) {
      const command = hostCommandOf(action);
      const dp = this.#datapath;
      if (dp === undefined) throw new SimError('invalid-argument', `${action.kind} on ${action.host}: network actions need the data plane (describe a network or add a probe)`);
      emit('world.net.command', { host: action.host, command });
      dp.runCommand(action.host, command);
      return;
    }
    switch (action.kind) {
      case 'pod.create':
        emit('world.pod.create', { pod: `${ns(action.pod.namespace)}/${action.pod.name}`, node: action.pod.node, ports: action.pod.ports.map((p) => `${p.port}/${p.protocol}`).join(',') });
        // Generated timelines often create a Pod that exists: say so without raising (and
        // capturing the stack of) the API server's error. Its name was valid when it was created,
        // so AlreadyExists is exactly what the server would answer.
        if (api.find('Pod', ns(action.pod.namespace), action.pod.name) !== undefined) emit('world.action-skipped', { action: 'pod.create', reason: alreadyExistsMessage('Pod', action.pod.name) });
        else tolerate('pod.create', () => api.create('Pod', podInput(action.pod)));
        return;
      case 'pod.delete':
        emit('world.pod.delete', { pod: `${ns(action.namespace)}/${action.name}`, ...(action.graceSeconds !== undefined ? { graceSeconds: action.graceSeconds } : {}) });
        // Likewise a delete of a Pod that is gone: NotFound is the server's first check.
        if (api.find('Pod', ns(action.namespace), action.name) === undefined) emit('world.action-skipped', { action: 'pod.delete', reason: notFoundMessage('Pod', action.name) });
        else tolerate('pod.delete', () => api.delete('Pod', ns(action.namespace), action.name, action.graceSeconds !== undefined ? { gracePeriodSeconds: action.graceSeconds } : {}));
        return;
      case 'pod.recreate': {
        const cur = api.find('Pod', ns(action.namespace), action.name);
        emit('world.pod.recreate', { pod: `${ns(action.namespace)}/${action.name}`, gapMs: action.gapMs });
        if (cur === undefined) {
          emit('world.action-skipped', { action: 'pod.recreate', reason: `pods "${action.name}" not found` });
          return;
        }
        const spec = specOfPod(cur);
        tolerate('pod.recreate', () => api.delete('Pod', cur.metadata.namespace, cur.metadata.name, { gracePeriodSeconds: 0 }));
        engine.after(action.gapMs, { kind: 'action', label: `recreate ${spec.name}` }, () => {
          this.#disrupted(EVERY_NODE, 'pod.recreate');
          emit('world.pod.create', { pod: `${ns(spec.namespace)}/${spec.name}`, node: spec.node, ports: spec.ports.map((p) => `${p.port}/${p.protocol}`).join(',') });
          // Another create may have taken the name during the gap (see pod.create above).
          if (api.find('Pod', ns(spec.namespace), spec.name) !== undefined) emit('world.action-skipped', { action: 'pod.create', reason: alreadyExistsMessage('Pod', spec.name) });
          else tolerate('pod.create', () => api.create('Pod', podInput(spec)));
        });
        return;
      }
      case 'workload.scale': {
        const namespace = ns(action.namespace);
        const prefix = `${action.name}-`;
        // The workload's Pods: `<name>-<ordinal>`, ordinals written as a StatefulSet writes them.
        const ordinals = new Set<number>();
        for (const p of api.list('Pod').items) {
          if (p.metadata.namespace !== namespace || !p.metadata.name.startsWith(prefix)) continue;
          const rest = p.metadata.name.slice(prefix.length);
          if (/^(0|[1-9][0-9]*)$/.test(rest)) ordinals.add(Number(rest));
        }
        emit('world.workload.scale', { workload: `${namespace}/${action.name}`, from: ordinals.size, replicas: action.replicas });
        for (const i of [...ordinals].sort((a, b) => b - a)) {
          if (i < action.replicas) continue;
          const name = `${prefix}${i}`;
          emit('world.pod.delete', { pod: `${namespace}/${name}` });
          tolerate('pod.delete', () => api.delete('Pod', namespace, name));
        }
        for (let i = 0; i < action.replicas; i++) {
          if (ordinals.has(i)) continue;
          const node = action.nodes[i % action.nodes.length] ?? '';
          const spec: PodSpec = { namespace, name: `${prefix}${i}`, node, ...(action.labels !== undefined ? { labels: action.labels } : {}), ports: action.ports };
          emit('world.pod.create', { pod: `${namespace}/${spec.name}`, node, ports: spec.ports.map((p) => `${p.port}/${p.protocol}`).join(',') });
          tolerate('pod.create', () => api.create('Pod', podInput(spec)));
        }
        return;
      }
      case 'service.create':
        emit('world.service.create', { service: `${ns(action.service.namespace)}/${action.service.name}` });
        tolerate('service.create', () => api.create('Service', serviceInput(action.service)));
        return;
      case 'service.update': {
        emit('world.service.update', { service: `${ns(action.service.namespace)}/${action.service.name}` });
        tolerate('service.update', () => {
          const cur = api.get('Service', ns(action.service.namespace), action.service.name);
          const next = serviceInput(action.service);
          api.update({
            ...cur,
            metadata: { ...cur.metadata, annotations: { ...(next.metadata.annotations ?? {}) } },
            spec: {
              ...cur.spec,
              selector: next.spec.selector ?? {},
              ports: next.spec.ports.map((p, i) => ({
                protocol: p.protocol ?? 'TCP',
                port: p.port,
                targetPort: p.targetPort ?? p.port,
                ...(p.name !== undefined ? { name: p.name } : {}),
                ...(p.nodePort !== undefined ? { nodePort: p.nodePort } : cur.spec.ports[i]?.nodePort !== undefined ? { nodePort: cur.spec.ports[i].nodePort } : {}),
              })),
            },
          });
        });
        return;
      }
      case 'service.delete':
        emit('world.service.delete', { service: `${ns(action.namespace)}/${action.name}` });
        tolerate('service.delete', () => api.delete('Service', ns(action.namespace), action.name));
        return;
      case 'agent.crash':
        emit('fault.agent.crash', { node: action.node, ...(action.agent !== undefined ? { agent: `${action.node}/${action.agent}` } : {}), restartAfterMs: action.restartAfterMs });
        {
          const a = this.agent(action.node, action.agent);
          // Forgiven until the new process starts (and its settle time after): a bounded window.
          const w = this.#disruptedUntil(action.node, engine.now() + action.restartAfterMs, `agent.crash ${a.name}`);
          if (a.state !== 'down') this.#injectedDown.set(a, w);
          a.crash({ restart: true, restartDelayMs: action.restartAfterMs, reason: 'fault injected' });
        }
        return;
      case 'agent.restart':
        emit('fault.agent.restart', { node: action.node, ...(action.agent !== undefined ? { agent: `${action.node}/${action.agent}` } : {}), downMs: action.downMs, ...(action.graceMs !== undefined ? { graceMs: action.graceMs } : {}) });
        {
          const a = this.agent(action.node, action.agent);
          // Until the new process starts, at most the grace period and the time down.
          const w = this.#disruptedUntil(action.node, engine.now() + (action.graceMs ?? a.graceMs) + action.downMs, `agent.restart ${a.name}`);
          if (a.state === 'running') this.#injectedDown.set(a, w);
          a.sigterm({ restart: true, restartDelayMs: action.downMs, ...(action.graceMs !== undefined ? { graceMs: action.graceMs } : {}) });
        }
        return;
      case 'watch.gap':
        emit('fault.watch.gap', { ...(action.node !== undefined ? { node: action.node } : {}), durationMs: action.durationMs });
        for (const inf of this.#informers(action.node)) inf.watchGap(action.durationMs);
        this.#disruptedUntil(action.node ?? EVERY_NODE, engine.now() + action.durationMs, 'watch.gap');
        return;
      case 'watch.reset':
        emit('fault.watch.reset', { ...(action.node !== undefined ? { node: action.node } : {}) });
        for (const inf of this.#informers(action.node)) inf.forceRelist();
        return;
      case 'watch.delay': {
        emit('fault.watch.delay', { ...(action.node !== undefined ? { node: action.node } : {}), delayMs: action.delayMs, durationMs: action.durationMs });
        const affected = this.#informers(action.node);
        for (const inf of affected) inf.setWatchDelay(action.delayMs);
        this.#disruptedUntil(action.node ?? EVERY_NODE, engine.now() + action.durationMs + action.delayMs, 'watch.delay');
        engine.after(action.durationMs, { kind: 'fault', label: 'watch delay ends' }, () => {
          for (const inf of affected) inf.setWatchDelay(0);
        });
        return;
      }
      case 'iptables.lock': {
        emit('fault.iptables.lock', { node: action.node, durationMs: action.durationMs });
        const f = this.#node(action.node).faults;
        f.lockHeldUntilMs = Math.max(f.lockHeldUntilMs, engine.now() + action.durationMs);
        this.#disruptedUntil(action.node, f.lockHeldUntilMs, 'iptables.lock');
        return;
      }
      case 'iptables.fail':
        emit('fault.iptables.fail', { node: action.node, count: action.count });
        this.#node(action.node).faults.resourceFailures += action.count;
        this.#disruptedUntil(action.node, engine.now() + this.#maxBackoffOn(action.node), 'iptables.fail');
        return;
      case 'iptables.restore-fail':
        emit('fault.iptables.restore-fail', { node: action.node, line: action.line });
        this.#node(action.node).faults.restoreFailAtLine = action.line;
        this.#disruptedUntil(action.node, engine.now() + this.#maxBackoffOn(action.node), 'iptables.restore-fail');
        return;
      case 'iptables.slow': {
        emit('fault.iptables.slow', { node: action.node, extraMs: action.extraMs, durationMs: action.durationMs });
        const f = this.#node(action.node).faults;
        f.slowExtraMs = action.extraMs;
        f.slowUntilMs = engine.now() + action.durationMs;
        this.#disruptedUntil(action.node, f.slowUntilMs, 'iptables.slow');
        return;
      }
    }
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
      dp.podUp({ node: String(f['node']), pod: String(f['pod']), uid: String(f['uid']), ip: f['ip'], tcpPorts });
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

  /** The nodes an action disturbs: a fault's node, a network change's node, or (Kubernetes changes, faults everywhere) every node. */
  #scopeOf(a: Action): string {
    if (isHostAction(a)) return this.#nodes.has(a.host) ? a.host : EVERY_NODE;
    return 'node' in a && typeof a.node === 'string' ? a.node : EVERY_NODE;
  }

  /** The longest retry backoff the agents on `node` declare (0 when none does). */
  #maxBackoffOn(node: string): number {
    let m = 0;
    for (const a of this.#node(node).agents) m = Math.max(m, a.controller.declares?.maxBackoffMs ?? 0);
    return m;
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
