import { describe, expect, it } from 'vitest';
import { RealFifo, SeededRandom, tombstone } from '../src/index.ts';
import { Known, pod, popAll } from './fifoHelpers.ts';

describe('RealFIFO', () => {
  it('should pop one delta at a time in arrival order, never merging a key', () => {
    const q = new RealFifo(new Known(), new SeededRandom(1));
    q.add(pod('a', 'u1', 1));
    q.add(pod('b', 'u2', 2));
    q.update(pod('a', 'u1', 3));
    q.delete(pod('a', 'u1', 4));
    q.delete(pod('a', 'u1', 5));
    expect(popAll(q)).toEqual([
      'ns/a: Added(ns/a uid=u1 rv=1)',
      'ns/b: Added(ns/b uid=u2 rv=2)',
      'ns/a: Updated(ns/a uid=u1 rv=3)',
      'ns/a: Deleted(ns/a uid=u1 rv=4)',
      'ns/a: Deleted(ns/a uid=u1 rv=5)',
    ]);
  });

  it('should queue a delete for a key neither cached nor queued', () => {
    const q = new RealFifo(new Known(), new SeededRandom(1));
    expect(q.delete(pod('ghost', 'u9', 9))).toBe(true);
    expect(popAll(q)).toEqual(['ns/ghost: Deleted(ns/ghost uid=u9 rv=9)']);
  });

  it('should queue the synthetic deletes of a relist before the Replaced items', () => {
    const known = new Known().set(pod('a', 'u1', 1), pod('b', 'u2', 2));
    const q = new RealFifo(known, new SeededRandom(1));
    q.replace([pod('b', 'u2', 2), pod('c', 'u3', 3)]);
    expect(popAll(q)).toEqual([
      'ns/a (initial): Deleted(DeletedFinalStateUnknown{ns/a uid=u1 rv=1})',
      'ns/b (initial): Replaced(ns/b uid=u2 rv=2)',
      'ns/c (initial): Replaced(ns/c uid=u3 rv=3)',
    ]);
    expect(q.hasSynced()).toBe(true);
  });

  it('should tombstone queued keys missing from the list in queue order, skipping those whose last delta is a delete', () => {
    const known = new Known().set(pod('k', 'u0', 1));
    const q = new RealFifo(known, new SeededRandom(1));
    q.replace([pod('k', 'u0', 1)]);
    popAll(q);
    q.add(pod('y', 'u2', 3));
    q.add(pod('x', 'u1', 2));
    q.add(pod('z', 'u3', 4));
    q.delete(pod('z', 'u3', 5));
    q.update(pod('y', 'u2', 6));
    q.replace([pod('k', 'u0', 1)]);
    expect(popAll(q)).toEqual([
      'ns/y: Added(ns/y uid=u2 rv=3)',
      'ns/x: Added(ns/x uid=u1 rv=2)',
      'ns/z: Added(ns/z uid=u3 rv=4)',
      'ns/z: Deleted(ns/z uid=u3 rv=5)',
      'ns/y: Updated(ns/y uid=u2 rv=6)',
      'ns/y: Deleted(DeletedFinalStateUnknown{ns/y uid=u2 rv=6})',
      'ns/x: Deleted(DeletedFinalStateUnknown{ns/x uid=u1 rv=2})',
      'ns/k: Replaced(ns/k uid=u0 rv=1)',
    ]);
  });

  it('should not tombstone a cached key that still has something queued', () => {
    const known = new Known().set(pod('a', 'u1', 1));
    const q = new RealFifo(known, new SeededRandom(1));
    q.delete(tombstone('ns/a', pod('a', 'u1', 1)));
    q.replace([]);
    expect(popAll(q)).toEqual(['ns/a: Deleted(DeletedFinalStateUnknown{ns/a uid=u1 rv=1})']);
  });

  it('should resync only cached keys that have nothing queued', () => {
    const known = new Known().set(pod('a', 'u1', 1), pod('b', 'u2', 2));
    const q = new RealFifo(known, new SeededRandom(1));
    q.update(pod('a', 'u1', 3));
    q.resync();
    expect(popAll(q)).toEqual(['ns/a: Updated(ns/a uid=u1 rv=3)', 'ns/b: Sync(ns/b uid=u2 rv=2)']);
  });

  it('should count the whole queue after the first relist as the initial population', () => {
    const q = new RealFifo(new Known(), new SeededRandom(1));
    q.replace([pod('a', 'u1', 1)]);
    q.add(pod('b', 'u2', 2));
    expect(popAll(q)).toEqual(['ns/a (initial): Replaced(ns/a uid=u1 rv=1)', 'ns/b: Added(ns/b uid=u2 rv=2)']);
  });
});
