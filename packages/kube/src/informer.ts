/**
 * client-go's shared informer: a reflector feeding a queue (DeltaFIFO or RealFIFO), a processing
 * loop that pops the queue, updates the cache and hands notifications to every registered
 * handler, and one listener per handler that calls it in order.
 *
 * Each of these is its own scheduled step, so the engine can interleave anything between them:
 * - `kube.watch.deliver`: a watch event reaches the reflector and is queued;
 * - `kube.informer.pop`: one pop (DeltaFIFO: one key with all its pending deltas; RealFIFO: one
 *   delta) updates the cache and queues notifications for the handlers;
 * - `kube.handler.deliver`: one notification reaches one handler (listeners run independently, as
 *   processorListener goroutines do, so the cache can be ahead of what a handler has seen);
 * - `kube.reflector.listAndWatch`, `kube.informer.resyncTick`.
 *
 * Add versus update is decided by the cache, not by the event type; an update whose old and new
 * resourceVersion are equal is a resync and only goes to handlers currently due one.
 */
import type { ApiServer, Selector } from './apiServer.ts';
import type { BackoffOptions } from './backoff.ts';
import { AtomicFifo } from './atomicFifo.ts';
import { DeltaFifo } from './deltaFifo.ts';
import { deltaKey, isTombstone, tombstone, type DeleteArg, type Delta, type InformerQueue, type KnownObjects, type QueueMode } from './fifo.ts';
import { keyOf, objectKey, type Kind, type KubeObject, type ObjectOf } from './objects.ts';
import { RealFifo } from './realFifo.ts';
import { Reflector, type WatchTimeoutOptions } from './reflector.ts';
import { shuffleInPlace, type RandomSource, type Scheduler } from './runtime.ts';
import { wantsTrace, type KubeTraceSink } from './trace.ts';

/**
 * What a controller registers. Every callback is optional; `onDelete` may receive a
 * `DeletedFinalStateUnknown` tombstone when the deletion was learned by relisting.
 */
export interface ResourceEventHandler<T extends KubeObject> {
  onAdd?(obj: T, isInInitialList: boolean): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: DeleteArg<T>): void;
}

export interface HandlerOptions {
  /** A name for traces (default `handler-N`). */
  readonly name?: string;
  /** This handler's resync period (default: the informer's `resyncPeriodMs`). 0: never resynced. */
  readonly resyncPeriodMs?: number;
  /** Fault: a slow handler. After each call, this handler's next notification waits this long (ms). */
  readonly processingDelayMs?: number;
}

/** What `addEventHandler` returns: client-go's `ResourceEventHandlerRegistration`. */
export interface HandlerRegistration {
  readonly name: string;
  /** True once the informer synced and this handler received every initial-list add. */
  hasSynced(): boolean;
  /** Unregisters the handler; notifications not yet delivered are dropped. */
  remove(): void;
  setProcessingDelay(ms: number): void;
  /** Notifications queued for this handler and not yet delivered. */
  pending(): number;
}

/** The informer cache, read-only: what controllers call a lister. */
export interface Lister<T> {
  get(namespace: string, name: string): T | undefined;
  getByKey(key: string): T | undefined;
  /** Every cached object; the order is not defined (client-go iterates a map), so it is drawn from the random source. */
  list(): T[];
  /** Cached keys, sorted. */
  keys(): string[];
}

