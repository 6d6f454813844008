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
  deltaKey,
  describeDelta,
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
  private items: Delta<T>[] = [];
  private head = 0;
  private populated = false;
  private initialPopulationCount = 0;
  private synced = false;

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
    for (let i = this.head; i < this.items.length; i++) {
      const d = this.items[i] as Delta<T>;
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
    if (!this.populated) {
      this.populated = true;
      this.initialPopulationCount = this.len();
      this.checkSynced();
    }
  }

  resync(): void {
    const inQueue = new Set<string>();
    for (let i = this.head; i < this.items.length; i++) inQueue.add(deltaKey((this.items[i] as Delta<T>).object));
    for (const k of shuffleInPlace(this.known.listKeys(), this.random)) {
      if (inQueue.has(k)) continue;
      const obj = this.known.getByKey(k);
      if (obj !== undefined) this.append('Sync', obj);
    }
  }

  pop(): PopResult<T> | undefined {
    if (this.head >= this.items.length) return undefined;
    const isInInitialList = !this.synced;
    const d = this.items[this.head] as Delta<T>;
    this.items[this.head] = undefined as unknown as Delta<T>;
    this.head++;
    if (this.head > 256 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    // client-go decrements after processing; nothing can observe the difference here because
    // processing and this pop are one step.
    if (this.initialPopulationCount > 0) {
      this.initialPopulationCount--;
      this.checkSynced();
    }
    return { key: deltaKey(d.object), deltas: [d], isInInitialList };
  }

  len(): number {
    return this.items.length - this.head;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  dump(): string[] {
    const out: string[] = [];
    for (let i = this.head; i < this.items.length; i++) out.push(describeDelta(this.items[i] as Delta<T>));
    return out;
  }

  private push(type: DeltaType, obj: DeleteArg<T>): void {
    this.populated = true;
    this.checkSynced();
    this.append(type, obj);
  }

  private append(type: DeltaType, obj: DeleteArg<T>): void {
    this.items.push({ type, object: obj });
  }

  private checkSynced(): void {
    if (!this.synced && this.populated && this.initialPopulationCount === 0) this.synced = true;
  }
}
