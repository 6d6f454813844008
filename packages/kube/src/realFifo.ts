/**
 * client-go's RealFIFO (k8s.io/client-go/tools/cache/the_real_fifo.go, used when the
 * `InOrderInformers` feature gate is on: the default from 1.33), without `AtomicEvents`.
 *
 * - One flat queue of deltas in arrival order; a pop takes exactly one delta. Nothing is merged.
 * - Deletes are always queued, even for keys neither cached nor queued.
 * - `replace` (a relist) queues the synthetic deletes first: a tombstone for every queued key
 *   missing from the list whose last queued delta is not already a delete (in queue order), then
 *   one for every cached key missing from the list and not queued (map order: drawn from the
 *   random source); then `Replaced` for every listed object, in list order.
 * - `resync` queues `Sync` for every cached key that has nothing queued.
 * - The initial population is the whole queue after the first `replace`.
 */
import {
  ArrivalQueue,
  deltaKey,
  describeDelta,
  InitialPopulation,
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

export class RealFifo<T extends KubeObject> implements InformerQueue<T> {
  readonly mode = 'RealFIFO' as const;
  private readonly items = new ArrivalQueue<Delta<T>>();
  private readonly initial = new InitialPopulation();

  constructor(
    private readonly known: KnownObjects<T>,
    private readonly random: RandomSource,
  ) {}

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
    const newKeys = new Set(list.map(objectKey));
    const queuedKeys: string[] = [];
    const lastForKey = new Map<string, Delta<T>>();
    for (const d of this.items) {
      const k = deltaKey(d.object);
      if (!lastForKey.has(k)) queuedKeys.push(k);
      lastForKey.set(k, d);
    }
    for (const k of queuedKeys) {
      if (newKeys.has(k)) continue;
      const last = lastForKey.get(k) as Delta<T>;
      if (last.type === 'Deleted') continue;
      this.append('Deleted', tombstone(k, last.object as T));
    }
    for (const k of shuffleInPlace(this.known.listKeys(), this.random)) {
      if (newKeys.has(k) || lastForKey.has(k)) continue;
      const obj = this.known.getByKey(k);
      if (obj === undefined) continue;
      this.append('Deleted', tombstone(k, obj));
    }
    for (const obj of list) this.append('Replaced', obj);
    this.initial.replaced(this.items.length);
  }

  resync(): void {
    const inQueue = new Set<string>();
    for (const d of this.items) inQueue.add(deltaKey(d.object));
    for (const k of shuffleInPlace(this.known.listKeys(), this.random)) {
      if (inQueue.has(k)) continue;
      const obj = this.known.getByKey(k);
      if (obj !== undefined) this.append('Sync', obj);
    }
  }

  pop(): PopResult<T> | undefined {
    const isInInitialList = !this.initial.synced;
    const d = this.items.shift();
    if (d === undefined) return undefined;
    // client-go decrements after processing; nothing can observe the difference here because
    // processing and this pop are one step.
    this.initial.popped();
    return { key: deltaKey(d.object), deltas: [d], isInInitialList };
  }

  len(): number {
    return this.items.length;
  }

  hasSynced(): boolean {
    return this.initial.synced;
  }

  dump(): string[] {
    return Array.from(this.items, describeDelta);
  }

  private push(type: DeltaType, obj: DeleteArg<T>): void {
    this.initial.touched();
    this.append(type, obj);
  }

  private append(type: DeltaType, obj: DeleteArg<T>): void {
    this.items.push({ type, object: obj });
  }
}