export interface InformerOptions {
  /**
   * Which client-go queue: `DeltaFIFO` (client-go ≤ v0.35, most deployed agents), `RealFIFO`
   * (`InOrderInformers`, default from 1.33) or `AtomicFIFO` (atomic relists and resyncs, default in 1.36).
   */
  readonly queueMode: QueueMode;
  /** Names the informer in traces, steps and fault filters (default `<kind>-informer`). */
  readonly name?: string;
  /** The informer's default handler resync period, also its resync check period (ms, default 0: never). */
  readonly resyncPeriodMs?: number;
  /** Only objects matching this (namespace, labels, Pods' spec.nodeName). */
  readonly selector?: Selector;
  /** Fault: every watch event reaches this informer this much later (ms, default 0). */
  readonly watchDelayMs?: number;
  /** Time between two pops of the queue (ms, default 0). */
  readonly processDelayMs?: number;
  /** Order of a relist's items: `random` (default; the API does not guarantee one) or `sorted`. */
  readonly listOrder?: 'random' | 'sorted';
  /** The relist backoff (default client-go's: 800 ms ×2 up to 30 s, jitter 1.0, reset after 2 min). */
  readonly backoff?: BackoffOptions;
  /** Watch timeouts (default client-go's [5 min, 10 min)); `'none'` keeps each watch open until it fails. */
  readonly watchTimeout?: WatchTimeoutOptions | 'none';
  /** Defaults to the API server's runtime. */
  readonly scheduler?: Scheduler;
  readonly random?: RandomSource;
  readonly trace?: KubeTraceSink;
}

type Notification<T extends KubeObject> =
  | { readonly type: 'add'; readonly obj: T; readonly isInInitialList: boolean }
  | { readonly type: 'update'; readonly old: T; readonly obj: T }
  | { readonly type: 'delete'; readonly obj: DeleteArg<T> };

const MINIMUM_RESYNC_PERIOD_MS = 1000;

class Listener<T extends ObjectOf<Kind>> implements HandlerRegistration {
  private readonly pendingQ: Notification<T>[] = [];
  private head = 0;
  private scheduled = false;
  private busyUntil = 0;
  private initialPending = 0;
  removed = false;
  /** The value of client-go's `listeners` map: whether this listener takes resync updates now. */
  dueResync = true;
  resyncPeriodMs: number;
  nextResyncAt: number;

  constructor(
    readonly name: string,
    private readonly handler: ResourceEventHandler<T>,
    readonly requestedResyncPeriodMs: number,
    resyncPeriodMs: number,
    private processingDelayMs: number,
    private readonly informer: Informer<Kind>,
    private readonly scheduler: Scheduler,
    private readonly trace: KubeTraceSink | undefined,
  ) {
    this.resyncPeriodMs = resyncPeriodMs;
    this.nextResyncAt = scheduler.now() + resyncPeriodMs;
  }

  hasSynced(): boolean {
    return this.informer.hasSynced() && this.initialPending === 0;
  }

  remove(): void {
    this.informer.removeListener(this);
  }

  setProcessingDelay(ms: number): void {
    checkMs(ms, 'processingDelayMs');
    this.processingDelayMs = ms;
  }

  pending(): number {
    return this.pendingQ.length - this.head;
  }

  add(n: Notification<T>): void {
    if (this.removed) return;
    if (n.type === 'add' && n.isInInitialList) this.initialPending++;
    this.pendingQ.push(n);
    this.pump();
  }

  drop(): void {
    this.removed = true;
    this.pendingQ.length = 0;
    this.head = 0;
  }

  shouldResync(now: number): boolean {
    return this.resyncPeriodMs !== 0 && now >= this.nextResyncAt;
  }

  private pump(): void {
    if (this.scheduled || this.removed || this.head >= this.pendingQ.length) return;
    this.scheduled = true;
    const delay = Math.max(0, this.busyUntil - this.scheduler.now());
    this.scheduler.schedule(delay, `kube.handler.deliver ${this.informer.name}/${this.name}`, () => this.deliver());
  }

  private deliver(): void {
    this.scheduled = false;
    if (this.removed) return;
    const n = this.pendingQ[this.head];
    if (n === undefined) return;
    this.pendingQ[this.head] = undefined as unknown as Notification<T>;
    this.head++;
    if (this.head > 256 && this.head * 2 > this.pendingQ.length) {
      this.pendingQ.splice(0, this.head);
      this.head = 0;
    }
    this.busyUntil = this.scheduler.now() + this.processingDelayMs;
    this.traceCall(n);
    try {
      switch (n.type) {
        case 'add':
          this.handler.onAdd?.(n.obj, n.isInInitialList);
          break;
        case 'update':
          this.handler.onUpdate?.(n.old, n.obj);
          break;
        case 'delete':
          this.handler.onDelete?.(n.obj);
          break;
        default:
          assertNever(n);
      }
    } finally {
      if (n.type === 'add' && n.isInInitialList) this.initialPending--;
      this.pump();
    }
  }

