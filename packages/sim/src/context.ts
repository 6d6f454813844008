/**
 * The controller context: what a controller process gets from the world. Everything that touches
 * the world is an interleaving point (a step the engine schedules and picks): each kube client
 * call, each `iptables` process, each wait on a workqueue. Informer handlers run as their own
 * tasks, in the informer's delivery steps.
 */
import {
  Informer,
  WorkQueue,
  type ApiServer,
  type DeleteArg,
  type DeleteOptions,
  type HandlerOptions,
  type HandlerRegistration,
  type InputOf,
  type Kind,
  type ListResult,
  type Lister,
  type MergePatch,
  type ObjectOf,
  type QueueMode,
  type RandomSource,
  type RateLimiter,
  type ResourceEventHandler,
  type Scheduler,
  type Selector,
  type KubeTraceSink,
} from '@netsim/kube';
import { ConntrackTable, conntrackCommand } from '@netsim/kernel';
import { ProcessContextMembers, type ProcessContext, type ProcessHandle } from './agent.ts';
import type { Engine } from './engine.ts';
import { SimError } from './errors.ts';
import { noIptablesFaults, type IptablesHandle, type RawResult } from './iptables.ts';
import { createNftHandle, type NftHandle } from './nft.ts';
import { emptyRuleset as emptyNftRuleset, type Ruleset as NftRuleset } from '@netsim/nftables';
import type { NodeInfo } from './view.ts';

/**
 * The Kubernetes client of a controller: each call is one request to the API server, one step.
 * Errors are `KubeError`s (`NotFound`, `Conflict`, …) as client-go returns them.
 */
export interface KubeClient {
  get<K extends Kind>(kind: K, namespace: string, name: string): Promise<ObjectOf<K>>;
  list<K extends Kind>(kind: K, selector?: Selector): Promise<ListResult<ObjectOf<K>>>;
  create<K extends Kind>(kind: K, input: InputOf<K>): Promise<ObjectOf<K>>;
  update<K extends Kind>(obj: ObjectOf<K>): Promise<ObjectOf<K>>;
  updateStatus<K extends Kind>(obj: ObjectOf<K>): Promise<ObjectOf<K>>;
  /** A JSON merge patch (`{ metadata: { annotations: { k: 'v', gone: null } } }`). */
  patch<K extends Kind>(kind: K, namespace: string, name: string, patch: MergePatch): Promise<ObjectOf<K>>;
  delete<K extends Kind>(kind: K, namespace: string, name: string, opts?: DeleteOptions): Promise<ObjectOf<K>>;
}

/** One shared informer of the process (client-go's `SharedIndexInformer`). */
export interface InformerHandle<K extends Kind> {
  readonly kind: K;
  /** Registers a handler; each call runs as a task of this process. */
  addEventHandler(handler: ResourceEventHandler<ObjectOf<K>>, opts?: HandlerOptions): HandlerRegistration;
  /** The informer cache, read-only. */
  readonly lister: Lister<ObjectOf<K>>;
  hasSynced(): boolean;
}

export interface InformerRequest {
  readonly selector?: Selector;
  /** Resync period of the informer (ms, default 0: never). */
  readonly resyncPeriodMs?: number;
}

/** client-go's `SharedInformerFactory`, per process: one informer per kind and selector. */
export interface Informers {
  pods(req?: InformerRequest): InformerHandle<'Pod'>;
  services(req?: InformerRequest): InformerHandle<'Service'>;
  endpointSlices(req?: InformerRequest): InformerHandle<'EndpointSlice'>;
  nodes(req?: InformerRequest): InformerHandle<'Node'>;
  /** Starts every informer created so far (the factory's `Start`). */
  start(): void;
  /**
   * Resolves true once every started informer has synced; polls every 100 ms of simulated time as
   * client-go's `WaitForCacheSync` does, and resolves false if the process is stopping.
   */
  waitForCacheSync(): Promise<boolean>;
}

/**
 * client-go's rate-limiting workqueue with a blocking `get`, as workers use it:
 * `for (;;) { const key = await q.get(); if (key === undefined) return; … q.done(key); }`.
 */
export interface AsyncWorkQueue<T> {
  add(item: T): void;
  addAfter(item: T, delayMs: number): void;
  addRateLimited(item: T): void;
  forget(item: T): void;
  done(item: T): void;
  numRequeues(item: T): number;
  len(): number;
  shutDown(): void;
  shuttingDown(): boolean;
  /** The next item (an interleaving point; waits while empty), or `undefined` once shut down. */
  get(): Promise<T | undefined>;
}

