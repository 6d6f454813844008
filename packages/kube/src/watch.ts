/**
 * One watch connection: an ordered stream of events from the API server to one consumer.
 *
 * A watch is a TCP stream, so it never reorders. Each event becomes its own scheduled step
 * (`kube.watch.deliver`) at its arrival time, and only one delivery is outstanding at a time: the
 * next is scheduled from inside the previous, so the engine may run other work between two
 * events but can never swap them.
 *
 * Faults live here: a per-watch delivery delay, a gap (events sent during a window are lost, then
 * the stream breaks with `410 Expired`), a reset (an immediate `410`), and a clean close.
 */
import { KubeError, type Status } from './errors.ts';
import type { KubeObject } from './objects.ts';
import type { Scheduler } from './runtime.ts';
import { wantsTrace, type KubeTraceSink } from './trace.ts';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/**
 * What a watch consumer receives. `ERROR` carries a `Status` and ends the stream; `CLOSED` is not
 * a wire event: it stands for the server ending the response cleanly (a watch timeout).
 */
export type WatchEvent<T extends KubeObject = KubeObject> =
  | { readonly type: WatchEventType; readonly object: T }
  | { readonly type: 'ERROR'; readonly object: Status }
  | { readonly type: 'CLOSED' };

/** The consumer's view of an open watch. */
export interface WatchHandle {
  /** `name#id`, unique per server. */
  readonly id: string;
  /** The name the watcher gave (an informer's name), used by fault filters. */
  readonly name: string;
  /** Ends the watch from the client side: undelivered events are discarded. */
  stop(): void;
  /** True until the stream ended (error, close or stop). */
  isOpen(): boolean;
  /** Delay (ms) added to every event sent from now on. Order is preserved. */
  setDelay(delayMs: number): void;
  /** Events the server sends during the next `durationMs` are lost; then the stream breaks with 410. */
  gap(durationMs: number): void;
  /** The stream breaks now with 410 Expired (after the events already sent). */
  reset(): void;
  /** The server ends the response cleanly now (after the events already sent). */
  close(): void;
}

interface Item<T extends KubeObject> {
  readonly at: number;
  readonly event: WatchEvent<T>;
}

/** @internal The server side of a watch. */
export class WatchStream<T extends KubeObject = KubeObject> implements WatchHandle {
  readonly id: string;
  private readonly buf: Item<T>[] = [];
  private head = 0;
  private scheduled = false;
  /** Accepting events from the server. */
  private accepting = true;
  private stopped = false;
  private lastAt = 0;
  private gapUntil = -1;
  private delayMs: number;

  constructor(
    readonly name: string,
    seq: number,
    private readonly scheduler: Scheduler,
    private readonly consumer: (e: WatchEvent<T>) => void,
    private readonly detach: (w: WatchStream<T>) => void,
    private readonly currentRv: () => number,
    delayMs: number,
    private readonly trace: KubeTraceSink | undefined,
    /** The resourceVersion the stream is at: the start RV, then each sent event's. */
    private rv: number,
  ) {
    this.id = `${name}#${seq}`;
    this.delayMs = checkDelay(delayMs);
  }

  isOpen(): boolean {
    return !this.stopped && (this.accepting || this.head < this.buf.length);
  }

  /** True while events sent now would be lost. */
  inGap(): boolean {
    return this.scheduler.now() < this.gapUntil;
  }

  /** @internal The server sends one event. */
  send(event: WatchEvent<T>): void {
    if (!this.accepting) return;
    if (this.inGap()) {
      if (wantsTrace(this.trace, 'kube.watch.drop')) {
        const f: Record<string, string | number> = { watch: this.id, event: event.type };
        if (event.type !== 'ERROR' && event.type !== 'CLOSED') {
          f['key'] = keyFor(event.object);
          f['rv'] = event.object.metadata.resourceVersion;
          f['uid'] = event.object.metadata.uid;
        }
        this.trace({ type: 'kube.watch.drop', at: this.scheduler.now(), fields: f });
      }
      return;
    }
    this.enqueue(event);
  }

  setDelay(delayMs: number): void {
    this.delayMs = checkDelay(delayMs);
  }

  gap(durationMs: number): void {
    const d = checkDelay(durationMs);
    if (!this.accepting) return;
    const until = this.scheduler.now() + d;
    if (until <= this.gapUntil) return;
    this.gapUntil = until;
    if (wantsTrace(this.trace, 'kube.watch.gap')) this.trace({ type: 'kube.watch.gap', at: this.scheduler.now(), fields: { watch: this.id, untilMs: until } });
    this.scheduler.schedule(d, `kube.watch.gapEnd ${this.id}`, () => {
      if (this.gapUntil !== until || !this.accepting) return;
      this.enqueue({ type: 'ERROR', object: expired(this.rv, this.currentRv()).toStatus() });
    });
  }

  reset(): void {
    if (!this.accepting) return;
    this.gapUntil = -1;
    this.enqueue({ type: 'ERROR', object: expired(this.rv, this.currentRv()).toStatus() });
  }

  close(): void {
    if (!this.accepting) return;
    if (this.inGap()) return; // a stalled connection cannot deliver its end either; the gap ends it
    this.enqueue({ type: 'CLOSED' });
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.buf.length = 0;
    this.head = 0;
    if (this.accepting) {
      this.accepting = false;
      this.detach(this);
    }
  }

  private enqueue(event: WatchEvent<T>): void {
    const now = this.scheduler.now();
    const at = Math.max(this.lastAt, now + this.delayMs);
    this.lastAt = at;
    this.buf.push({ at, event });
    if (event.type === 'ERROR' || event.type === 'CLOSED') {
      this.accepting = false;
      this.detach(this);
    } else {
      this.rv = Number(event.object.metadata.resourceVersion);
    }
    this.pump();
  }

  private pump(): void {
    if (this.scheduled || this.stopped || this.head >= this.buf.length) return;
    const next = this.buf[this.head] as Item<T>;
    this.scheduled = true;
    this.scheduler.schedule(Math.max(0, next.at - this.scheduler.now()), `kube.watch.deliver ${this.id}`, () => this.deliver());
  }

  private deliver(): void {
    this.scheduled = false;
    if (this.stopped) return;
    const item = this.buf[this.head];
    if (item === undefined) return;
    this.buf[this.head] = undefined as unknown as Item<T>;
    this.head++;
    if (this.head > 64 && this.head * 2 > this.buf.length) {
      this.buf.splice(0, this.head);
      this.head = 0;
    }
    if (wantsTrace(this.trace, 'kube.watch.deliver')) {
      const e = item.event;
      const f: Record<string, string | number> = { watch: this.id, event: e.type };
      if (e.type === 'ERROR') f['message'] = e.object.message;
      else if (e.type !== 'CLOSED') {
        f['key'] = keyFor(e.object);
        f['rv'] = e.object.metadata.resourceVersion;
        f['uid'] = e.object.metadata.uid;
      }
      this.trace({ type: 'kube.watch.deliver', at: this.scheduler.now(), fields: f });
    }
    this.consumer(item.event);
    this.pump();
  }
}

function keyFor(o: KubeObject): string {
  return o.metadata.namespace === '' ? o.metadata.name : `${o.metadata.namespace}/${o.metadata.name}`;
}

/** The watch cache's 410 for a resourceVersion older than its history. */
export function expired(rv: number, oldestMinusOne: number): KubeError {
  return new KubeError('Expired', `too old resource version: ${rv} (${oldestMinusOne})`);
}

function checkDelay(ms: number): number {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`watch delay/duration must be a non-negative integer number of milliseconds, got ${ms}`);
  return ms;
}
