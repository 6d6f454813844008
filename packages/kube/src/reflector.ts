/**
 * client-go's Reflector: list, then watch from the list's resourceVersion, feeding the queue.
 *
 * - `ListAndWatch` runs as one step (`kube.reflector.listAndWatch`): a consistent list, shuffled
 *   (list order is not guaranteed by the API), handed to `queue.replace`, then a watch from the
 *   list's resourceVersion. Each watch event is a separate step.
 * - A watch that ends cleanly (the server's timeout) is re-opened at once from the last
 *   resourceVersion seen: no relist. A watch that closes within a second without events is a
 *   "very short watch" error.
 * - A watch error (410 Expired included) ends ListAndWatch; the next one starts after the
 *   backoff delay and relists.
 * - While watching, a resync timer ticks every resync period; on each tick the informer decides
 *   which handlers are due and, if any, the queue resyncs.
 */
import type { ApiServer, Selector } from './apiServer.ts';
import { BackoffManager, type BackoffOptions } from './backoff.ts';
import type { InformerQueue } from './fifo.ts';
import type { Kind, ObjectOf } from './objects.ts';
import { shuffleInPlace, type RandomSource, type Scheduler } from './runtime.ts';
import { wantsTrace, type KubeTraceSink } from './trace.ts';
import type { WatchEvent, WatchHandle } from './watch.ts';

export interface WatchTimeoutOptions {
  readonly minMs: number;
  readonly maxMs: number;
}

export interface ReflectorOptions<K extends Kind> {
  readonly name: string;
  readonly api: ApiServer;
  readonly kind: K;
  readonly selector: Selector;
  readonly queue: InformerQueue<ObjectOf<K>>;
  readonly scheduler: Scheduler;
  readonly random: RandomSource;
  readonly backoff: BackoffOptions;
  /** client-go picks a random timeout in [5 min, 10 min) per watch; `'none'` keeps watches open. */
  readonly watchTimeout: WatchTimeoutOptions | 'none';
  readonly listOrder: 'random' | 'sorted';
  readonly watchDelayMs: number;
  readonly trace: KubeTraceSink | undefined;
  /** Called after anything was queued, so the informer can schedule a pop. */
  readonly onQueued: () => void;
  /** The resync check period (0: never) and the check itself; returns true when the queue should resync. */
  readonly resyncPeriodMs: () => number;
  readonly shouldResync: () => boolean;
}

export class Reflector<K extends Kind> {
  private readonly o: ReflectorOptions<K>;
  private readonly backoff: BackoffManager;
  /** Bumped whenever a ListAndWatch ends: steps from an older one do nothing. */
  private gen = 0;
  private watch: WatchHandle | undefined;
  private lastSyncRv = '';
  private running = false;
  private stopped = false;
  private watchStartedAt = 0;
  private eventsInWatch = 0;
  private watchDelayMs: number;
  private gapUntil = -1;
  private relists = 0;

  constructor(o: ReflectorOptions<K>) {
    this.o = o;
    this.watchDelayMs = o.watchDelayMs;
    this.backoff = new BackoffManager(o.backoff, () => o.scheduler.now(), o.random);
  }

  /** The resourceVersion of the last list or watch event processed. */
  lastSyncResourceVersion(): string {
    return this.lastSyncRv;
  }

  /** How many lists were made (the first included). */
  listCount(): number {
    return this.relists;
  }

  isWatching(): boolean {
    return this.watch?.isOpen() ?? false;
  }

  run(): void {
    if (this.running) throw new Error(`informer ${this.o.name}: run() called twice`);
    this.running = true;
    const gen = this.gen;
    this.o.scheduler.schedule(0, `kube.reflector.listAndWatch ${this.o.name}`, () => this.listAndWatch(gen));
  }

  stop(): void {
    this.stopped = true;
    this.gen++;
    this.watch?.stop();
    this.watch = undefined;
  }

  setWatchDelay(ms: number): void {
    this.watchDelayMs = ms;
    this.watch?.setDelay(ms);
  }

  /** Fault: the watch loses every event for `durationMs` (including any watch opened meanwhile), then breaks with 410. */
  gap(durationMs: number): void {
    const now = this.o.scheduler.now();
    this.gapUntil = Math.max(this.gapUntil, now + durationMs);
    this.watch?.gap(this.gapUntil - now);
  }

