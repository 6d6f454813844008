import { describe, expect, it } from 'vitest';
import { AtomicFifo, describeDelta, type Pod, type PopResult } from '../src/index.ts';
import { pod } from './fifoHelpers.ts';

function popAll(q: AtomicFifo<Pod>): string[] {
  const out: string[] = [];
  for (let r: PopResult<Pod> | undefined = q.pop(); r !== undefined; r = q.pop()) {
    const what = r.batch !== undefined ? (r.batch.type === 'ReplacedAll' ? `ReplacedAll[${r.batch.objects.map((o) => o.metadata.name).join(',')}]` : 'SyncAll') : r.deltas.map(describeDelta).join(', ');
    out.push(`${what}${r.isInInitialList ? ' (initial)' : ''}`);
  }
  return out;
}

describe('AtomicFIFO', () => {
  it('should queue a relist as one ReplacedAll after what is already queued, and a resync as one SyncAll', () => {
    const q = new AtomicFifo<Pod>();
    q.replace([pod('a', 'u1', 1)]);
    q.update(pod('a', 'u1', 2));
    q.delete(pod('ghost', 'u9', 3));
    q.replace([pod('a', 'u1', 2), pod('b', 'u2', 4)]);
    q.resync();
    expect(popAll(q)).toEqual(['ReplacedAll[a] (initial)', 'Updated(ns/a uid=u1 rv=2)', 'Deleted(ns/ghost uid=u9 rv=3)', 'ReplacedAll[a,b]', 'SyncAll']);
    expect(q.hasSynced()).toBe(true);
  });

  it('should be synced once the single initial ReplacedAll is popped', () => {
    const q = new AtomicFifo<Pod>();
    q.replace([pod('a', 'u1', 1), pod('b', 'u2', 2)]);
    expect(q.len()).toBe(1);
    expect(q.hasSynced()).toBe(false);
    q.pop();
    expect(q.hasSynced()).toBe(true);
  });
});
