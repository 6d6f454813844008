/**
 * Disruptions as explicit data: which node (or every node) was disturbed, from when until when,
 * and why. Settle-based invariants and probes forgive a problem on a node only while that node is
 * disturbed and for the settle time after; a problem on another node, or one that outlives every
 * bounded window, is the controller's.
 *
 * What counts as a disruption is what the world does to a controller, never what a controller
 * does to itself: a Kubernetes change (everyone must follow it), an injected fault for its
 * duration, an injected crash or restart until the new process starts, and an informer relist
 * after a broken watch. A process that fails on its own and is restarted by its kubelet is not
 * forgiven: a controller that breaks its rules and then crash-loops is still blamed for them.
 *
 * The tracker is written only by the world (actions, faults, agent starts, kube events) and by
 * {@link DisruptionTracker.advance} between steps; reading it changes nothing.
 */

/** Where a disruption applies: one node, or every node (`*`). */
export type DisruptionScope = string;

/** Every node. */
export const EVERY_NODE: DisruptionScope = '*';

/** One disruption window. `untilMs` is bounded: a window never stays open for ever. */
export interface Disruption {
  readonly scope: DisruptionScope;
  readonly fromMs: number;
  readonly untilMs: number;
  /** What happened, for messages (`watch.gap`, `agent.crash node-1/npl`, `pod.create`). */
  readonly cause: string;
}

/** The last disruption of a scope that has ended, and the windows still open or in the future. */
interface ScopeState {
  endedMs: number;
  endedCause: string;
  open: Disruption[];
}

/**
 * Disruption windows per node.
 *
 * @example
 * ```ts
 * const t = new DisruptionTracker();
 * t.add({ scope: 'node-1', fromMs: 1000, untilMs: 3000, cause: 'watch.gap' });
 * t.calmSince('node-1', 2000); // 2000: still disturbed now
 * t.calmSince('node-2', 2000); // -1: never disturbed
 * ```
 */
export class DisruptionTracker {
  readonly #scopes = new Map<DisruptionScope, ScopeState>();
  /** Every window ever added, in order (for tests and stories). */
  readonly #all: Disruption[] = [];

  /** Record a window (an instant disruption has `untilMs === fromMs`); returns its index, for {@link endEarly}. */
  add(d: Disruption): number {
    if (d.untilMs < d.fromMs) throw new RangeError(`disruption ${d.cause}: untilMs ${d.untilMs} is before fromMs ${d.fromMs}`);
    this.#all.push(d);
    let s = this.#scopes.get(d.scope);
    if (s === undefined) {
      s = { endedMs: -1, endedCause: '', open: [] };
      this.#scopes.set(d.scope, s);
    }
    s.open.push(d);
    return this.#all.length - 1;
  }

  /**
   * The window `index` is over at `atMs` if it was to last longer (an injected restart whose
   * process is back before its bound).
   */
  endEarly(index: number, atMs: number): void {
    const d = this.#all[index];
    if (d === undefined || d.untilMs <= atMs) return;
    const shorter: Disruption = { ...d, untilMs: Math.max(d.fromMs, atMs) };
    this.#all[index] = shorter;
    const s = this.#scopes.get(d.scope);
    if (s === undefined) return;
    const i = s.open.indexOf(d);
    if (i >= 0) s.open[i] = shorter;
  }

  /** An instant disruption now. */
  mark(scope: DisruptionScope, atMs: number, cause: string): void {
    this.add({ scope, fromMs: atMs, untilMs: atMs, cause });
  }

  /** Fold windows that ended by `nowMs` into each scope's last end (bookkeeping between steps; no query depends on when it runs). */
  advance(nowMs: number): void {
    for (const s of this.#scopes.values()) {
      if (s.open.length === 0) continue;
      const keep: Disruption[] = [];
      for (const d of s.open) {
        if (d.untilMs <= nowMs) {
          if (d.untilMs >= s.endedMs) {
            s.endedMs = d.untilMs;
            s.endedCause = d.cause;
          }
        } else keep.push(d);
      }
      s.open = keep;
    }
  }

  /**
   * The time from which `node` has been calm at `nowMs`: the end of its latest disruption (its
   * own or every node's), `nowMs` while one is in progress, or -1 when it was never disturbed.
   */
  calmSince(node: string, nowMs: number): number {
    return Math.max(this.#calmOf(this.#scopes.get(node), nowMs), node === EVERY_NODE ? -1 : this.#calmOf(this.#scopes.get(EVERY_NODE), nowMs));
  }

  /** The latest calm-since time over every node (the whole cluster calm since). */
  calmSinceAnywhere(nowMs: number): number {
    let t = -1;
    for (const s of this.#scopes.values()) t = Math.max(t, this.#calmOf(s, nowMs));
    return t;
  }

  /** Why `node` was last disturbed at `nowMs` (empty when never). */
  lastCause(node: string, nowMs: number): string {
    let best = -1;
    let cause = '';
    for (const scope of node === EVERY_NODE ? [EVERY_NODE] : [node, EVERY_NODE]) {
      const s = this.#scopes.get(scope);
      if (s === undefined) continue;
      if (s.endedMs > best) {
        best = s.endedMs;
        cause = s.endedCause;
      }
      for (const d of s.open) {
        if (d.fromMs > nowMs) continue;
        const t = Math.min(d.untilMs, nowMs);
        if (t >= best) {
          best = t;
          cause = d.cause;
        }
      }
    }
    return cause;
  }

  /** The end of the last window ever added (a future end included), or -1: when the last fault is over. */
  lastEndMs(): number {
    let t = -1;
    for (const d of this.#all) t = Math.max(t, d.untilMs);
    return t;
  }

  /** Every window added so far, in order. */
  windows(): readonly Disruption[] {
    return this.#all;
  }

  #calmOf(s: ScopeState | undefined, nowMs: number): number {
    if (s === undefined) return -1;
    let t = s.endedMs <= nowMs ? s.endedMs : -1;
    for (const d of s.open) {
      if (d.fromMs > nowMs) continue;
      t = Math.max(t, Math.min(d.untilMs, nowMs));
    }
    return t;
  }
}
