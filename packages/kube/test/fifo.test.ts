import { describe, expect, it } from 'vitest';
import { ArrivalQueue, InitialPopulation } from '../src/fifo.ts';

describe('ArrivalQueue', () => {
  it('should give items back oldest first across the compaction of its array', () => {
    const q = new ArrivalQueue<number>();
    const popped: number[] = [];
    for (let i = 0; i < 1000; i++) {
      q.push(i);
      if (i % 3 !== 0) popped.push(q.shift() as number);
    }
    expect(q.length).toBe(1000 - popped.length);
    expect([...q]).toEqual(Array.from({ length: q.length }, (_, k) => popped.length + k));
    for (let v = q.shift(); v !== undefined; v = q.shift()) popped.push(v);
    expect(popped).toEqual(Array.from({ length: 1000 }, (_, k) => k));
    expect(q.length).toBe(0);
    expect(q.shift()).toBeUndefined();
  });
});

describe('InitialPopulation', () => {
  it('should sync only after the first list has been popped item by item', () => {
    const p = new InitialPopulation();
    expect(p.synced).toBe(false);
    p.replaced(2);
    expect(p.synced).toBe(false);
    p.popped();
    expect(p.synced).toBe(false);
    p.popped();
    expect(p.synced).toBe(true);
  });

  it('should count only the first list, and sync at once when events came before any list', () => {
    const later = new InitialPopulation();
    later.replaced(0);
    expect(later.synced).toBe(true);
    later.replaced(5);
    expect(later.synced).toBe(true);
    const early = new InitialPopulation();
    early.touched();
    early.replaced(3);
    expect(early.synced).toBe(true);
  });
});
