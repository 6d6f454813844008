import { describe, expect, it } from 'vitest';
import {
  BucketRateLimiter,
  ItemExponentialFailureRateLimiter,
  ItemFastSlowRateLimiter,
  ManualScheduler,
  MaxOfRateLimiter,
  WorkQueue,
  defaultControllerRateLimiter,
  type WorkQueueSignal,
} from '../src/index.ts';

function queue(rateLimiter?: ItemExponentialFailureRateLimiter<string>) {
  const sched = new ManualScheduler();
  const q = new WorkQueue<string>({ scheduler: sched, ...(rateLimiter !== undefined ? { rateLimiter } : {}) });
  const signals: WorkQueueSignal[] = [];
  q.onReady((s) => signals.push(s));
  return { sched, q, signals };
}

function drain(q: WorkQueue<string>): string[] {
  const out: string[] = [];
  for (let k = q.get(); k !== undefined; k = q.get()) {
    out.push(k);
    q.done(k);
  }
  return out;
}

describe('workqueue: queue semantics', () => {
  it('should not duplicate a key added again while it waits, and hand keys out in FIFO order', () => {
    const { q } = queue();
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.len()).toBe(2);
    expect(drain(q)).toEqual(['a', 'b']);
    expect(q.get()).toBeUndefined();
  });

  it('should process a key added while it is being processed once more, after done', () => {
    const { q } = queue();
    q.add('a');
    expect(q.get()).toBe('a');
    q.add('a');
    q.add('a');
    expect(q.len()).toBe(0); // not handed to a second worker while the first holds it
    expect(q.get()).toBeUndefined();
    q.done('a');
    expect(q.len()).toBe(1);
    expect(q.get()).toBe('a');
    q.done('a');
    expect(q.get()).toBeUndefined();
  });

  it('should signal onReady when an item becomes available, including on done of a dirty key', () => {
    const { q, signals } = queue();
    q.add('a');
    q.add('a');
    q.get();
    q.add('a');
    q.done('a');
    expect(signals).toEqual(['item', 'item']);
  });

  it('should ignore adds after shutDown but still hand out what was queued, then report shutdown', () => {
    const { q, signals } = queue();
    q.add('a');
    q.add('b');
    q.shutDown();
    q.add('c');
    expect(q.shuttingDown()).toBe(true);
    expect(drain(q)).toEqual(['a', 'b']);
    expect(q.get()).toBeUndefined();
    expect(signals).toEqual(['item', 'item', 'shutdown']);
  });

  it('should finish a drain once nothing is being processed', () => {
    const { q, signals } = queue();
    q.add('a');
    q.add('b');
    const a = q.get() as string;
    q.shutDownWithDrain();
    expect(q.isDrained()).toBe(false);
    q.done(a);
    expect(q.isDrained()).toBe(true);
    expect(signals).toEqual(['item', 'item', 'shutdown', 'drained']);
    expect(q.get()).toBe('b'); // queued items are still handed out
  });

  it('should drain at once when nothing is being processed', () => {
    const { q, signals } = queue();
    q.shutDownWithDrain();
    expect(signals).toEqual(['shutdown', 'drained']);
  });

  it('should, like client-go, re-queue a dirty key on a done without get (a double done hands it out twice)', () => {
    const { q } = queue();
    q.add('a');
    q.done('a');
    expect(q.len()).toBe(2);
    expect([q.get(), q.get()]).toEqual(['a', 'a']);
  });
});

describe('workqueue: delays and rate limiting', () => {
  it('should add after the delay as a scheduled step, keeping the earliest of several delays', () => {
    const { q, sched } = queue();
    q.addAfter('a', 100);
    q.addAfter('a', 50);
    q.addAfter('a', 200);
    expect(q.len()).toBe(0);
    expect(q.waitingCount()).toBe(1);
    sched.advance(49);
    expect(q.len()).toBe(0);
    sched.advance(1);
    expect(q.len()).toBe(1);
    sched.runUntilIdle();
    expect(drain(q)).toEqual(['a']);
  });

  it('should add at once for a non-positive delay and drop delayed adds at shutdown', () => {
    const { q, sched } = queue();
    q.addAfter('a', 0);
    expect(q.len()).toBe(1);
    q.addAfter('b', 10);
    q.shutDown();
    sched.runUntilIdle();
    expect(drain(q)).toEqual(['a']);
  });

  it('should back off per item exponentially (5 ms × 2^n) and start over after forget', () => {
    const { q, sched } = queue(new ItemExponentialFailureRateLimiter(5, 1_000_000));
    const at: number[] = [];
    for (let i = 0; i < 4; i++) {
      q.addRateLimited('a');
      sched.runUntilIdle();
      at.push(sched.now());
      drain(q);
    }
    expect(at).toEqual([5, 15, 35, 75]);
    expect(q.numRequeues('a')).toBe(4);
    q.forget('a');
    expect(q.numRequeues('a')).toBe(0);
    q.addRateLimited('a');
    sched.runUntilIdle();
    expect(sched.now()).toBe(80);
  });

  it('should cap the exponential backoff', () => {
    const r = new ItemExponentialFailureRateLimiter<string>(5, 1_000_000);
    const delays = Array.from({ length: 30 }, () => r.when('x'));
    expect(delays.slice(0, 3)).toEqual([5, 10, 20]);
    expect(delays[28]).toBe(1_000_000);
  });

  it('should let the default controller limiter take the larger of the item backoff and the 10 qps / 100 burst bucket', () => {
    const s = new ManualScheduler();
    const r = defaultControllerRateLimiter<string>(s);
    const delays = Array.from({ length: 102 }, (_, i) => r.when(`k${i}`));
    expect(delays.slice(0, 100).every((d) => d === 5)).toBe(true); // burst covers them; item backoff 5 ms wins
    expect(delays.slice(100)).toEqual([100, 200]);
    s.advance(1000);
    expect(r.when('k0')).toBe(10); // bucket refilled by 10 tokens; second failure of k0
    expect(r.numRequeues('k0')).toBe(2);
  });

  it('should implement the token bucket exactly with integer qps', () => {
    const s = new ManualScheduler();
    const b = new BucketRateLimiter<string>(2, 1, s);
    expect([b.when('a'), b.when('a'), b.when('a')]).toEqual([0, 500, 1000]);
    s.advance(1500);
    expect(b.when('a')).toBe(0);
  });

  it('should use the fast delay for the first attempts, then the slow one', () => {
    const r = new ItemFastSlowRateLimiter<string>(10, 1000, 2);
    expect([r.when('a'), r.when('a'), r.when('a')]).toEqual([10, 10, 1000]);
    const m = new MaxOfRateLimiter(r, new ItemExponentialFailureRateLimiter<string>(1, 100));
    expect(m.when('b')).toBe(10);
    expect(m.numRequeues('b')).toBe(1);
    m.forget('b');
    expect(m.numRequeues('b')).toBe(0);
  });
});
