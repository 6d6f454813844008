/**
 * client-go's rate-limiting workqueue (k8s.io/client-go/util/workqueue: queue.go,
 * delaying_queue.go, rate_limiting_queue.go) as a non-blocking data structure on the simulated
 * clock.
 *
 * - `add` of an item already waiting is a no-op (dedup); of an item being processed, it marks it
 *   dirty and the item is queued again only when the worker calls `done`.
 * - `get` returns the next item, or `undefined` when none is ready (client-go's worker would
 *   block). Returned `undefined` with `shuttingDown()` true is client-go's `shutdown == true`:
 *   the worker should exit. Items still queued at shutdown are still handed out.
 * - `addAfter` adds when the delay elapses, one scheduled step per call; several pending delays
 *   for one item keep the earliest. `addRateLimited` waits as long as the rate limiter says.
 * - `onReady` tells the engine when a worker blocked in `get` could proceed (an item became
 *   available, the queue shut down, or a drain finished).
 */
import { defaultControllerRateLimiter, type RateLimiter } from './rateLimiter.ts';
import type { Scheduler } from './runtime.ts';

export interface WorkQueueOptions<T> {
  readonly scheduler: Scheduler;
  /** Defaults to client-go's `DefaultControllerRateLimiter`. */
  readonly rateLimiter?: RateLimiter<T>;
  /** Names the queue's steps in traces (`kube.workqueue.addAfter <name>`). */
  readonly name?: string;
}

/** Why `onReady` listeners are called. */
export type WorkQueueSignal = 'item' | 'shutdown' | 'drained';

/**
 * @example
 * ```ts
 * const q = new WorkQueue<string>({ scheduler });
 * q.onReady(() => wakeAWorker());
 * q.add('default/web-0');
 * const key = q.get();          // 'default/web-0'
 * // … reconcile; on error: q.addRateLimited(key); else q.forget(key);
 * q.done(key);
 * ```
 */
export class WorkQueue<T> {
  readonly name: string;
  private readonly scheduler: Scheduler;
  private readonly rateLimiter: RateLimiter<T>;
  private queue: T[] = [];
  private head = 0;
  private readonly dirty = new Set<T>();
  private readonly processing = new Set<T>();
  private readonly waiting = new Map<T, { readyAt: number; token: number }>();
  private readonly listeners: ((s: WorkQueueSignal) => void)[] = [];
  private shutting = false;
  private drain = false;
  private token = 0;

  constructor(opts: WorkQueueOptions<T>) {
    this.scheduler = opts.scheduler;
    this.rateLimiter = opts.rateLimiter ?? defaultControllerRateLimiter<T>(opts.scheduler);
    this.name = opts.name ?? 'workqueue';
  }

  /** Marks the item as needing processing. */
  add(item: T): void {
    if (this.shutting) return;
    if (this.dirty.has(item)) return;
    this.dirty.add(item);
    if (this.processing.has(item)) return;
    this.queue.push(item);
    this.signal('item');
  }

  /** Items waiting to be handed out (not counting those being processed or delayed). */
  len(): number {
    return this.queue.length - this.head;
  }

  /** The next item, now marked as being processed; `undefined` when none is ready. */
  get(): T | undefined {
    if (this.head >= this.queue.length) return undefined;
    const item = this.queue[this.head] as T;
    this.queue[this.head] = undefined as T;
    this.head++;
    if (this.head > 256 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    this.processing.add(item);
    this.dirty.delete(item);
    return item;
  }

  /**
   * The worker finished the item. If it was added again meanwhile, it is queued now. (As in
   * client-go, `done` for an item that was not being processed still re-queues it if dirty,
   * even when it is already queued: a double `done` can hand one key to two workers.)
   */
  done(item: T): void {
    this.processing.delete(item);
    if (this.dirty.has(item)) {
      this.queue.push(item);
      this.signal('item');
    }
    if (this.drain && this.processing.size === 0) {
      this.drain = false;
      this.signal('drained');
    }
  }

  /** Stops accepting items; queued items are still handed out. */
  shutDown(): void {
    const wasDraining = this.drain;
    this.drain = false;
    this.shutting = true;
    this.waiting.clear();
    this.signal('shutdown');
    if (wasDraining) this.signal('drained');
  }

  /**
   * Like `shutDown`, and the drain completes once no item is being processed (client-go blocks
   * the caller until then; here `isDrained()` turns true and listeners hear `'drained'`).
   */
  shutDownWithDrain(): void {
    this.shutting = true;
    this.waiting.clear();
    this.signal('shutdown');
    if (this.processing.size === 0) {
      this.signal('drained');
    } else {
      this.drain = true;
    }
  }

  shuttingDown(): boolean {
    return this.shutting;
  }

  /** True after shutdown once nothing is being processed. */
  isDrained(): boolean {
    return this.shutting && this.processing.size === 0;
  }

  /** Items currently handed out and not yet `done`. */
  processingCount(): number {
    return this.processing.size;
  }

  /** Adds the item after `delayMs` (at once if ≤ 0). */
  addAfter(item: T, delayMs: number): void {
    if (this.shutting) return;
    if (delayMs <= 0) {
      this.add(item);
      return;
    }
    if (!Number.isSafeInteger(delayMs)) throw new RangeError(`addAfter: delayMs must be an integer number of milliseconds, got ${delayMs}`);
    const readyAt = this.scheduler.now() + delayMs;
    const existing = this.waiting.get(item);
    if (existing !== undefined && existing.readyAt <= readyAt) return;
    const token = ++this.token;
    this.waiting.set(item, { readyAt, token });
    this.scheduler.schedule(delayMs, `kube.workqueue.addAfter ${this.name}`, () => {
      const w = this.waiting.get(item);
      if (w === undefined || w.token !== token) return;
      this.waiting.delete(item);
      this.add(item);
    });
  }

  /** Adds the item after the delay the rate limiter gives (and counts a requeue). */
  addRateLimited(item: T): void {
    this.addAfter(item, this.rateLimiter.when(item));
  }

  /** The item succeeded: its backoff starts over. */
  forget(item: T): void {
    this.rateLimiter.forget(item);
  }

  numRequeues(item: T): number {
    return this.rateLimiter.numRequeues(item);
  }

  /** Items scheduled by `addAfter` and not yet added. */
  waitingCount(): number {
    return this.waiting.size;
  }

  /** Registers a listener for "a blocked worker could proceed now"; returns an unsubscribe function. */
  onReady(listener: (s: WorkQueueSignal) => void): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  private signal(s: WorkQueueSignal): void {
    for (const l of [...this.listeners]) l(s);
  }
}