/**
 * The node's connection tracking table through the `conntrack` tool (conntrack-tools 1.4.7), as
 * kube-proxy up to 1.28 ran it to clear stale UDP flows: each call is one `conntrack` process,
 * one step, against the node's kernel table (an empty table when the world has no data plane).
 *
 * @example
 * ```ts
 * const r = await ctx.conntrack.run(['-D', '-p', 'udp', '--orig-dst', '198.51.100.7', '--dst-nat', '198.18.0.5']);
 * // exit 0: "conntrack v1.4.7 (conntrack-tools): 1 flow entries have been deleted." on stderr; exit 1 when none matched
 * ```
 */
export interface ConntrackHandle {
  /** One `conntrack` run (argv without the program name); resolves with its output and exit status, never throws. */
  run(argv: readonly string[]): Promise<RawResult>;
}

/** Builds the `conntrack` handle of one agent process; `table` is read when each process runs. */
export function createConntrackHandle(args: {
  readonly engine: Engine;
  readonly node: string;
  readonly agent: string;
  readonly table: () => ConntrackTable | undefined;
  /** Simulated duration of one `conntrack` process (default 1 ms). */
  readonly latencyMs?: number;
}): ConntrackHandle {
  const { engine, node, agent } = args;
  const latencyMs = args.latencyMs ?? 1;
  if (!Number.isSafeInteger(latencyMs) || latencyMs < 0) throw new SimError('invalid-argument', `conntrack handle for ${agent}: latencyMs must be a non-negative integer`);
  return {
    run(argv) {
      return engine.call({ kind: 'conntrack', label: `${agent} conntrack ${argv.join(' ')}`, delayMs: latencyMs }, () => {
        const r = conntrackCommand(args.table() ?? new ConntrackTable(), argv, engine.now());
        engine.emit('conntrack.exec', { node, agent, argv: ['conntrack', ...argv].join(' '), exit: r.exitCode, ...(r.stderr !== '' ? { stderr: r.stderr } : {}) });
        return r;
      });
    },
  };
}

/** Everything a controller process sees. */
export interface ControllerContext extends ProcessContext {
  readonly nodeInfo: NodeInfo;
  readonly iptables: IptablesHandle;
  /** The node's nftables ruleset through the `nft` tool (`nft -f -` transactions, `nft list`). */
  readonly nft: NftHandle;
  /** The node's conntrack table through the `conntrack` tool. */
  readonly conntrack: ConntrackHandle;
  readonly kube: KubeClient;
  readonly informers: Informers;
  /** A new workqueue owned by this process (lost when it dies). */
  workqueue<T = string>(name: string, opts?: { readonly rateLimiter?: RateLimiter<T> }): AsyncWorkQueue<T>;
}

/** What the world hands to {@link buildControllerContext}. */
export interface ContextDeps {
  readonly engine: Engine;
  readonly api: ApiServer;
  readonly nodeInfo: NodeInfo;
  readonly iptables: IptablesHandle;
  /** Default: a handle on a ruleset of this context's own (a world without a data plane). */
  readonly nft?: NftHandle;
  /** Default: a handle on an empty table (a world without a data plane). */
  readonly conntrack?: ConntrackHandle;
  readonly queueMode: QueueMode;
  readonly random: RandomSource;
  readonly kubeLatencyMs: number;
  readonly kubeTrace: KubeTraceSink;
  /** Called for each informer created, so the world can aim watch faults at it. */
  readonly onInformer: (informer: Informer<Kind>) => void;
}

