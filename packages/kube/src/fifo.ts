/**
 * What the informer queues share: deltas, tombstones, the "known objects" view of the cache, and
 * the queue contract both client-go queues (DeltaFIFO and RealFIFO) fulfil.
 */
import { freeze } from 'immer';
import { objectKey, type KubeObject } from './objects.ts';

/** client-go's `DeltaType` (the AtomicFIFO-only `ReplacedAll`, `SyncAll` and `Bookmark` are not modelled). */
export type DeltaType = 'Added' | 'Updated' | 'Deleted' | 'Replaced' | 'Sync';

/**
 * client-go's `DeletedFinalStateUnknown`: what `onDelete` receives when the informer learned of a
 * deletion only by relisting. `obj` is the last state the informer knew, which may be stale.
 */
export interface DeletedFinalStateUnknown<T extends KubeObject = KubeObject> {
  readonly kind: 'DeletedFinalStateUnknown';
  readonly key: string;
  readonly obj: T;
}

/** What `onDelete` receives: the deleted object, or a tombstone. */
export type DeleteArg<T extends KubeObject = KubeObject> = T | DeletedFinalStateUnknown<T>;

export function tombstone<T extends KubeObject>(key: string, obj: T): DeletedFinalStateUnknown<T> {
  return freeze({ kind: 'DeletedFinalStateUnknown', key, obj });
}

/** True when `onDelete` got a tombstone rather than the object. */
export function isTombstone<T extends KubeObject>(x: DeleteArg<T>): x is DeletedFinalStateUnknown<T> {
  return x.kind === 'DeletedFinalStateUnknown';
}

/**
 * The object behind a delete notification, unwrapping a tombstone: what handlers usually do
 * first (`if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok { obj = tombstone.Obj }`).
 */
export function deletedObject<T extends KubeObject>(x: DeleteArg<T>): T {
  return isTombstone(x) ? x.obj : x;
}

export interface Delta<T extends KubeObject = KubeObject> {
  readonly type: DeltaType;
  readonly object: DeleteArg<T>;
}

/** The key of an object or tombstone (`namespace/name`). */
export function deltaKey<T extends KubeObject>(o: DeleteArg<T>): string {
  return isTombstone(o) ? o.key : objectKey(o);
}

/** client-go's `KeyListerGetter`: the informer cache as the queue sees it. */
export interface KnownObjects<T extends KubeObject> {
  listKeys(): string[];
  getByKey(key: string): T | undefined;
}

/**
 * AtomicFIFO's whole-cache items: a relist (`ReplacedAll`, the list to replace the cache with)
 * or a resync (`SyncAll`, every cached object).
 */
export type AtomicBatch<T extends KubeObject> = { readonly type: 'ReplacedAll'; readonly objects: readonly T[] } | { readonly type: 'SyncAll' };

/** One unit of work from a queue: the deltas to process together, and whether they belong to the initial list. */
export interface PopResult<T extends KubeObject> {
  /** The key of the deltas; `''` for an AtomicFIFO batch. */
  readonly key: string;
  readonly deltas: readonly Delta<T>[];
  readonly isInInitialList: boolean;
  /** AtomicFIFO only: a whole-cache item instead of deltas. */
  readonly batch?: AtomicBatch<T>;
}

/**
 * Which client-go informer queue: `DeltaFIFO` (client-go ≤ v0.35), `RealFIFO` (the
 * `InOrderInformers` gate, default from 1.33), or `AtomicFIFO` (RealFIFO with atomic events, the
 * `AtomicFIFO` gate, default in 1.36).
 */
export type QueueMode = 'DeltaFIFO' | 'RealFIFO' | 'AtomicFIFO';

/** The queue between a reflector and the informer's processing loop. */
export interface InformerQueue<T extends KubeObject> {
  readonly mode: QueueMode;
  add(obj: T): void;
  update(obj: T): void;
  /** Returns false when the delete was dropped (DeltaFIFO: key neither cached nor queued). */
  delete(obj: DeleteArg<T>): boolean;
  /** A relist: `Replaced` for each listed object, tombstones for known keys missing from the list. */
  replace(list: readonly T[]): void;
  /** A periodic resync: `Sync` for cached keys with nothing pending. */
  resync(): void;
  pop(): PopResult<T> | undefined;
  /** Number of pops available. */
  len(): number;
  /** True once the first list has been popped entirely. */
  hasSynced(): boolean;
  /** Pending deltas in pop order, for debugging and docs. */
  dump(): string[];
}

export function describeDelta<T extends KubeObject>(d: Delta<T>): string {
  const o = d.object;
  if (isTombstone(o)) return `${d.type}(DeletedFinalStateUnknown{${o.key} uid=${o.obj.metadata.uid} rv=${o.obj.metadata.resourceVersion}})`;
  return `${d.type}(${objectKey(o)} uid=${o.metadata.uid} rv=${o.metadata.resourceVersion})`;
}

/**
 * client-go's `HasSynced` bookkeeping, shared by the three queues: the queue is populated by the
 * first `Replace` or by any earlier Add/Update/Delete; the first `Replace` fixes the initial
 * population (how many pops it takes), and the queue has synced once it is populated and that
 * many items have been popped.
 */
export class InitialPopulation {
  private populated = false;
  private remaining = 0;
  private done = false;

  get synced(): boolean {
    return this.done;
  }

  /** An Add, Update or Delete arrived: populated from now on, with no initial list to wait for. */
  touched(): void {
    this.populated = true;
    this.check();
  }

  /** A `Replace` finished; the first one makes its `count` queued items the initial population. */
  replaced(count: number): void {
    if (this.populated) return;
    this.populated = true;
    this.remaining = count;
    this.check();
  }

  /** One item of the queue was popped. */
  popped(): void {
    if (this.remaining === 0) return;
    this.remaining--;
    this.check();
  }

  private check(): void {
    if (!this.done && this.populated && this.remaining === 0) this.done = true;
  }
}

/**
 * A FIFO array with O(1) amortised shift: popped slots are cleared and the array is compacted
 * once more than half of it (and over 256 slots) is consumed.
 */
export class ArrivalQueue<I> {
  private items: I[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: I): void {
    this.items.push(item);
  }

  shift(): I | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head] as I;
    this.items[this.head] = undefined as unknown as I;
    this.head++;
    if (this.head > 256 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** The queued items, oldest first. */
  *[Symbol.iterator](): IterableIterator<I> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i] as I;
  }
}