  private traceCall(n: Notification<T>): void {
    if (!wantsTrace(this.trace, 'kube.handler')) return;
    const f: Record<string, string | number | boolean> = { informer: this.informer.name, handler: this.name };
    switch (n.type) {
      case 'add':
        Object.assign(f, { call: 'onAdd', key: keyOf(n.obj.metadata.namespace, n.obj.metadata.name), uid: n.obj.metadata.uid, rv: n.obj.metadata.resourceVersion, isInInitialList: n.isInInitialList });
        break;
      case 'update':
        Object.assign(f, {
          call: 'onUpdate',
          key: keyOf(n.obj.metadata.namespace, n.obj.metadata.name),
          oldUid: n.old.metadata.uid,
          oldRv: n.old.metadata.resourceVersion,
          uid: n.obj.metadata.uid,
          rv: n.obj.metadata.resourceVersion,
        });
        break;
      case 'delete': {
        const t = isTombstone(n.obj);
        const o = t ? n.obj.obj : (n.obj);
        Object.assign(f, { call: 'onDelete', key: deltaKey(n.obj), tombstone: t, uid: o.metadata.uid, rv: o.metadata.resourceVersion });
        break;
      }
      default:
        assertNever(n);
    }
    // Pod IPs make the gap cases readable: the same name, a new uid and a new IP.
    if (n.type === 'update' && n.old.kind === 'Pod' && n.old.status.podIP !== undefined) f['oldIp'] = n.old.status.podIP;
    const o = n.type === 'delete' ? (isTombstone(n.obj) ? n.obj.obj : (n.obj)) : n.obj;
    if (o.kind === 'Pod' && o.status.podIP !== undefined) f['ip'] = o.status.podIP;
    this.trace({ type: 'kube.handler', at: this.scheduler.now(), fields: f });
  }
}

/** The informer's cache (client-go's indexer): objects by key, insertion-ordered. */
class Cache<T extends ObjectOf<Kind>> implements KnownObjects<T> {
  readonly map = new Map<string, T>();
  listKeys(): string[] {
    return [...this.map.keys()];
  }
  getByKey(key: string): T | undefined {
    return this.map.get(key);
  }
}

/**
 * A shared informer for one kind.
 *
 * @example
 * ```ts
 * const inf = new Informer(api, 'Pod', { queueMode: 'DeltaFIFO', name: 'pods' });
 * inf.addEventHandler({ onUpdate: (o, n) => console.log(o.metadata.uid, '→', n.metadata.uid) });
 * inf.run();
 * scheduler.runUntilIdle();
 * ```
 */
export class Informer<K extends Kind> {
  readonly name: string;
  readonly kind: K;
  readonly queueMode: QueueMode;
  /** The informer cache, read-only. */
  readonly lister: Lister<ObjectOf<K>>;
  private readonly cache = new Cache<ObjectOf<K>>();
  private readonly queue: InformerQueue<ObjectOf<K>>;
  private readonly reflector: Reflector<K>;
  private readonly listeners: Listener<ObjectOf<K>>[] = [];
  private readonly scheduler: Scheduler;
  private readonly random: RandomSource;
  private readonly trace: KubeTraceSink | undefined;
  private resyncCheckPeriodMs: number;
  private readonly defaultResyncPeriodMs: number;
  private processDelayMs: number;
  private popScheduled = false;
  private started = false;
  private stopped = false;
  private handlerSeq = 0;
  private pops = 0;