/** Builds a process's context: its own informers, workqueues and clients, all owned by the process. */
export function buildControllerContext(base: ProcessContext, proc: ProcessHandle, deps: ContextDeps): ControllerContext {
  const { engine, api } = deps;
  const owner = proc.owner;
  const agent = base.agent;
  // The services below are objects of methods that use no `this` (so they still work detached),
  // not of arrow functions: some TypeScript runners (tsx's keepNames) pay a defineProperty for
  // every named arrow function created, at every process start.

  // Steps of this process's informers and queues belong to it: they vanish when it dies.
  const scheduler: Scheduler = {
    now(): number {
      return engine.now();
    },
    schedule(delayMs, label, run): void {
      engine.after(delayMs, { kind: 'kube', label, owner }, run);
    },
  };

  const kubeLatencyMs = deps.kubeLatencyMs;
  const h = {
    request<T>(this: void, label: string, fn: () => T): Promise<T> {
      return engine.call({ kind: 'kube-client', label: `${agent} ${label}`, delayMs: kubeLatencyMs }, fn);
    },
  };
  const request = h.request;

  const kube: KubeClient = {
    get(kind, namespace, name) {
      return request(`GET ${kind} ${namespace}/${name}`, () => api.get(kind, namespace, name));
    },
    list(kind, selector) {
      return request(`LIST ${kind}`, () => api.list(kind, selector));
    },
    create(kind, input) {
      return request(`CREATE ${kind} ${input.metadata.namespace ?? ''}/${input.metadata.name}`, () => api.create(kind, input));
    },
    update(obj) {
      return request(`UPDATE ${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name}`, () => api.update(obj));
    },
    updateStatus(obj) {
      return request(`UPDATE ${obj.kind}/status ${obj.metadata.namespace}/${obj.metadata.name}`, () => api.updateStatus(obj));
    },
    patch(kind, namespace, name, patch) {
      return request(`PATCH ${kind} ${namespace}/${name}`, () => api.patch(kind, namespace, name, patch));
    },
    delete(kind, namespace, name, opts) {
      return request(`DELETE ${kind} ${namespace}/${name}`, () => api.delete(kind, namespace, name, opts));
    },
  };

  const created = new Map<string, Informer<Kind>>();
  let started = false;
  proc.onExit(() => {
    for (const inf of created.values()) inf.stop();
  });

  // Methods that use no `this`, not named arrows (see above).
  const inner = {
    informerFor<K extends Kind>(this: void, kind: K, req: InformerRequest = {}): InformerHandle<K> {
      const sel = req.selector ?? {};
      const id = `${kind}|${JSON.stringify(sel)}|${req.resyncPeriodMs ?? 0}`;
      let inf = created.get(id) as Informer<K> | undefined;
      if (inf === undefined) {
        inf = new Informer(api, kind, {
          queueMode: deps.queueMode,
          name: `${agent}/${kind.toLowerCase()}s`,
          selector: sel,
          resyncPeriodMs: req.resyncPeriodMs ?? 0,
          scheduler,
          random: deps.random,
          trace: deps.kubeTrace,
        });
        created.set(id, inf as unknown as Informer<Kind>);
        deps.onInformer(inf as unknown as Informer<Kind>);
        if (started) inf.run();
      }
      const informer = inf;
      return {
        kind,
        lister: informer.lister,
        hasSynced(): boolean {
          return informer.hasSynced();
        },
        addEventHandler(handler, opts) {
          // Each handler call runs as its own task of this process, inside the informer's delivery step.
          const label = kind.toLowerCase();
          const r = {
            run(this: void, name: string, fn: () => unknown): void {
              if (!proc.alive()) return;
              engine.activate(engine.newTask(owner, `${label} ${name}`), fn);
            },
          };
          const run = r.run;
          return informer.addEventHandler(
            {
              ...(handler.onAdd !== undefined
                ? {
                    onAdd(obj: ObjectOf<K>, initial: boolean): void {
                      run('onAdd', () => handler.onAdd?.(obj, initial));
                    },
                  }
                : {}),
              ...(handler.onUpdate !== undefined
                ? {
                    onUpdate(o: ObjectOf<K>, n: ObjectOf<K>): void {
                      run('onUpdate', () => handler.onUpdate?.(o, n));
                    },
                  }
                : {}),
              ...(handler.onDelete !== undefined
                ? {
                    onDelete(d: DeleteArg<ObjectOf<K>>): void {
                      run('onDelete', () => handler.onDelete?.(d));
                    },
                  }
                : {}),
            },
            opts,
          );
        },
      };
    },

    workqueue<T>(this: void, name: string, opts: { readonly rateLimiter?: RateLimiter<T> } = {}): AsyncWorkQueue<T> {
      const q = new WorkQueue<T>({ scheduler, name: `${agent}/${name}`, ...(opts.rateLimiter !== undefined ? { rateLimiter: opts.rateLimiter } : {}) });
      const sleepers: (() => void)[] = [];
      q.onReady(() => {
        // Wake every blocked worker; each retries in its own step and the losers wait again, which is
        // what goroutines blocked on the queue's condition variable do after a Broadcast.
        for (const wake of sleepers.splice(0)) wake();
      });
      proc.onExit(() => {
        sleepers.length = 0;
      });
      const g = {
        tryGet(this: void): { readonly item: T } | 'shutdown' | 'empty' {
          const item = q.get();
          if (item !== undefined) return { item };
          return q.shuttingDown() ? 'shutdown' : 'empty';
        },
      };
      const tryGet = g.tryGet;
      const getSpec = { kind: 'workqueue', label: `${agent} ${name}.Get` } as const;
      const wakeSpec = { kind: 'workqueue', label: `${agent} ${name}.Get wakes` } as const;
      return {
        add(item) {
          q.add(item);
        },
        addAfter(item, delayMs) {
          q.addAfter(item, delayMs);
        },
        addRateLimited(item) {
          q.addRateLimited(item);
        },
        forget(item) {
          q.forget(item);
        },
        done(item) {
          q.done(item);
        },
        numRequeues(item) {
          return q.numRequeues(item);
        },
        len() {
          return q.len();
        },
        shutDown() {
          q.shutDown();
        },
        shuttingDown() {
          return q.shuttingDown();
        },
        async get() {
          for (;;) {
            const r = await engine.call(getSpec, tryGet);
            if (r === 'shutdown') return undefined;
            if (r !== 'empty') return r.item;
            const w = engine.park<undefined>(wakeSpec);
            sleepers.push(() => w.wake(undefined));
            await w.promise;
          }
        },
      };
    },
  };
  const informerFor = inner.informerFor;
  const workqueue = inner.workqueue;

  const informers: Informers = {
    pods(req) {
      return informerFor('Pod', req);
    },
    services(req) {
      return informerFor('Service', req);
    },
    endpointSlices(req) {
      return informerFor('EndpointSlice', req);
    },
    nodes(req) {
      return informerFor('Node', req);
    },
    start(): void {
      if (started) return;
      started = true;
      for (const inf of created.values()) inf.run();
    },
    async waitForCacheSync(): Promise<boolean> {
      for (;;) {
        if (base.stopping) return false;
        if ([...created.values()].every((i) => i.hasSynced())) return true;
        await base.sleep(100);
      }
    },
  };

  if (!Number.isSafeInteger(deps.kubeLatencyMs) || deps.kubeLatencyMs < 0) {
    throw new SimError('invalid-argument', `kubeLatencyMs must be a non-negative integer, got ${String(deps.kubeLatencyMs)}`);
  }

  return new WorldContext(base, {
    nodeInfo: deps.nodeInfo,
    iptables: deps.iptables,
    nft: deps.nft ?? ownNftHandle(engine, deps.nodeInfo.name, agent),
    conntrack: deps.conntrack ?? createConntrackHandle({ engine, node: deps.nodeInfo.name, agent, table: () => undefined }),
    kube,
    informers,
    workqueue,
  });
}