  /** Fault: the API server breaks this informer's watch with 410 now (after events already sent), forcing a relist. */
  forceRelist(): void {
    if (this.watch !== undefined && this.watch.isOpen()) this.watch.reset();
  }

  private listAndWatch(gen: number): void {
    if (this.stopped || gen !== this.gen) return;
    const o = this.o;
    const list = o.api.list(o.kind, o.selector);
    const items = [...list.items];
    if (o.listOrder === 'random') shuffleInPlace(items, o.random);
    this.relists++;
    if (wantsTrace(o.trace, 'kube.reflector.list')) o.trace({ type: 'kube.reflector.list', at: o.scheduler.now(), fields: { informer: o.name, rv: list.resourceVersion, items: items.length, list: this.relists } });
    o.queue.replace(items);
    this.lastSyncRv = list.resourceVersion;
    o.onQueued();
    this.startResyncTimer(gen);
    this.startWatch(gen);
  }

  private startWatch(gen: number): void {
    const o = this.o;
    const now = o.scheduler.now();
    let timeoutMs: number | undefined;
    if (o.watchTimeout !== 'none') {
      // client-go draws a whole number of seconds in [min, max).
      const minS = Math.floor(o.watchTimeout.minMs / 1000);
      const maxS = Math.floor(o.watchTimeout.maxMs / 1000);
      timeoutMs = (maxS > minS ? minS + o.random.int(maxS - minS) : minS) * 1000;
    }
    this.watchStartedAt = now;
    this.eventsInWatch = 0;
    const w: WatchHandle = o.api.watch(
      o.kind,
      { ...o.selector, resourceVersion: this.lastSyncRv, delayMs: this.watchDelayMs, name: o.name, ...(timeoutMs !== undefined ? { timeoutMs } : {}) },
      (e) => this.onEvent(gen, w, e),
    );
    this.watch = w;
    if (this.gapUntil > now) w.gap(this.gapUntil - now);
  }

  private onEvent(gen: number, w: WatchHandle, e: WatchEvent<ObjectOf<K>>): void {
    if (this.stopped || gen !== this.gen || w !== this.watch) return;
    const q = this.o.queue;
    switch (e.type) {
      case 'ADDED':
        q.add(e.object);
        break;
      case 'MODIFIED':
        q.update(e.object);
        break;
      case 'DELETED':
        q.delete(e.object);
        break;
      case 'ERROR':
        this.endListAndWatch(`watch ended with error: ${e.object.message}`);
        return;
      case 'CLOSED':
        if (this.o.scheduler.now() - this.watchStartedAt < 1000 && this.eventsInWatch === 0) {
          this.endListAndWatch(`very short watch: ${this.o.name}: Unexpected watch close - watch lasted less than a second and no items received`);
        } else {
          this.startWatch(gen);
        }
        return;
      default:
        return assertNever(e);
    }
    this.eventsInWatch++;
    this.lastSyncRv = e.object.metadata.resourceVersion;
    this.o.onQueued();
  }

  private endListAndWatch(reason: string): void {
    this.watch?.stop();
    this.watch = undefined;
    const gen = ++this.gen;
    const delayMs = this.backoff.step();
    if (wantsTrace(this.o.trace, 'kube.reflector.backoff')) this.o.trace({ type: 'kube.reflector.backoff', at: this.o.scheduler.now(), fields: { informer: this.o.name, delayMs, reason } });
    this.o.scheduler.schedule(delayMs, `kube.reflector.listAndWatch ${this.o.name}`, () => this.listAndWatch(gen));
  }

  private startResyncTimer(gen: number): void {
    const period = this.o.resyncPeriodMs();
    if (period <= 0) return;
    this.o.scheduler.schedule(period, `kube.informer.resyncTick ${this.o.name}`, () => {
      if (this.stopped || gen !== this.gen) return;
      if (this.o.shouldResync()) {
        this.o.queue.resync();
        this.o.onQueued();
      }
      this.startResyncTimer(gen);
    });
  }
}

function assertNever(x: never): never {
  throw new Error(`unexpected watch event ${JSON.stringify(x)}`);
}
