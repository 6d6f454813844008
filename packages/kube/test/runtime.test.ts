import { describe, expect, it } from 'vitest';
import { CounterIdSource, ManualScheduler, SeededRandom, shuffleInPlace } from '../src/index.ts';

describe('ManualScheduler', () => {
  it('should run tasks in (time, scheduling order) order and move the clock to each task', () => {
    const s = new ManualScheduler();
    const seen: string[] = [];
    s.schedule(10, 'b', () => seen.push(`b@${s.now()}`));
    s.schedule(5, 'a', () => seen.push(`a@${s.now()}`));
    s.schedule(10, 'c', () => seen.push(`c@${s.now()}`));
    s.schedule(0, 'z', () => {
      seen.push(`z@${s.now()}`);
      s.schedule(5, 'a2', () => seen.push(`a2@${s.now()}`));
    });
    expect(s.runUntilIdle()).toBe(5);
    expect(seen).toEqual(['z@0', 'a@5', 'a2@5', 'b@10', 'c@10']);
  });

  it('should run only tasks due within advance(ms) and then stand at now + ms', () => {
    const s = new ManualScheduler();
    const seen: number[] = [];
    s.schedule(3, 't', () => seen.push(3));
    s.schedule(7, 't', () => seen.push(7));
    expect(s.advance(5)).toBe(1);
    expect(s.now()).toBe(5);
    expect(seen).toEqual([3]);
    expect(s.pendingLabels()).toEqual(['7 t']);
    s.advance(2);
    expect(seen).toEqual([3, 7]);
  });

  it('should keep heap order across many interleaved inserts and pops', () => {
    const s = new ManualScheduler();
    const r = new SeededRandom(3);
    const out: [number, number][] = [];
    let seq = 0;
    for (let i = 0; i < 500; i++) {
      const mySeq = seq++;
      s.schedule(r.int(50), 'x', () => out.push([s.now(), mySeq]));
      if (i % 7 === 0) s.step();
    }
    s.runUntilIdle();
    for (let i = 1; i < out.length; i++) expect((out[i] as [number, number])[0]).toBeGreaterThanOrEqual((out[i - 1] as [number, number])[0]);
    expect(out).toHaveLength(500);
  });

  it('should refuse negative or fractional delays with a message naming the step', () => {
    const s = new ManualScheduler();
    expect(() => s.schedule(-1, 'kube.x', () => undefined)).toThrow(/delayMs of "kube.x" must be a non-negative integer/);
    expect(() => s.schedule(1.5, 'kube.y', () => undefined)).toThrow(RangeError);
  });

  it('should stop runUntilIdle after maxSteps when work keeps rescheduling itself', () => {
    const s = new ManualScheduler();
    const tick = (): void => s.schedule(1000, 'tick', tick);
    tick();
    expect(() => s.runUntilIdle({ maxSteps: 10 })).toThrow(/still busy after 10 steps.*tick/);
  });
});

describe('SeededRandom', () => {
  it('should give the same sequence for the same seed and a different one for another seed', () => {
    const a = new SeededRandom(42);
    const b = new SeededRandom(42);
    const c = new SeededRandom(43);
    const sa = Array.from({ length: 20 }, () => a.int(1000));
    const sb = Array.from({ length: 20 }, () => b.int(1000));
    const sc = Array.from({ length: 20 }, () => c.int(1000));
    expect(sa).toEqual(sb);
    expect(sa).not.toEqual(sc);
    expect(sa.every((v) => v >= 0 && v < 1000)).toBe(true);
  });

  it('should reject a non-positive bound', () => {
    expect(() => new SeededRandom(1).int(0)).toThrow(/positive integer/);
  });
});

describe('CounterIdSource and shuffleInPlace', () => {
  it('should hand out distinct uuid-shaped ids in order', () => {
    const ids = new CounterIdSource();
    expect([ids.next(), ids.next()]).toEqual(['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002']);
  });

  it('should shuffle deterministically per seed and keep every element', () => {
    const x = shuffleInPlace([1, 2, 3, 4, 5, 6, 7, 8], new SeededRandom(9));
    const y = shuffleInPlace([1, 2, 3, 4, 5, 6, 7, 8], new SeededRandom(9));
    expect(x).toEqual(y);
    expect([...x].sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(x).not.toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });
});