/**
 * A controller context: the process context's members plus the world's services; `stopping`
 * stays live by reading the process context.
 */
class WorldContext extends ProcessContextMembers implements ControllerContext {
  readonly nodeInfo: NodeInfo;
  readonly iptables: IptablesHandle;
  readonly nft: NftHandle;
  readonly conntrack: ControllerContext['conntrack'];
  readonly kube: KubeClient;
  readonly informers: Informers;
  readonly workqueue: ControllerContext['workqueue'];
  readonly #base: ProcessContext;

  constructor(base: ProcessContext, services: Pick<ControllerContext, 'nodeInfo' | 'iptables' | 'nft' | 'conntrack' | 'kube' | 'informers' | 'workqueue'>) {
    super(base);
    this.#base = base;
    this.nodeInfo = services.nodeInfo;
    this.iptables = services.iptables;
    this.nft = services.nft;
    this.conntrack = services.conntrack;
    this.kube = services.kube;
    this.informers = services.informers;
    this.workqueue = services.workqueue;
  }

  get stopping(): boolean {
    return this.#base.stopping;
  }
}

/** An nft handle on a ruleset of its own, for a context built without a node's kernel state. */
function ownNftHandle(engine: Engine, node: string, agent: string): NftHandle {
  let cell: NftRuleset = emptyNftRuleset();
  return createNftHandle({ engine, node, agent, store: { get: () => cell, set: (r) => (cell = r) }, faults: noIptablesFaults() });
}
