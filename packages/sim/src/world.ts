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
  type KubeTraceEvent,
  type Pod,
  type PodInput,
  type ServiceInput,
} from '@netsim/kube';
import { freshRuleset, type Ruleset } from '@netsim/netfilter';
import { Agent, type AgentOptions, type Controller } from './agent.ts';
import { buildControllerContext, type ControllerContext } from './context.ts';
import { Engine, type Bounds, type RunOutcome, type ScheduleOptions, type Task, type Finding } from './engine.ts';
import { SimError } from './errors.ts';
import { SeededIds } from './ids.ts';
import { instantiate, type InvariantSource } from './invariants.ts';
import { createIptablesHandle, noIptablesFaults, type IptablesBackend, type IptablesFaultState, type IptablesHandleOptions } from './iptables.ts';
import type { JsonObject } from './json.ts';
import { netfilterBackend } from './netfilterBackend.ts';
import type { Action, ClusterSpec, PodSpec, ProbeSpec, ServiceSpec } from './scenario.ts';
import { TRACE_FORMAT_VERSION, type TraceEvent } from './trace.ts';
import { isPodLive, type IpOwner, type NodeInfo, type ProbeRecord, type WorldView } from './view.ts';

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
  /** The controller under test, deployed on every node. */
  readonly controller?: Controller<ControllerContext>;
  readonly invariants?: readonly InvariantSource[];
  readonly probes?: readonly ProbeSpec[];
  /** Default settle time of invariants and probes (default 3000 ms). */
  readonly settleMs?: number;
  /** A controller error is a finding that stops the run (default), or crashes the agent, which restarts. */
  readonly controllerErrors?: 'finding' | 'crash';
  /** How `iptables` commands and restores behave on the nodes (default: `@netsim/netfilter`'s). */
  readonly iptablesBackend?: IptablesBackend;
  readonly iptables?: IptablesHandleOptions;
  /** Latency of one API request from a controller (default 1 ms). */
  readonly kubeLatencyMs?: number;
  readonly agent?: AgentOptions;
  readonly kubelet?: KubeletTimings;
}

interface NodeState {
  readonly info: NodeInfo;
  ruleset: Ruleset;
  readonly faults: IptablesFaultState;
  readonly informers: Set<Informer<Kind>>;
  agent: Agent<ControllerContext> | undefined;
}

