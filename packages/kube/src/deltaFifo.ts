/**
 * client-go's DeltaFIFO (k8s.io/client-go/tools/cache, the informer queue up to v0.35 and what
 * most deployed agents run).
 *
 * - Every key has a list of pending deltas; a pop takes one key and all of its deltas, oldest
 *   first. Keys pop in the order they were first queued.
 * - Only two trailing `Deleted` deltas are merged (keeping the real one over a tombstone).
 * - A delete for a key neither cached nor queued is dropped.
 * - `replace` (a relist) queues `Replaced` for each listed object, then a
 *   `Deleted(DeletedFinalStateUnknown{key, last known object})` for every queued key missing from
 *   the list and every cached key missing from the list with nothing queued. Those two groups
 *   come from Go map iteration, so their order is drawn from the injected random source.
 * - `resync` queues `Sync` for every cached key with nothing pending.
 */
import {
  ArrivalQueue,
  deltaKey,
  describeDelta,
  InitialPopulation,
  isTombstone,
  tombstone,
  type DeleteArg,
  type Delta,
  type DeltaType,
  type InformerQueue,
  type KnownObjects,
  type PopResult,
} from './fifo.ts';
import { objectKey, type KubeObject } from './objects.ts';
import { shuffleInPlace, type RandomSource } from './runtime.ts';

export class DeltaFifo<T extends KubeObject> implements InformerQueue<T> {
  readonly mode = 'DeltaFIFO' as const;
  private readonly items = new Map<string, Delta<T>[]>();
  private readonly queue = new ArrivalQueue<string>();
  private readonly initial = new InitialPopulation();

  constructor(
    private readonly known: KnownObjects<T>,
    private readonly random: RandomSource,
  ) {}

  add(obj: T): void {
    this.initial.touched();
    this.queueAction('Added', obj);
  }

  update(obj: T): void {
    this.initial.touched();
    this.queueAction('Updated', obj);
  }

  delete(obj: DeleteArg<T>): boolean {
    const key = deltaKey(obj);
    this.initial.touched();
    if (this.known.getByKey(key) === undefined && !this.items.has(key)) return false;
    this.queueAction('Deleted', obj);
    return true;
  }

  replace(list: readonly T[]): void {
    const keys = new Set<string>();
    for (const item of list) {
      keys.add(objectKey(item));
      this.queueAction('Replaced', item);
    }
    let queuedDeletions = 0;
    // Queued keys missing from the list: tombstone with the newest queued state.
    const queued = shuffleInPlace([...this.items.keys()], this.random);
    for (const k of queued) {
      if (keys.has(k)) continue;
      const deltas = this.items.get(k) as Delta<T>[];
      const newest = (deltas[deltas.length - 1] as Delta<T>).object;
      const last = isTombstone(newest) ? newest.obj : newest;
      queuedDeletions++;
      this.queueAction('Deleted', tombstone(k, last));
    }
    // Cached keys missing from the list with nothing queued: tombstone with the cached state.
    const knownKeys = shuffleInPlace(this.known.listKeys(), this.random);
    for (const k of knownKeys) {
      if (keys.has(k)) continue;
      if ((this.items.get(k)?.length ?? 0) > 0) continue;
      const obj = this.known.getByKey(k);
      if (obj === undefined) continue;
      queuedDeletions++;
      this.queueAction('Deleted', tombstone(k, obj));
    }
    this.initial.replaced(keys.size + queuedDeletions);
  }

  resync(): void {
    const keys = shuffleInPlace(this.known.listKeys(), this.random);
    for (const k of keys) {
      const obj = this.known.getByKey(k);
      if (obj === undefined) continue;
      if ((this.items.get(k)?.length ?? 0) > 0) continue;
      this.queueAction('Sync', obj);
    }
  }

  pop(): PopResult<T> | undefined {
    const isInInitialList = !this.initial.synced;
    const key = this.queue.shift();
    if (key === undefined) return undefined;
    this.initial.popped();
    const deltas = this.items.get(key) as Delta<T>[];
    this.items.delete(key);
    return { key, deltas, isInInitialList };
  }

  len(): number {
    return this.queue.length;
  }

  hasSynced(): boolean {
    return this.initial.synced;
  }

  dump(): string[] {
    const out: string[] = [];
    for (const k of this.queue) {
      out.push(`${k}: [${(this.items.get(k) ?? []).map(describeDelta).join(', ')}]`);
    }
    return out;
  }

  private queueAction(type: DeltaType, obj: DeleteArg<T>): void {
    const key = deltaKey(obj);
    const old = this.items.get(key);
    const deltas = old === undefined ? [] : old;
    deltas.push({ type, object: obj });
    dedupTrailingDeletes(deltas);
    if (old === undefined) {
      this.queue.push(key);
      this.items.set(key, deltas);
    }
  }
}

/**
 * client-go's `dedupDeltas`: two trailing `Deleted` deltas collapse into one. The older is kept
 * unless it is a tombstone, in which case the newer (possibly real) one wins.
 */
function dedupTrailingDeletes<T extends KubeObject>(deltas: Delta<T>[]): void {
  const n = deltas.length;
  if (n < 2) return;
  const a = deltas[n - 1] as Delta<T>;
  const b = deltas[n - 2] as Delta<T>;
  if (a.type !== 'Deleted' || b.type !== 'Deleted') return;
  deltas[n - 2] = isTombstone(b.object) ? a : b;
  deltas.length = n - 1;
}
