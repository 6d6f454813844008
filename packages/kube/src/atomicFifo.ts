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
import { deltaKey, describeDelta, type AtomicBatch, type DeleteArg, type Delta, type DeltaType, type InformerQueue, type PopResult } from './fifo.ts';
import type { KubeObject } from './objects.ts';

type Item<T extends KubeObject> = { readonly delta: Delta<T> } | { readonly batch: AtomicBatch<T> };

export class AtomicFifo<T extends KubeObject> implements InformerQueue<T> {
  readonly mode = 'AtomicFIFO' as const;
  private items: Item<T>[] = [];
  private head = 0;
  private populated = false;
  private initialPopulationCount = 0;
  private synced = false;

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
    if (!this.populated) {
      this.populated = true;
      this.initialPopulationCount = this.len();
      this.checkSynced();
    }
  }

  resync(): void {
    this.items.push({ batch: { type: 'SyncAll' } });
  }

  pop(): PopResult<T> | undefined {
    if (this.head >= this.items.length) return undefined;
    const isInInitialList = !this.synced;
    const item = this.items[this.head] as Item<T>;
    this.items[this.head] = undefined as unknown as Item<T>;
    this.head++;
    if (this.head > 256 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    if (this.initialPopulationCount > 0) {
      this.initialPopulationCount--;
      this.checkSynced();
    }
    if ('batch' in item) return { key: '', deltas: [], isInInitialList, batch: item.batch };
    return { key: deltaKey(item.delta.object), deltas: [item.delta], isInInitialList };
  }

  len(): number {
    return this.items.length - this.head;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  dump(): string[] {
    const out: string[] = [];
    for (let i = this.head; i < this.items.length; i++) {
      const it = this.items[i] as Item<T>;
      out.push('batch' in it ? (it.batch.type === 'ReplacedAll' ? `ReplacedAll(${it.batch.objects.length} objects)` : 'SyncAll') : describeDelta(it.delta));
    }
    return out;
  }

  private push(type: DeltaType, obj: DeleteArg<T>): void {
    this.populated = true;
    this.checkSynced();
    this.items.push({ delta: { type, object: obj } });
  }

  private checkSynced(): void {
    if (!this.synced && this.populated && this.initialPopulationCount === 0) this.synced = true;
  }
}