const DEFAULT_NAMESPACE = 'default';

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
    },
  };
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
  readonly #kubelets: Kubelet[] = [];
  #lastDisruptionMs = -1;
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
        agent.fail(`${finding.kind}: ${finding.message}`);
        return 'continue';
      },
    });
    this.engine = engine;
    engine.emit('sim.start', { format: TRACE_FORMAT_VERSION, seed: opts.seed, nodes: opts.cluster.nodes.map((n) => n.name), controller: opts.controller?.name ?? null });
    this.settleMs = opts.settleMs ?? 3000;
    if (!Number.isSafeInteger(this.settleMs) || this.settleMs < 0) throw new SimError('invalid-argument', `settleMs must be a non-negative integer, got ${String(this.settleMs)}`);
    const ids = new SeededIds(engine.streams.ids);
    const kubeTrace = (e: KubeTraceEvent): void => {
      engine.trace.record(engine.step, e.at, e.type, e.fields);
    };
    this.api = new ApiServer({
      runtime: { scheduler: engine, random: engine.streams.kube, ids: { next: () => ids.next('uid') } },
      trace: kubeTrace,
      ...(opts.cluster.nodeCidrMaskSize !== undefined ? { nodeCIDRMaskSize: opts.cluster.nodeCidrMaskSize } : {}),
    });
    const api = this.api;

    // Who had each Pod IP, for messages about stale rules.
    api.onChange((c) => {
      if (c.kind !== 'Pod') return;
      const p = c.object as Pod;
      const ip = p.status.podIP;
      if (ip !== undefined && ip !== '') this.#owners.set(ip, { pod: `${p.metadata.namespace}/${p.metadata.name}`, uid: p.metadata.uid, node: p.spec.nodeName ?? '' });
    });

    opts.cluster.nodes.forEach((n, i) => {
      if (this.#nodes.has(n.name)) throw new SimError('duplicate-name', `cluster.nodes: node "${n.name}" is listed twice`);
      if (i > 240) throw new SimError('invalid-argument', 'cluster.nodes: at most 241 nodes (node addresses come from 192.0.2.0/24)');
      const ip = `192.0.2.${11 + i}`;
      const node = api.create('Node', { metadata: { name: n.name }, status: { addresses: [{ type: 'InternalIP', address: ip }] } });
      const podCidr = node.spec.podCIDR ?? '';
      this.#nodes.set(n.name, { info: { name: n.name, ip, podCidr }, ruleset: freshRuleset(), faults: noIptablesFaults(), informers: new Set(), agent: undefined });
      const ipamPolicy = opts.kubelet?.ipamPolicy ?? opts.cluster.ipamPolicy;
      const kubelet = new Kubelet(api, { nodeName: n.name, ...(opts.kubelet ?? {}), ...(ipamPolicy !== undefined ? { ipamPolicy } : {}), trace: kubeTrace });
      kubelet.start();
      this.#kubelets.push(kubelet);
    });
    new EndpointSliceController(api).start();
    for (const s of opts.cluster.services ?? []) api.create('Service', serviceInput(s));
    for (const p of opts.cluster.pods ?? []) {
      if (!this.#nodes.has(p.node)) throw new SimError('unknown-name', `cluster.pods: Pod ${p.name} is on unknown node "${p.node}"`);
      api.create('Pod', podInput(p));
    }

    const controller = opts.controller;
    const backend = opts.iptablesBackend ?? netfilterBackend();
    if (controller !== undefined) {
      for (const st of this.#nodes.values()) {
        const node = st.info.name;
        st.agent = new Agent<ControllerContext>(
          engine,
          node,
          controller,
          (base, proc) => {
            const iptables = createIptablesHandle({
              engine,
              node,
              agent: base.agent,
              backend,
              store: { get: () => st.ruleset, set: (r) => (st.ruleset = r) },
              faults: st.faults,
              ...(opts.iptables !== undefined ? { options: opts.iptables } : {}),
            });
            return buildControllerContext(base, proc, {
              engine,
              api,
              nodeInfo: st.info,
              iptables,
              queueMode: opts.cluster.queueMode ?? 'DeltaFIFO',
              random: engine.streams.kube,
              kubeLatencyMs: opts.kubeLatencyMs ?? 1,
              kubeTrace,
              onInformer: (inf) => {
                st.informers.add(inf);
                proc.onExit(() => st.informers.delete(inf));
              },
            });
          },
          opts.agent ?? {},
        );
      }
    }

    const nodes = [...this.#nodes.values()].map((s) => s.info);
    const owners = this.#owners;
    const probes = this.#probeResults;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the view reads live world state through this reference
    const world = this;
    this.view = {
      get nowMs() {
        return engine.now();
      },
      nodes,
      settleMs: this.settleMs,
      get lastDisruptionMs() {
        return world.#lastDisruptionMs;
      },
      ruleset: (node) => world.#node(node).ruleset,
      pods: () => api.list('Pod').items,
      services: () => api.list('Service').items,
      agentState: (node) => world.#node(node).agent?.state ?? 'down',
      probes: () => [...probes.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
      ipOwner: (ip) => owners.get(ip),
      recheckAt: (atMs) => engine.recheckAt(atMs),
    };
    for (const src of opts.invariants ?? []) {
      const inv = instantiate(src);
      engine.addInvariant(inv.name, () => inv.check(this.view));
    }
    if ((opts.probes ?? []).length > 0) {
      throw new SimError('invalid-argument', 'probes need the host datapath (@netsim/kernel), which this build of the world does not wire yet');
    }
  }

  /** Node names, in cluster order. */
  get nodeNames(): readonly string[] {
    return [...this.#nodes.keys()];
  }

  /** The agent on `node`. */
  agent(node: string): Agent<ControllerContext> {
    const a = this.#node(node).agent;
    if (a === undefined) throw new SimError('unknown-name', `no controller runs on node "${node}" (the world was built without a controller)`);
    return a;
  }

  /** The node's current rules. */
  ruleset(node: string): Ruleset {
    return this.#node(node).ruleset;
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
    this.#lastDisruptionMs = engine.now();
    const emit = (type: string, fields: JsonObject): void => engine.emit(type, fields);
    const ns = (n: string | undefined): string => n ?? DEFAULT_NAMESPACE;
    const tolerate = (what: string, fn: () => void): void => {
      try {
        fn();
      } catch (e) {
        if (!isKubeError(e)) throw e;
        emit('world.action-skipped', { action: what, reason: e.message });
      }
    };
    switch (action.kind) {
      case 'pod.create':
        emit('world.pod.create', { pod: `${ns(action.pod.namespace)}/${action.pod.name}`, node: action.pod.node, ports: action.pod.ports.map((p) => `${p.port}/${p.protocol}`).join(',') });
        tolerate('pod.create', () => api.create('Pod', podInput(action.pod)));
        return;
      case 'pod.delete':
        emit('world.pod.delete', { pod: `${ns(action.namespace)}/${action.name}`, ...(action.graceSeconds !== undefined ? { graceSeconds: action.graceSeconds } : {}) });
        tolerate('pod.delete', () => api.delete('Pod', ns(action.namespace), action.name, action.graceSeconds !== undefined ? { gracePeriodSeconds: action.graceSeconds } : {}));
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
          this.#lastDisruptionMs = engine.now();
          emit('world.pod.create', { pod: `${ns(spec.namespace)}/${spec.name}`, node: spec.node, ports: spec.ports.map((p) => `${p.port}/${p.protocol}`).join(',') });
          tolerate('pod.create', () => api.create('Pod', podInput(spec)));
        });
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
        emit('fault.agent.crash', { node: action.node, restartAfterMs: action.restartAfterMs });
        this.agent(action.node).crash({ restart: true, restartDelayMs: action.restartAfterMs, reason: 'fault injected' });
        return;
      case 'agent.restart':
        emit('fault.agent.restart', { node: action.node, downMs: action.downMs, ...(action.graceMs !== undefined ? { graceMs: action.graceMs } : {}) });
        this.agent(action.node).sigterm({ restart: true, restartDelayMs: action.downMs, ...(action.graceMs !== undefined ? { graceMs: action.graceMs } : {}) });
        return;
      case 'watch.gap':
        emit('fault.watch.gap', { ...(action.node !== undefined ? { node: action.node } : {}), durationMs: action.durationMs });
        for (const inf of this.#informers(action.node)) inf.watchGap(action.durationMs);
        return;
      case 'watch.reset':
        emit('fault.watch.reset', { ...(action.node !== undefined ? { node: action.node } : {}) });
        for (const inf of this.#informers(action.node)) inf.forceRelist();
        return;
      case 'watch.delay': {
        emit('fault.watch.delay', { ...(action.node !== undefined ? { node: action.node } : {}), delayMs: action.delayMs, durationMs: action.durationMs });
        const affected = this.#informers(action.node);
        for (const inf of affected) inf.setWatchDelay(action.delayMs);
        engine.after(action.durationMs, { kind: 'fault', label: 'watch delay ends' }, () => {
          for (const inf of affected) inf.setWatchDelay(0);
        });
        return;
      }
      case 'iptables.lock': {
        emit('fault.iptables.lock', { node: action.node, durationMs: action.durationMs });
        const f = this.#node(action.node).faults;
        f.lockHeldUntilMs = Math.max(f.lockHeldUntilMs, engine.now() + action.durationMs);
        return;
      }
      case 'iptables.fail':
        emit('fault.iptables.fail', { node: action.node, count: action.count });
        this.#node(action.node).faults.resourceFailures += action.count;
        return;
      case 'iptables.restore-fail':
        emit('fault.iptables.restore-fail', { node: action.node, line: action.line });
        this.#node(action.node).faults.restoreFailAtLine = action.line;
        return;
      case 'iptables.slow': {
        emit('fault.iptables.slow', { node: action.node, extraMs: action.extraMs, durationMs: action.durationMs });
        const f = this.#node(action.node).faults;
        f.slowExtraMs = action.extraMs;
        f.slowUntilMs = engine.now() + action.durationMs;
        return;
      }
    }
  }

  /** Start every agent at the current time, each in its own step. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    for (const st of this.#nodes.values()) {
      const agent = st.agent;
      if (agent === undefined) continue;
      this.engine.after(0, { kind: 'lifecycle', label: `start ${agent.name}` }, () => {
        this.#lastDisruptionMs = this.engine.now();
        agent.start();
      });
    }
  }

  /** Start the agents (if not yet) and run until `untilMs`. */
  async run(untilMs: number): Promise<RunOutcome> {
    this.start();
    return this.engine.run({ untilMs });
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
    for (const st of this.#nodes.values()) if (st.agent !== undefined && st.agent.owner === owner) return st.agent;
    return undefined;
  }

  /** Live Pods on a node (Running, with an IP, not terminating). */
  livePods(node: string): Pod[] {
    return this.api.list('Pod', { nodeName: node }).items.filter(isPodLive);
  }
}
