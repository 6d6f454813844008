import { describe, expect, it } from 'vitest';
import { DeltaFifo, SeededRandom, tombstone } from '../src/index.ts';
import { Known, pod, popAll } from './fifoHelpers.ts';

describe('DeltaFIFO', () => {
  it('should pop one key with all its pending deltas, oldest first, keys in first-queued order', () => {
    const q = new DeltaFifo(new Known(), new SeededRandom(1));
    q.add(pod('a', 'u1', 1));
    q.add(pod('b', 'u2', 2));
    q.update(pod('a', 'u1', 3));
    expect(q.len()).toBe(2);
    expect(popAll(q)).toEqual(['ns/a: Added(ns/a uid=u1 rv=1), Updated(ns/a uid=u1 rv=3)', 'ns/b: Added(ns/b uid=u2 rv=2)']);
  });

  it('should merge only two trailing Deleted deltas, keeping the older real one', () => {
    const q = new DeltaFifo(new Known(), new SeededRandom(1));
    q.add(pod('a', 'u1', 1));
    q.delete(pod('a', 'u1', 2));
    q.delete(pod('a', 'u1', 3));
    q.add(pod('a', 'u2', 4));
    expect(popAll(q)).toEqual(['ns/a: Added(ns/a uid=u1 rv=1), Deleted(ns/a uid=u1 rv=2), Added(ns/a uid=u2 rv=4)']);
  });

  it('should let a real Deleted replace a trailing tombstone, and keep a real one over a later tombstone', () => {
    const known = new Known().set(pod('a', 'u1', 1), pod('b', 'u2', 2));
    const q = new DeltaFifo(known, new SeededRandom(1));
    q.delete(tombstone('ns/a', pod('a', 'u1', 1)));
    q.delete(pod('a', 'u1', 5));
    q.delete(pod('b', 'u2', 6));
    q.delete(tombstone('ns/b', pod('b', 'u2', 2)));
    expect(popAll(q)).toEqual(['ns/a: Deleted(ns/a uid=u1 rv=5)', 'ns/b: Deleted(ns/b uid=u2 rv=6)']);
  });

  it('should drop a delete for a key neither cached nor queued', () => {
    const q = new DeltaFifo(new Known(), new SeededRandom(1));
    expect(q.delete(pod('ghost', 'u9', 9))).toBe(false);
    expect(q.len()).toBe(0);
    const q2 = new DeltaFifo(new Known().set(pod('a', 'u1', 1)), new SeededRandom(1));
    expect(q2.delete(pod('a', 'u1', 2))).toBe(true);
  });

  it('should count the first list as the initial population and flag those pops isInInitialList', () => {
    const q = new DeltaFifo(new Known(), new SeededRandom(1));
    expect(q.hasSynced()).toBe(false);
    q.replace([pod('a', 'u1', 1), pod('b', 'u2', 1)]);
    q.add(pod('c', 'u3', 2));
    expect(q.hasSynced()).toBe(false);
    expect(popAll(q)).toEqual(['ns/a (initial): Replaced(ns/a uid=u1 rv=1)', 'ns/b (initial): Replaced(ns/b uid=u2 rv=1)', 'ns/c: Added(ns/c uid=u3 rv=2)']);
    expect(q.hasSynced()).toBe(true);
  });

  it('should be synced at once by an empty first list', () => {
    const q = new DeltaFifo(new Known(), new SeededRandom(1));
    q.replace([]);
    expect(q.hasSynced()).toBe(true);
  });

  it('should tombstone, on relist, every cached key missing from the list with its cached state', () => {
    const known = new Known().set(pod('a', 'u1', 1), pod('b', 'u2', 2));
    const q = new DeltaFifo(known, new SeededRandom(1));
    q.replace([pod('b', 'u2', 2)]);
    expect(popAll(q)).toEqual([
      'ns/b (initial): Replaced(ns/b uid=u2 rv=2)',
      'ns/a (initial): Deleted(DeletedFinalStateUnknown{ns/a uid=u1 rv=1})',
    ]);
  });

  it('should tombstone a queued key missing from the list with its newest queued state', () => {
    const known = new Known().set(pod('a', 'u1', 1));
    const q = new DeltaFifo(known, new SeededRandom(1));
    q.replace([pod('a', 'u1', 1)]);
    popAll(q);
    q.update(pod('a', 'u1', 4));
    q.add(pod('n', 'u5', 5)); // queued, never cached
    q.replace([]);
    expect(popAll(q)).toEqual([
      'ns/a: Updated(ns/a uid=u1 rv=4), Deleted(DeletedFinalStateUnknown{ns/a uid=u1 rv=4})',
      'ns/n: Added(ns/n uid=u5 rv=5), Deleted(DeletedFinalStateUnknown{ns/n uid=u5 rv=5})',
    ]);
  });

  it('should keep a queued real delete rather than add a tombstone on relist', () => {
    const known = new Known().set(pod('a', 'u1', 1));
    const q = new DeltaFifo(known, new SeededRandom(1));
    q.delete(pod('a', 'u1', 3));
    q.replace([]);
    expect(popAll(q)).toEqual(['ns/a: Deleted(ns/a uid=u1 rv=3)']);
  });

  it('should put Replaced after deltas already queued for the same key', () => {
    const known = new Known().set(pod('a', 'u1', 1));
    const q = new DeltaFifo(known, new SeededRandom(1));
    q.delete(pod('a', 'u1', 3));
    q.replace([pod('a', 'u2', 5)]);
    expect(popAll(q)).toEqual(['ns/a: Deleted(ns/a uid=u1 rv=3), Replaced(ns/a uid=u2 rv=5)']);
  });

  it('should order the relist tombstones by the random source (Go map order), the same for the same seed', () => {
    const keys = (seed: number): string[] => {
      const known = new Known();
      for (let i = 0; i < 8; i++) known.set(pod(`p${i}`, `u${i}`, i + 1));
      const q = new DeltaFifo(known, new SeededRandom(seed));
      q.replace([]);
      return popAll(q).map((l) => l.slice(0, 5));
    };
    expect(keys(1)).toEqual(keys(1));
    expect(new Set([keys(1).join(), keys(2).join(), keys(3).join()]).size).toBeGreaterThan(1);
    expect([...keys(1)].sort()).toEqual(['ns/p0', 'ns/p1', 'ns/p2', 'ns/p3', 'ns/p4', 'ns/p5', 'ns/p6', 'ns/p7']);
  });

  it('should resync only cached keys with nothing pending', () => {
    const known = new Known().set(pod('a', 'u1', 1), pod('b', 'u2', 2));
    const q = new DeltaFifo(known, new SeededRandom(1));
    q.update(pod('a', 'u1', 3));
    q.resync();
    expect(popAll(q).sort()).toEqual(['ns/a: Updated(ns/a uid=u1 rv=3)', 'ns/b: Sync(ns/b uid=u2 rv=2)']);
  });
});
