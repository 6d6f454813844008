/**
 * client-go's RealFIFO with `AtomicEvents` (the `AtomicFIFO` feature gate, on by default in 1.36).
 *
 * - Watch events are queued one delta each, in arrival order, as in RealFIFO; deletes are always
 *   queued.
 * - A relist queues one `ReplacedAll` item holding the whole list, after whatever is already
 *   queued. When it is processed, the informer replaces its cache at once, then calls `onDelete`
 *   with a tombstone for every cached key missing from the list, then `onUpdate`/`onAdd` for
 *   every listed object.
 * - A resync queues one `SyncAll` item: `onUpdate(x, x)` for every cached object.
 * - The queue has no view of the cache (client-go forbids `knownObjects` here).
 */
import { ArrivalQueue, deltaKey, describeDelta, InitialPopulation, type AtomicBatch, type DeleteArg, type Delta, type DeltaType, type InformerQueue, type PopResult } from './fifo.ts';
import type { KubeObject } from './objects.ts';

type Item<T extends KubeObject> = { readonly delta: Delta<T> } | { readonly batch: AtomicBatch<T> };

export class AtomicFifo<T extends KubeObject> implements InformerQueue<T> {
  readonly mode = 'AtomicFIFO' as const;
  private readonly items = new ArrivalQueue<Item<T>>();
  private readonly initial = new InitialPopulation();

  add(obj: T): void {
    this.push('Added', obj);
  }

  update(obj: T): void {
    this.push('Updated', obj);
  }

  delete(obj: DeleteArg<T>): boolean {
    this.push('Deleted', obj);
    return true;
  }

  replace(list: readonly T[]): void {
    this.items.push({ batch: { type: 'ReplacedAll', objects: list } });
    this.initial.replaced(this.items.length);
  }

  resync(): void {
    this.items.push({ batch: { type: 'SyncAll' } });
  }

  pop(): PopResult<T> | undefined {
    const isInInitialList = !this.initial.synced;
    const item = this.items.shift();
    if (item === undefined) return undefined;
    this.initial.popped();
    if ('batch' in item) return { key: '', deltas: [], isInInitialList, batch: item.batch };
    return { key: deltaKey(item.delta.object), deltas: [item.delta], isInInitialList };
  }

  len(): number {
    return this.items.length;
  }

  hasSynced(): boolean {
    return this.initial.synced;
  }

  dump(): string[] {
    const out: string[] = [];
    for (const it of this.items) {
      out.push('batch' in it ? (it.batch.type === 'ReplacedAll' ? `ReplacedAll(${it.batch.objects.length} objects)` : 'SyncAll') : describeDelta(it.delta));
    }
    return out;
  }

  private push(type: DeltaType, obj: DeleteArg<T>): void {
    this.initial.touched();
    this.items.push({ delta: { type, object: obj } });
  }
}
