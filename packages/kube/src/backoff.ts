/**
 * The reflector's relist backoff: apimachinery's `wait.Backoff` stepped through `DelayWithReset`.
 * Each relist waits `duration` plus up to `jitter × duration`, and `duration` grows by `factor`
 * up to `cap`. If more than `resetMs` passed since the manager last reset, it starts over.
 * (client-go: 800 ms initial, ×2, 30 s cap, jitter 1.0, reset after 2 minutes.)
 */
import type { RandomSource } from './runtime.ts';

export interface BackoffOptions {
  readonly initialMs?: number;
  readonly capMs?: number;
  readonly factor?: number;
  /** Up to this fraction of the delay is added, drawn from the random source (client-go: 1.0). */
  readonly jitter?: number;
  readonly resetMs?: number;
}

interface State {
  durationMs: number;
  steps: number;
}

export class BackoffManager {
  private readonly initialMs: number;
  private readonly capMs: number;
  private readonly factor: number;
  private readonly jitter: number;
  private readonly resetMs: number;
  private state: State;
  private lastStart: number;

  constructor(
    opts: BackoffOptions,
    private readonly now: () => number,
    private readonly random: RandomSource,
  ) {
    this.initialMs = opts.initialMs ?? 800;
    this.capMs = opts.capMs ?? 30_000;
    this.factor = opts.factor ?? 2;
    this.jitter = opts.jitter ?? 1;
    this.resetMs = opts.resetMs ?? 120_000;
    for (const [k, v] of [['initialMs', this.initialMs], ['capMs', this.capMs], ['resetMs', this.resetMs]] as const) {
      if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`backoff.${k} must be a non-negative integer, got ${v}`);
    }
    if (!(this.factor >= 0) || !(this.jitter >= 0)) throw new RangeError('backoff.factor and backoff.jitter must be non-negative');
    this.state = this.initial();
    this.lastStart = now();
  }

  /** The delay before the next relist. */
  step(): number {
    const now = this.now();
    if (now - this.lastStart > this.resetMs) {
      this.state = this.initial();
      this.lastStart = now;
    }
    const s = this.state;
    if (s.steps < 1) return this.jittered(s.durationMs);
    s.steps--;
    let next = Math.floor(s.durationMs * this.factor);
    if (this.capMs > 0 && next > this.capMs) {
      next = this.capMs;
      s.steps = 0;
    }
    const out = this.jittered(s.durationMs);
    s.durationMs = next;
    return out;
  }

  private initial(): State {
    return { durationMs: this.initialMs, steps: this.initialMs === 0 ? 0 : Math.ceil(this.capMs / this.initialMs) };
  }

  private jittered(d: number): number {
    const span = Math.floor(this.jitter * d);
    return span > 0 ? d + this.random.int(span) : d;
  }
}
