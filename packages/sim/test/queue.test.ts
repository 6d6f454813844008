import { describe, expect, it } from 'vitest';
import { EventQueue, type QueuedStep } from '../src/queue.ts';

let seq = 0;
function step(timeMs: number, label: string, owner: string | null = null): QueuedStep {
  return { seq: ++seq, timeMs, kind: 'test', label, owner, run: () => undefined, cancelled: false };
}

describe('EventQueue', () => {
  it('should order future steps by time then sequence', () => {
    const q = new EventQueue();
    for (const [t, l] of [[30, 'c'], [10, 'a1'], [20, 'b'], [10, 'a2'], [5, 'z']] as const) q.push(step(t, l));
    const order: string[] = [];
    while (q.advance(Number.POSITIVE_INFINITY)) {
      const labels = q.ready.map((s) => s.label);
      order.push(`${q.readyTimeMs}:${labels.join(',')}`);
      while (q.ready.length > 0) q.take(0);
    }
    expect(order).toEqual(['5:z', '10:a1,a2', '20:b', '30:c']);
  });

  it('should not advance past the limit', () => {
    const q = new EventQueue();
    q.push(step(50, 'late'));
    expect(q.advance(49)).toBe(false);
    expect(q.readyTimeMs).toBe(0);
    expect(q.advance(50)).toBe(true);
    expect(q.readyTimeMs).toBe(50);
  });

  it('should skip cancelled steps and count only live ones', () => {
    const q = new EventQueue();
    const a = step(10, 'a');
    const b = step(10, 'b', 'agent-1');
    const c = step(20, 'c', 'agent-1');
    const d = step(20, 'd');
    for (const s of [a, b, c, d]) q.push(s);
    expect(q.size).toBe(4);
    q.cancel(a);
    expect(q.cancelOwned('agent-1')).toBe(2);
    expect(q.size).toBe(1);
    expect(q.advance(100)).toBe(true);
    expect(q.ready.map((s) => s.label)).toEqual(['d']);
  });

  it('should ignore cancelling a step that already ran', () => {
    const q = new EventQueue();
    const a = step(10, 'a');
    q.push(a);
    q.push(step(20, 'b'));
    q.advance(100);
    q.take(0);
    q.cancel(a);
    expect(q.size).toBe(1);
  });

  it('should drop cancelled future steps from memory once they are half the heap', () => {
    const q = new EventQueue();
    const doomed = Array.from({ length: 100 }, (_, i) => step(1000 + i, `d${i}`, 'dead#1'));
    for (const s of doomed) q.push(s);
    q.push(step(5, 'live'));
    expect(q.cancelOwned('dead#1')).toBe(100);
    expect(q.size).toBe(1);
    expect(q.advance(10_000)).toBe(true);
    expect(q.ready.map((s) => s.label)).toEqual(['live']);
    q.take(0);
    expect(q.advance(10_000)).toBe(false);
  });

  it('should put steps due now straight into the ready set', () => {
    const q = new EventQueue();
    q.push(step(10, 'a'));
    q.advance(100);
    q.push(step(10, 'now'));
    expect(q.ready.map((s) => s.label)).toEqual(['a', 'now']);
  });
});
