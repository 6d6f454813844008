/**
 * The event queue: steps ordered by (time, sequence). Steps due at the current instant form the
 * ready set; the engine picks among them with its tie-breaker, so the order of simultaneous steps
 * comes from the seed, never from insertion order alone.
 *
 * A binary heap holds future steps; the ready set is a small array in sequence order (so choice 0
 * is always "the oldest ready step", which makes an all-zero schedule path mean FIFO).
 */
import { assert } from './errors.ts';

/** One scheduled step. `kind` is a namespaced family (`'kube'`, `'call'`, `'timer'`, …). */
export interface QueuedStep {
  readonly seq: number;
  readonly timeMs: number;
  readonly kind: string;
  readonly label: string;
  /** The agent whose process owns the step (cancelled when that process dies), or null. */
  readonly owner: string | null;
  readonly run: () => void;
  cancelled: boolean;
  /** Taken out of the queue to run: cancelling it now changes nothing. */
  taken?: boolean;
}

function before(a: QueuedStep, b: QueuedStep): boolean {
  return a.timeMs < b.timeMs || (a.timeMs === b.timeMs && a.seq < b.seq);
}

export class EventQueue {
  readonly #heap: QueuedStep[] = [];
  #ready: QueuedStep[] = [];
  #readyTimeMs = 0;
  #live = 0;
  /** Cancelled steps still sitting in the heap (dropped lazily, or by a compaction). */
  #cancelledInHeap = 0;

  /** Live (not cancelled) steps, ready or future. */
  get size(): number {
    return this.#live;
  }

  /** The instant the ready set belongs to. */
  get readyTimeMs(): number {
    return this.#readyTimeMs;
  }

  /** Steps ready at {@link readyTimeMs}, oldest first. Read-only view. */
  get ready(): readonly QueuedStep[] {
    return this.#ready;
  }

  push(step: QueuedStep): void {
    assert(step.timeMs >= this.#readyTimeMs, `step "${step.label}" scheduled in the past (${step.timeMs} < ${this.#readyTimeMs})`);
    this.#live++;
    if (step.timeMs === this.#readyTimeMs) {
      this.#ready.push(step);
      return;
    }
    const h = this.#heap;
    h.push(step);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = h[parent] as QueuedStep;
      if (!before(step, p)) break;
      h[i] = p;
      i = parent;
    }
    h[i] = step;
  }

  cancel(step: QueuedStep): void {
    if (step.cancelled || step.taken === true) return;
    step.cancelled = true;
    this.#live--;
    const i = this.#ready.indexOf(step);
    if (i >= 0) this.#ready.splice(i, 1);
    else {
      this.#cancelledInHeap++;
      this.#maybeCompact();
    }
  }

  /** Cancel every live step owned by `owner`; returns how many. */
  cancelOwned(owner: string): number {
    let n = 0;
    for (const s of this.#heap) {
      if (!s.cancelled && s.owner === owner) {
        s.cancelled = true;
        this.#live--;
        this.#cancelledInHeap++;
        n++;
      }
    }
    const keep: QueuedStep[] = [];
    for (const s of this.#ready) {
      if (s.owner === owner) {
        s.cancelled = true;
        this.#live--;
        n++;
      } else keep.push(s);
    }
    this.#ready = keep;
    this.#maybeCompact();
    return n;
  }

  /**
   * Cancelled steps far in the future (a watch timeout minutes ahead) would keep their closures,
   * and whatever those hold (a dead process's informer cache), alive until their time: once they
   * are half the heap, rebuild it without them.
   */
  #maybeCompact(): void {
    if (this.#cancelledInHeap < 64 || this.#cancelledInHeap * 2 < this.#heap.length) return;
    const live = this.#heap.filter((s) => !s.cancelled);
    this.#heap.length = 0;
    this.#cancelledInHeap = 0;
    // Re-insert in (time, seq) order: a sorted array is already a valid binary heap.
    live.sort((a, b) => (a.timeMs - b.timeMs) || (a.seq - b.seq));
    for (const s of live) this.#heap.push(s);
  }

  /**
   * Make the ready set non-empty by moving to the next instant with live steps, without passing
   * `limitMs`. Returns false when no live step is due at or before `limitMs`.
   */
  advance(limitMs: number): boolean {
    if (this.#ready.length > 0) return true;
    this.#dropCancelledTop();
    const top = this.#heap[0];
    if (top === undefined || top.timeMs > limitMs) return false;
    this.#readyTimeMs = top.timeMs;
    for (;;) {
      this.#dropCancelledTop();
      const next = this.#heap[0];
      if (next === undefined || next.timeMs !== this.#readyTimeMs) break;
      this.#ready.push(this.#popHeap());
    }
    return this.#ready.length > 0;
  }

  /** Move the clock forward with nothing ready (used when a run ends at a horizon). */
  advanceIdleTo(timeMs: number): void {
    assert(this.#ready.length === 0, 'advanceIdleTo with ready steps');
    assert(timeMs >= this.#readyTimeMs, 'advanceIdleTo into the past');
    this.#dropCancelledTop();
    const top = this.#heap[0];
    assert(top === undefined || top.timeMs > timeMs, 'advanceIdleTo past a live step');
    this.#readyTimeMs = timeMs;
  }

  /** Remove and return the ready step at `index` (0 = oldest). */
  take(index: number): QueuedStep {
    const r = this.#ready;
    const s = r[index];
    assert(s !== undefined, `take(${index}) out of ${r.length} ready`);
    // In place, keeping the order (splice would allocate the array of removed steps).
    for (let i = index + 1; i < r.length; i++) r[i - 1] = r[i] as QueuedStep;
    r.length--;
    this.#live--;
    s.taken = true;
    return s;
  }

  /** The earliest time of a live future step, or undefined. */
  nextTimeMs(): number | undefined {
    if (this.#ready.length > 0) return this.#readyTimeMs;
    this.#dropCancelledTop();
    return this.#heap[0]?.timeMs;
  }

  #dropCancelledTop(): void {
    while (this.#heap.length > 0 && (this.#heap[0] as QueuedStep).cancelled) {
      this.#popHeap();
      this.#cancelledInHeap--;
    }
  }

  #popHeap(): QueuedStep {
    const h = this.#heap;
    const top = h[0] as QueuedStep;
    const last = h.pop() as QueuedStep;
    if (h.length > 0) {
      let i = 0;
      const n = h.length;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        let c = l;
        if (r < n && before(h[r] as QueuedStep, h[l] as QueuedStep)) c = r;
        const child = h[c] as QueuedStep;
        if (!before(child, last)) break;
        h[i] = child;
        i = c;
      }
      h[i] = last;
    }
    return top;
  }
}
