/**
 * The three things `@netsim/kube` never owns: time, randomness and identities. Everything that
 * happens later than "now" is a task handed to an injected {@link Scheduler}; every order that
 * client-go leaves open is drawn from an injected {@link RandomSource}; every uid comes from an
 * injected {@link IdSource}. The simulation engine supplies its own implementations; the simple
 * deterministic ones here serve kube's own tests and users who drive kube without the engine.
 */
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import type { RandomGenerator } from 'pure-rand/types/RandomGenerator';

/**
 * Runs work later on a simulated clock. Time is an integer number of milliseconds.
 *
 * The contract the engine relies on: `run` executes as one step at `now() + delayMs`; tasks due at
 * the same time may run in any order the scheduler picks (the engine breaks ties with its PRNG), so
 * kube never schedules two tasks whose relative order matters at the same instant: ordered streams
 * keep one task outstanding and schedule the next from inside it.
 */
export interface Scheduler {
  /** The current simulated time in milliseconds. */
  now(): number;
  /**
   * Runs `run` as one step `delayMs` (a non-negative integer) from now. `label` names the step in
   * traces, e.g. `'kube.watch.deliver'`.
   */
  schedule(delayMs: number, label: string, run: () => void): void;
}

/** A seeded source of uniform integers. */
export interface RandomSource {
  /** A uniform integer in `[0, maxExclusive)`; `maxExclusive` is a positive integer. */
  int(maxExclusive: number): number;
}

/** Hands out identities (object uids). Each call returns a value never returned before. */
export interface IdSource {
  next(): string;
}

/** Everything kube takes injected, bundled. */
export interface KubeRuntime {
  readonly scheduler: Scheduler;
  readonly random: RandomSource;
  readonly ids: IdSource;
}

interface Task {
  readonly at: number;
  readonly seq: number;
  readonly label: string;
  readonly run: () => void;
}

/** One executed step, as reported by {@link ManualScheduler.step}. */
export interface StepInfo {
  readonly at: number;
  readonly label: string;
}

/**
 * A deterministic {@link Scheduler} for tests and simple drivers: tasks run in (time, sequence)
 * order, where sequence is the order `schedule` was called. Time moves only when you say so.
 *
 * @example
 * ```ts
 * const s = new ManualScheduler();
 * s.schedule(10, 'demo', () => console.log('at', s.now()));
 * s.advance(10); // prints "at 10"
 * ```
 */
export class ManualScheduler implements Scheduler {
  // A binary min-heap on (at, seq): the scheduler is a hot path, so no sorting per insert.
  private readonly heap: Task[] = [];
  private seq = 0;
  private time: number;
  private executed = 0;

  constructor(opts: { startMs?: number } = {}) {
    this.time = opts.startMs ?? 0;
    assertTime(this.time, 'startMs');
  }

  now(): number {
    return this.time;
  }

  schedule(delayMs: number, label: string, run: () => void): void {
    assertTime(delayMs, `delayMs of "${label}"`);
    this.push({ at: this.time + delayMs, seq: this.seq++, label, run });
  }

  /** Tasks scheduled and not yet run. */
  pending(): number {
    return this.heap.length;
  }

  /** Steps run so far. */
  stepsRun(): number {
    return this.executed;
  }

  /** The time of the next task, if any. */
  nextAt(): number | undefined {
    return this.heap[0]?.at;
  }

  /** Labels of pending tasks in the order they will run (for debugging and tests). */
  pendingLabels(): string[] {
    return [...this.heap].sort(compareTasks).map((t) => `${t.at} ${t.label}`);
  }

  /**
   * Runs the next task, moving the clock to its time. Returns what ran, or `undefined` when
   * nothing is scheduled.
   */
  step(): StepInfo | undefined {
    const t = this.pop();
    if (t === undefined) return undefined;
    this.time = t.at;
    this.executed++;
    t.run();
    return { at: t.at, label: t.label };
  }