  constructor(api: ApiServer, kind: K, opts: InformerOptions) {
    this.kind = kind;
    this.name = opts.name ?? `${kind.toLowerCase()}-informer`;
    this.queueMode = opts.queueMode;
    this.scheduler = opts.scheduler ?? api.runtime.scheduler;
    this.random = opts.random ?? api.runtime.random;
    this.trace = opts.trace;
    this.defaultResyncPeriodMs = checkMs(opts.resyncPeriodMs ?? 0, 'resyncPeriodMs');
    this.resyncCheckPeriodMs = this.defaultResyncPeriodMs;
    this.processDelayMs = checkMs(opts.processDelayMs ?? 0, 'processDelayMs');
    switch (opts.queueMode) {
      case 'DeltaFIFO':
        this.queue = new DeltaFifo(this.cache, this.random);
        break;
      case 'RealFIFO':
        this.queue = new RealFifo(this.cache, this.random);
        break;
      case 'AtomicFIFO':
        this.queue = new AtomicFifo();
        break;
      default:
        throw new Error(`informer ${this.name}: unknown queueMode ${JSON.stringify(opts.queueMode)}; use 'DeltaFIFO', 'RealFIFO' or 'AtomicFIFO'`);
    }
    this.reflector = new Reflector<K>({
      name: this.name,
      api,
      kind,
      selector: opts.selector ?? {},
      queue: this.queue,
      scheduler: this.scheduler,
      random: this.random,
      backoff: opts.backoff ?? {},
      watchTimeout: opts.watchTimeout ?? { minMs: 300_000, maxMs: 600_000 },
      listOrder: opts.listOrder ?? 'random',
      watchDelayMs: checkMs(opts.watchDelayMs ?? 0, 'watchDelayMs'),
      trace: this.trace,
      // Bound methods, not named arrows: some TypeScript runners (tsx's keepNames) pay a
      // defineProperty for every named arrow, at every informer built.
      onQueued: this.kick.bind(this),
      resyncPeriodMs: this.currentResyncPeriodMs.bind(this),
      shouldResync: this.shouldResync.bind(this),
    });
    const cache = this.cache;
    const random = this.random;
    this.lister = {
      get(namespace, name) {
        return cache.map.get(keyOf(namespace, name));
      },
      getByKey(key) {
        return cache.map.get(key);
      },
      list() {
        return shuffleInPlace([...cache.map.values()], random);
      },
      keys() {
        return [...cache.map.keys()].sort();
      },
    };
  }

  private currentResyncPeriodMs(): number {
    return this.resyncCheckPeriodMs;
  }

  /**
   * Registers a handler. Registered before `run`, it sees the initial list as adds with
   * `isInInitialList` true; registered later, it first gets an add (isInInitialList true) for
   * every cached object, in an order drawn from the random source.
   */
  addEventHandler(handler: ResourceEventHandler<ObjectOf<K>>, opts: HandlerOptions = {}): HandlerRegistration {
    if (this.stopped) throw new Error(`handler was not added to shared informer ${this.name} because it has stopped already`);
    let resync = checkMs(opts.resyncPeriodMs ?? this.defaultResyncPeriodMs, 'resyncPeriodMs');
    if (resync > 0) {
      if (resync < MINIMUM_RESYNC_PERIOD_MS) resync = MINIMUM_RESYNC_PERIOD_MS;
      if (resync < this.resyncCheckPeriodMs) {
        if (this.started) {
          resync = this.resyncCheckPeriodMs;
        } else {
          this.resyncCheckPeriodMs = resync;
          for (const l of this.listeners) l.resyncPeriodMs = determineResyncPeriod(l.requestedResyncPeriodMs, resync);
        }
      }
    }
    const l = new Listener<ObjectOf<K>>(
      opts.name ?? `handler-${++this.handlerSeq}`,
      handler,
      resync,
      determineResyncPeriod(resync, this.resyncCheckPeriodMs),
      checkMs(opts.processingDelayMs ?? 0, 'processingDelayMs'),
      this as unknown as Informer<Kind>,
      this.scheduler,
      this.trace,
    );
    this.listeners.push(l);
    if (this.started) {
      for (const obj of shuffleInPlace([...this.cache.map.values()], this.random)) l.add({ type: 'add', obj, isInInitialList: true });
    }
    return l;
  }

