/**
 * client-go's workqueue rate limiters (k8s.io/client-go/util/workqueue/default_rate_limiters.go),
 * in simulated milliseconds. `when(item)` both answers "how long to wait" and records a failure.
 */

export interface RateLimiter<T> {
  /** How long (ms) the item should wait before it is re-added; counts as one more requeue. */
  when(item: T): number;
  /** The item succeeded: stop tracking it. */
  forget(item: T): void;
  /** Failures recorded for the item since it was last forgotten. */
  numRequeues(item: T): number;
}

/** `baseDelay × 2^failures`, capped at `maxDelay` (client-go's `ItemExponentialFailureRateLimiter`). */
export class ItemExponentialFailureRateLimiter<T> implements RateLimiter<T> {
  private readonly failures = new Map<T, number>();

  constructor(
    readonly baseDelayMs: number,
    readonly maxDelayMs: number,
  ) {
    checkMs(baseDelayMs, 'baseDelayMs');
    checkMs(maxDelayMs, 'maxDelayMs');
  }

  when(item: T): number {
    const exp = this.failures.get(item) ?? 0;
    this.failures.set(item, exp + 1);
    const backoff = this.baseDelayMs * 2 ** exp;
    return backoff > this.maxDelayMs ? this.maxDelayMs : backoff;
  }

  forget(item: T): void {
    this.failures.delete(item);
  }

  numRequeues(item: T): number {
    return this.failures.get(item) ?? 0;
  }
}

/** `fastDelay` for the first `maxFastAttempts` failures, then `slowDelay` (client-go's `ItemFastSlowRateLimiter`). */
export class ItemFastSlowRateLimiter<T> implements RateLimiter<T> {
  private readonly failures = new Map<T, number>();

  constructor(
    readonly fastDelayMs: number,
    readonly slowDelayMs: number,
    readonly maxFastAttempts: number,
  ) {
    checkMs(fastDelayMs, 'fastDelayMs');
    checkMs(slowDelayMs, 'slowDelayMs');
  }

  when(item: T): number {
    const n = (this.failures.get(item) ?? 0) + 1;
    this.failures.set(item, n);
    return n <= this.maxFastAttempts ? this.fastDelayMs : this.slowDelayMs;
  }

  forget(item: T): void {
    this.failures.delete(item);
  }

  numRequeues(item: T): number {
    return this.failures.get(item) ?? 0;
  }
}

/**
 * An overall token bucket shared by all items (client-go's `BucketRateLimiter` over
 * golang.org/x/time/rate): `qps` tokens per second, at most `burst` saved up; each `when` takes a
 * token and waits until it exists.
 */
export class BucketRateLimiter<T> implements RateLimiter<T> {
  /** Tokens × 1000, so integer qps and integer milliseconds stay exact. */
  private units: number;
  private last: number;

  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly clock: { now(): number },
  ) {
    if (!(qps > 0) || !Number.isFinite(qps)) throw new RangeError(`qps must be a positive number, got ${qps}`);
    if (!Number.isInteger(burst) || burst < 1) throw new RangeError(`burst must be a positive integer, got ${burst}`);
    this.units = burst * 1000;
    this.last = clock.now();
  }

  when(_item: T): number {
    const now = this.clock.now();
    const elapsed = Math.max(0, now - this.last);
    this.units = Math.min(this.burst * 1000, this.units + elapsed * this.qps);
    this.last = now;
    this.units -= 1000;
    return this.units >= 0 ? 0 : Math.ceil(-this.units / this.qps);
  }

  forget(_item: T): void {}

  numRequeues(_item: T): number {
    return 0;
  }
}

/** The largest delay of several limiters (client-go's `MaxOfRateLimiter`). Every limiter records the failure. */
export class MaxOfRateLimiter<T> implements RateLimiter<T> {
  private readonly limiters: readonly RateLimiter<T>[];

  constructor(...limiters: RateLimiter<T>[]) {
    this.limiters = limiters;
  }

  when(item: T): number {
    let out = 0;
    for (const l of this.limiters) out = Math.max(out, l.when(item));
    return out;
  }

  forget(item: T): void {
    for (const l of this.limiters) l.forget(item);
  }

  numRequeues(item: T): number {
    let out = 0;
    for (const l of this.limiters) out = Math.max(out, l.numRequeues(item));
    return out;
  }
}

/**
 * client-go's `DefaultControllerRateLimiter`: per-item exponential backoff from 5 ms to 1000 s,
 * and an overall bucket of 10 qps with a burst of 100; the larger delay wins.
 *
 * @example
 * ```ts
 * const q = new WorkQueue<string>({ scheduler, rateLimiter: defaultControllerRateLimiter(scheduler) });
 * ```
 */
export function defaultControllerRateLimiter<T>(clock: { now(): number }): RateLimiter<T> {
  return new MaxOfRateLimiter<T>(new ItemExponentialFailureRateLimiter<T>(5, 1_000_000), new BucketRateLimiter<T>(10, 100, clock));
}

function checkMs(v: number, what: string): void {
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${what} must be a non-negative integer number of milliseconds, got ${v}`);
}