  /** Runs every task due within the next `ms` milliseconds, then sets the clock to now + ms. */
  advance(ms: number, opts: { maxSteps?: number } = {}): number {
    assertTime(ms, 'advance(ms)');
    const until = this.time + ms;
    const maxSteps = opts.maxSteps ?? 1_000_000;
    let n = 0;
    while (this.heap.length > 0 && (this.heap[0] as Task).at <= until) {
      if (n >= maxSteps) throw new Error(`ManualScheduler.advance: more than ${maxSteps} steps before ${until} ms (a task keeps rescheduling itself?)`);
      this.step();
      n++;
    }
    this.time = until;
    return n;
  }

  /**
   * Runs tasks until none is left. Periodic work (resync, watch timeouts) never goes idle: bound
   * it with `maxSteps` (default one million), past which this throws.
   */
  runUntilIdle(opts: { maxSteps?: number } = {}): number {
    const maxSteps = opts.maxSteps ?? 1_000_000;
    let n = 0;
    while (this.heap.length > 0) {
      if (n >= maxSteps) throw new Error(`ManualScheduler.runUntilIdle: still busy after ${maxSteps} steps (periodic work scheduled?); next: ${this.pendingLabels().slice(0, 3).join(', ')}`);
      this.step();
      n++;
    }
    return n;
  }

  private push(t: Task): void {
    const h = this.heap;
    h.push(t);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (compareTasks(h[p] as Task, t) <= 0) break;
      h[i] = h[p] as Task;
      i = p;
    }
    h[i] = t;
  }

  private pop(): Task | undefined {
    const h = this.heap;
    const top = h[0];
    if (top === undefined) return undefined;
    const last = h.pop() as Task;
    if (h.length > 0) {
      let i = 0;
      const n = h.length;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && compareTasks(h[r] as Task, h[l] as Task) < 0 ? r : l;
        if (compareTasks(h[c] as Task, last) >= 0) break;
        h[i] = h[c] as Task;
        i = c;
      }
      h[i] = last;
    }
    return top;
  }
}

function compareTasks(a: Task, b: Task): number {
  return a.at !== b.at ? a.at - b.at : a.seq - b.seq;
}

function assertTime(v: number, what: string): void {
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${what} must be a non-negative integer number of milliseconds, got ${v}`);
}

/**
 * A seeded {@link RandomSource} on pure-rand's xoroshiro128+.
 *
 * @example
 * ```ts
 * const r = new SeededRandom(42);
 * r.int(6); // the same value for seed 42, every run
 * ```
 */
export class SeededRandom implements RandomSource {
  private readonly rng: RandomGenerator;

  constructor(seed: number) {
    if (!Number.isInteger(seed)) throw new RangeError(`SeededRandom: seed must be an integer, got ${seed}`);
    this.rng = xoroshiro128plus(seed);
  }

  int(maxExclusive: number): number {
    if (!Number.isSafeInteger(maxExclusive) || maxExclusive <= 0) throw new RangeError(`RandomSource.int: maxExclusive must be a positive integer, got ${maxExclusive}`);
    return uniformInt(this.rng, 0, maxExclusive - 1);
  }
}

/**
 * A deterministic {@link IdSource}: uuid-shaped strings from a counter, so traces stay readable
 * (`00000000-0000-4000-8000-000000000001`, then `…0002`).
 */
export class CounterIdSource implements IdSource {
  private n = 0;

  constructor(private readonly prefix = '00000000-0000-4000-8000-') {}

  next(): string {
    this.n++;
    return this.prefix + this.n.toString(16).padStart(12, '0');
  }
}

/** A deterministic runtime for tests: a {@link ManualScheduler}, a {@link SeededRandom} and a {@link CounterIdSource}. */
export function manualRuntime(seed = 1): KubeRuntime & { readonly scheduler: ManualScheduler } {
  return { scheduler: new ManualScheduler(), random: new SeededRandom(seed), ids: new CounterIdSource() };
}

/** Fisher–Yates shuffle in place with an injected source: how kube picks orders client-go leaves open. */
export function shuffleInPlace<T>(items: T[], random: RandomSource): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = random.int(i + 1);
    const t = items[i] as T;
    items[i] = items[j] as T;
    items[j] = t;
  }
  return items;
}