  /** Starts the informer: the first list happens in a scheduled step. */
  run(): void {
    if (this.started) throw new Error(`informer ${this.name}: the sharedIndexInformer has started, run more than once is not allowed`);
    this.started = true;
    this.reflector.run();
  }

  /** Stops the informer: its watch ends and no further steps do anything. */
  stop(): void {
    this.stopped = true;
    this.reflector.stop();
    for (const l of this.listeners) l.drop();
  }

  /** True once the initial list has been popped entirely (client-go's `HasSynced`). */
  hasSynced(): boolean {
    return this.queue.hasSynced();
  }

  lastSyncResourceVersion(): string {
    return this.reflector.lastSyncResourceVersion();
  }

  /** How many lists the reflector made (1 after the initial list, +1 per relist). */
  listCount(): number {
    return this.reflector.listCount();
  }

  /** Pops done so far. */
  popCount(): number {
    return this.pops;
  }

  /** Pending queue content in pop order, for debugging and docs. */
  queueDump(): string[] {
    return this.queue.dump();
  }

  /** Items waiting in the queue. */
  queueLength(): number {
    return this.queue.len();
  }

  // ---------------------------------------------------------------- faults

  /** Fault: this informer's watch loses every event for `durationMs`, then breaks with 410, so it relists. */
  watchGap(durationMs: number): void {
    this.reflector.gap(checkMs(durationMs, 'durationMs'));
  }

  /** Fault: the API server breaks this informer's watch with 410 now; it relists after the backoff. */
  forceRelist(): void {
    this.reflector.forceRelist();
  }

  /**
   * A resync now, as if every handler's resync period had come: the queue re-delivers every cached
   * object to every handler as an update whose old and new objects are the same (client-go's
   * `Resync`). A controller at its fixpoint changes nothing in response.
   */
  resync(): void {
    if (!this.hasSynced()) return;
    for (const l of this.listeners) l.dueResync = true;
    if (wantsTrace(this.trace, 'kube.informer.resync')) this.trace({ type: 'kube.informer.resync', at: this.scheduler.now(), fields: { informer: this.name, due: this.listeners.map((l) => l.name).join(',') } });
    this.queue.resync();
    this.kick();
  }

  /** Fault: events reach this informer `ms` later from now on. */
  setWatchDelay(ms: number): void {
    this.reflector.setWatchDelay(checkMs(ms, 'watchDelayMs'));
  }

  /** Time between two pops of the queue (ms). */
  processDelay(): number {
    return this.processDelayMs;
  }

  /** Time between two pops of the queue. */
  setProcessDelay(ms: number): void {
    this.processDelayMs = checkMs(ms, 'processDelayMs');
  }

  // ---------------------------------------------------------------- internals

  /** @internal */
  removeListener(l: Listener<ObjectOf<Kind>>): void {
    const i = this.listeners.indexOf(l as unknown as Listener<ObjectOf<K>>);
    if (i >= 0) this.listeners.splice(i, 1);
    l.drop();
  }

  private kick(): void {
    if (this.popScheduled || this.stopped || this.queue.len() === 0) return;
    this.popScheduled = true;
    this.scheduler.schedule(this.processDelayMs, `kube.informer.pop ${this.name}`, () => this.popOne());
  }

  private popOne(): void {
    this.popScheduled = false;
    if (this.stopped) return;
    const item = this.queue.pop();
    if (item === undefined) return;
    this.pops++;
    const b = item.batch;
    if (wantsTrace(this.trace, 'kube.informer.pop')) this.trace({
      type: 'kube.informer.pop',
      at: this.scheduler.now(),
      fields: {
        informer: this.name,
        key: b !== undefined ? '*' : item.key,
        deltas: b !== undefined ? (b.type === 'ReplacedAll' ? `ReplacedAll(${b.objects.length})` : 'SyncAll') : item.deltas.map((d) => d.type + (isTombstone(d.object) ? '(tombstone)' : '')).join(','),
        isInInitialList: item.isInInitialList,
      },
    });
    if (b === undefined) this.processDeltas(item.deltas, item.isInInitialList);
    else if (b.type === 'ReplacedAll') this.processReplacedAll(b.objects, item.isInInitialList);
    else this.processSyncAll();
    this.kick();
  }

  /** client-go's `processDeltas`: the cache decides add versus update. */
  private processDeltas(deltas: readonly Delta<ObjectOf<K>>[], isInInitialList: boolean): void {
    for (const d of deltas) {
      const obj = d.object;
      switch (d.type) {
        case 'Sync':
        case 'Replaced':
        case 'Added':
        case 'Updated': {
          if (isTombstone(obj)) throw new Error(`informer ${this.name}: ${d.type} delta carries a tombstone for ${obj.key}`);
          const key = deltaKey(obj);
          const old = this.cache.map.get(key);
          this.cache.map.set(key, obj);
          if (old !== undefined) this.distributeUpdate(old, obj);
          else this.distribute({ type: 'add', obj, isInInitialList }, false);
          break;
        }
        case 'Deleted':
          this.cache.map.delete(deltaKey(obj));
          this.distribute({ type: 'delete', obj }, false);
          break;
        default:
          assertNever(d.type);
      }
    }
  }

  /**
   * client-go's `processReplacedAllInfo` (AtomicFIFO): the cache is replaced first, then every
   * cached key missing from the list gets a tombstone, then every listed object an update or add.
   */
  private processReplacedAll(objects: readonly ObjectOf<K>[], isInInitialList: boolean): void {
    const newKeys = new Set(objects.map(objectKey));
    const deletions: DeleteArg<ObjectOf<K>>[] = [];
    for (const k of shuffleInPlace(this.cache.listKeys(), this.random)) {
      if (!newKeys.has(k)) deletions.push(tombstone(k, this.cache.map.get(k) as ObjectOf<K>));
    }
    const replacements = objects.map((obj) => ({ old: this.cache.map.get(objectKey(obj)), obj }));
    this.cache.map.clear();
    for (const obj of objects) this.cache.map.set(objectKey(obj), obj);
    for (const d of deletions) this.distribute({ type: 'delete', obj: d }, false);
    for (const r of replacements) {
      if (r.old !== undefined) this.distributeUpdate(r.old, r.obj);
      else this.distribute({ type: 'add', obj: r.obj, isInInitialList }, false);
    }
  }

  /** AtomicFIFO's `SyncAll`: a resync update for every cached object (map order: drawn from the random source). */
  private processSyncAll(): void {
    for (const obj of shuffleInPlace([...this.cache.map.values()], this.random)) this.distributeUpdate(obj, obj);
  }

  private distributeUpdate(old: ObjectOf<K>, obj: ObjectOf<K>): void {
    const isSync = old.metadata.resourceVersion === obj.metadata.resourceVersion;
    this.distribute({ type: 'update', old, obj }, isSync);
  }

  private distribute(n: Notification<ObjectOf<K>>, sync: boolean): void {
    for (const l of this.listeners) {
      if (!sync || l.dueResync) l.add(n);
    }
  }

  /** client-go's `sharedProcessor.shouldResync`: re-evaluates every listener's due flag. */
  private shouldResync(): boolean {
    const now = this.scheduler.now();
    let any = false;
    const due: string[] = [];
    for (const l of this.listeners) {
      const should = l.shouldResync(now);
      l.dueResync = should;
      if (should) {
        any = true;
        due.push(l.name);
        l.nextResyncAt = now + l.resyncPeriodMs;
      }
    }
    if (wantsTrace(this.trace, 'kube.informer.resync')) this.trace({ type: 'kube.informer.resync', at: now, fields: { informer: this.name, due: due.join(',') } });
    return any;
  }
}

/** client-go's `determineResyncPeriod`. */
function determineResyncPeriod(desired: number, check: number): number {
  if (desired === 0) return 0;
  if (check === 0) return 0;
  return desired < check ? check : desired;
}

function checkMs(v: number, what: string): number {
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${what} must be a non-negative integer number of milliseconds, got ${v}`);
  return v;
}

function assertNever(x: never): never {
  throw new Error(`unexpected: ${JSON.stringify(x)}`);
}
