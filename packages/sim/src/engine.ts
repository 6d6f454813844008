/**
 * The deterministic engine: one integer virtual clock, one event queue ordered by (time,
 * sequence), one tie-breaker fed by the seed, and the task mechanism that lets `async`
 * controllers run deterministically.
 *
 * How async controllers stay deterministic (see docs/engine.md):
 * - Controller code runs as *tasks*. Every call a task makes into the world (`engine.call`)
 *   returns a promise and schedules a step; the call's effect runs only when the engine picks
 *   that step, and only then is the promise settled.
 * - After picking and running one step the engine waits until the task it resumed is *parked*
 *   again: it awaits another world call (the promise's `then` is called while it is pending) or
 *   its root promise settles. Plain promises inside the task resolve in microtasks on the way.
 *   Only then is the next step picked, so exactly one task runs between two picks.
 * - A task that awaits something outside the simulation never parks: the wait is raced against
 *   one macrotask (`setImmediate`), and the engine reports a finding naming the task and step.
 */
import { SimError, assert } from './errors.ts';
import type { JsonObject, JsonValue } from './json.ts';
import { deriveStreams, type Prng, type StreamName } from './prng.ts';
import { EventQueue, type QueuedStep } from './queue.ts';
import { TraceRecorder, type TraceEvent } from './trace.ts';

// Captured at load so that fake timers installed later by a user's test cannot replace them.
const realSetImmediate = globalThis.setImmediate; // tidy-allow: the one macrotask race that detects a task awaiting something outside the simulation
const realClearImmediate = globalThis.clearImmediate;

/** Limits that turn runaway runs into clear outcomes instead of hangs or out-of-memory. */
export interface Bounds {
  /** Steps per run (default 1,000,000). */
  readonly maxSteps: number;
  /** Live steps in the queue at once (default 1,000,000). */
  readonly maxPendingSteps: number;
  /** Trace events kept (default 2,000,000). */
  readonly maxTraceEvents: number;
  /** Steps at one simulated instant before the run is declared a livelock (default 100,000). */
  readonly maxStepsPerInstant: number;
}

export const DEFAULT_BOUNDS: Bounds = {
  maxSteps: 1_000_000,
  maxPendingSteps: 1_000_000,
  maxTraceEvents: 2_000_000,
  maxStepsPerInstant: 100_000,
};

/** How ties among ready steps are broken. */
export interface ScheduleOptions {
  /**
   * Explicit choices, one per tie (a pick among n > 1 ready steps uses `path[k] % n`). Every run
   * reports the choices it made, so any run can be replayed from them.
   */
  readonly path?: readonly number[];
  /** What decides ties once `path` is used up: the seeded PRNG (default) or FIFO (choice 0). */
  readonly whenPathExhausted?: 'prng' | 'fifo';
}

export interface EngineOptions extends ScheduleOptions {
  /** The run's seed: every random choice, id and tie-break derives from it. */
  readonly seed: number;
  readonly bounds?: Partial<Bounds>;
  /** Record trace events (default true). Property runs turn it off and replay failures with it on. */
  readonly trace?: boolean;
  /**
   * What a task error means. Default: the run stops with a `finding`. The world installs a
   * handler that may crash the agent instead.
   */
  readonly onTaskError?: (task: Task, finding: Finding, error: unknown) => 'stop' | 'continue';
}

/** What a step is: its family (`kind`), a readable label and the agent process that owns it. */
export interface StepSpec {
  /** Namespaced family: `'kube'`, `'call'`, `'timer'`, `'task'`, `'fault'`, `'probe'`, `'action'`. */
  readonly kind: string;
  readonly label: string;
  /** The agent process owning the step; its steps are cancelled when that process dies. */
  readonly owner?: string;
}

/** A handle to cancel a scheduled step. */
export interface StepHandle {
  readonly seq: number;
  readonly timeMs: number;
}

/** The result of an invariant: nothing (holds), a message, or a message with the state that shows it. */
export type InvariantResult = undefined | string | { readonly message: string; readonly state?: JsonValue };

/** An invariant violated after a step. */
export interface Violation {
  readonly invariant: string;
  readonly message: string;
  readonly step: number;
  readonly timeMs: number;
  readonly state?: JsonValue;
}

export type FindingKind =
  /** Controller code threw, or a task's promise rejected. */
  | 'controller-threw'
  /** A world call's promise rejected and nothing handled it. */
  | 'unhandled-rejection'
  /** A task awaited a promise the simulation does not control (real I/O, a real timer). */
  | 'awaited-outside'
  /** Too many steps at one simulated instant: something loops without letting time pass. */
  | 'livelock';

/** A problem in the controller under test, reported with the step and stack. */
export interface Finding {
  readonly kind: FindingKind;
  readonly message: string;
  readonly step: number;
  readonly timeMs: number;
  readonly agent?: string;
  readonly task?: string;
  readonly stack?: string;
}

export type BoundName = 'steps' | 'pending-steps' | 'trace-events';

/** How a run ended. Every outcome carries the tie-break choices made, for replay by path. */
export type RunOutcome = (
  | { readonly status: 'ok'; readonly reason: 'horizon' | 'idle' | 'stopped' }
  | { readonly status: 'violation'; readonly violation: Violation }
  | { readonly status: 'finding'; readonly finding: Finding }
  | { readonly status: 'bound'; readonly bound: BoundName; readonly message: string }
) & {
  readonly seed: number;
  readonly steps: number;
  readonly timeMs: number;
  readonly choices: readonly number[];
};

type TaskState = 'running' | 'done' | 'failed' | 'killed';

/** Liveness of an owner (an agent process): once dead, none of its tasks runs again. */
interface OwnerRecord {
  dead: boolean;
}

/** A unit of controller code: a start routine, a handler invocation, a worker loop, a timer callback. */
export class Task {
  readonly id: number;
  readonly owner: string;
  readonly name: string;
  readonly #ownerRec: OwnerRecord;
  #state: TaskState = 'running';
  /**
   * Set when the task is known to be parked (awaiting a pending world call) or finished. A `done`
   * task (its root function returned) may still have world calls in flight and `.then` chains on them.
   */
  parked = false;
  /** Pending world calls whose promise someone is waiting on. */
  subscribed = 0;
  /** Helpers (`Engine.tracked`) it started that have not settled yet. */
  helpers = 0;

  /** @internal */
  constructor(id: number, owner: string, name: string, ownerRec: OwnerRecord) {
    this.id = id;
    this.owner = owner;
    this.name = name;
    this.#ownerRec = ownerRec;
  }

  /** `running` until its root function returns (`done`), throws (`failed`) or its process dies (`killed`). */
  get state(): TaskState {
    return this.#ownerRec.dead && this.#state !== 'failed' ? 'killed' : this.#state;
  }

  set state(s: TaskState) {
    this.#state = s;
  }

  /** No more of its code may run: killed or failed. */
  get inactive(): boolean {
    return this.#ownerRec.dead || this.#state === 'killed' || this.#state === 'failed';
  }

  get label(): string {
    return `${this.owner}/${this.name}#${this.id}`;
  }
}

/** What a pending call needs of its engine when its promise is awaited. */
interface AwaitHooks {
  current(): Task | null;
  parked(task: Task): void;
}

/** One world call in flight: its task, its promise and how to settle it. */
class PendingCall<T> {
  readonly task: Task;
  readonly label: string;
  readonly promise: WorldPromise<T>;
  readonly #hooks: AwaitHooks;
  subscribed = false;
  settled = false;
  resolve!: (v: T) => void;
  reject!: (e: unknown) => void;

  constructor(task: Task, label: string, hooks: AwaitHooks) {
    this.task = task;
    this.label = label;
    this.#hooks = hooks;
    this.promise = new WorldPromise<T>((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    });
    this.promise.call = this;
  }

  /** Someone awaits (or chains on) the call's promise: the task has parked on it, if it is the one running. */
  awaited(): void {
    const task = this.task;
    if (this.settled || task.inactive) return;
    if (!this.subscribed) {
      this.subscribed = true;
      task.subscribed++;
    }
    if (this.#hooks.current() === task) this.#hooks.parked(task);
  }
}

/**
 * The promise a world call returns. Its `then` tells the engine someone now waits on the call,
 * which is how the engine knows the running task has parked. Derived promises are plain ones.
 */
class WorldPromise<T> extends Promise<T> {
  static override get [Symbol.species](): PromiseConstructor {
    return Promise;
  }

  /** The call to tell when the promise is awaited (none once its failure was reported unawaited). */
  call: { awaited(): void } | undefined;

  override then<R1 = T, R2 = never>(
    onfulfilled?: ((value: T) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    const c = this.call;
    if (c !== undefined) c.awaited();
    return super.then(onfulfilled, onrejected);
  }
}

/**
 * The simulation engine. It owns the clock, the queue, the seeded streams, the trace and the
 * tasks; nothing in netsim keeps module-level mutable state.
 *
 * @example
 * ```ts
 * const engine = new Engine({ seed: 1 });
 * engine.after(10, { kind: 'demo', label: 'hello' }, () => engine.emit('demo.hello', { n: 1 }));
 * const outcome = await engine.run({ untilMs: 100 });
 * // outcome.status === 'ok', engine.trace.events holds sim.step and demo.hello
 * ```
 */
export class Engine {
  readonly seed: number;
  readonly bounds: Bounds;
  readonly trace: TraceRecorder;
  /** Independent seeded streams: `schedule` breaks ties, `ids` names things, `world` and `faults` serve the layers. */
  readonly streams: { readonly [K in StreamName]: Prng };

  readonly #queue = new EventQueue();
  readonly #path: readonly number[] | undefined;
  readonly #whenPathExhausted: 'prng' | 'fifo';
  readonly #onTaskError: ((task: Task, finding: Finding, error: unknown) => 'stop' | 'continue') | undefined;
  readonly #choices: number[] = [];
  readonly #invariants: { readonly name: string; readonly check: () => InvariantResult }[] = [];
  readonly #afterStep: (() => void)[] = [];
  #pathIndex = 0;
  #seq = 0;
  #taskSeq = 0;
  #step = 0;
  #stepsThisInstant = 0;
  #instantMs = -1;
  #current: Task | null = null;
  #toSettle: Task[] = [];
  /** The task the engine waits on to park, how to end that wait, and the macrotask that ends it otherwise. */
  #waitingOn: Task | null = null;
  #resolveWait: ((how: 'signal' | 'macrotask') => void) | null = null;
  #waitHandle: ReturnType<typeof realSetImmediate> | undefined;
  // Bound once per engine, not a closure per wait.
  readonly #startWait: (resolve: (how: 'signal' | 'macrotask') => void) => void = this.#beginWait.bind(this);
  readonly #onMacrotask: () => void = this.#endWait.bind(this, 'macrotask');
  #running = false;
  #stop: RunOutcome | null = null;
  readonly #ownerCounts = new Map<string, number>();
  readonly #owners = new Map<string, OwnerRecord>();
  /** What pending calls ask when their promise is awaited (one object per engine, not a closure per call). */
  readonly #awaitHooks: AwaitHooks = Engine.#hooksOf(this);

  static #hooksOf(e: Engine): AwaitHooks {
    return {
      current() {
        return e.#current;
      },
      parked(task) {
        e.#parked(task);
      },
    };
  }
  readonly #rechecks = new Set<number>();

  constructor(opts: EngineOptions) {
    if (!Number.isSafeInteger(opts.seed)) {
      throw new SimError('invalid-argument', `Engine: the seed must be a safe integer, got ${String(opts.seed)}`);
    }
    this.seed = opts.seed;
    this.bounds = { ...DEFAULT_BOUNDS, ...opts.bounds };
    for (const [k, v] of Object.entries(this.bounds)) {
      if (!Number.isSafeInteger(v) || v < 1) throw new SimError('invalid-argument', `Engine: bounds.${k} must be a positive integer, got ${String(v)}`);
    }
    this.streams = deriveStreams(opts.seed);
    this.trace = new TraceRecorder({ enabled: opts.trace ?? true, maxEvents: this.bounds.maxTraceEvents });
    this.#path = opts.path;
    this.#whenPathExhausted = opts.whenPathExhausted ?? 'prng';
    this.#onTaskError = opts.onTaskError;
  }

  // ---- clock and queue ------------------------------------------------------------------------

  /** Simulated time in milliseconds (an integer). */
  now(): number {
    return this.#queue.readyTimeMs;
  }

  /** The number of the step running now (0 before the first). */
  get step(): number {
    return this.#step;
  }

  /** Live steps waiting in the queue. */
  get pendingSteps(): number {
    return this.#queue.size;
  }

  /** The tie-break choices made so far (index among the ready steps, for each pick among several). */
  get choices(): readonly number[] {
    return this.#choices;
  }

  /** The task whose code is running, if any. */
  get currentTask(): Task | null {
    return this.#current;
  }

  /** Schedule `run` as a step `delayMs` from now. */
  after(delayMs: number, spec: StepSpec, run: () => void): StepHandle {
    if (!Number.isSafeInteger(delayMs) || delayMs < 0) {
      throw new SimError('invalid-argument', `cannot schedule "${spec.label}" after ${String(delayMs)} ms: the delay must be a non-negative integer`);
    }
    return this.#push(this.now() + delayMs, spec, run);
  }

  /** Schedule `run` as a step at absolute time `timeMs` (not before now). */
  at(timeMs: number, spec: StepSpec, run: () => void): StepHandle {
    if (!Number.isSafeInteger(timeMs) || timeMs < this.now()) {
      throw new SimError('invalid-argument', `cannot schedule "${spec.label}" at t=${String(timeMs)} ms: it must be an integer not before now (t=${this.now()})`);
    }
    return this.#push(timeMs, spec, run);
  }

  /**
   * The scheduler lower layers take (`@netsim/kube`): a step per delivery.
   * Steps scheduled this way belong to no agent process.
   */
  schedule(delayMs: number, label: string, run: () => void): void {
    this.after(delayMs, { kind: 'kube', label }, run);
  }

  /** Cancel a scheduled step (no effect if it already ran). */
  cancel(handle: StepHandle): void {
    this.#queue.cancel(handle as QueuedStep);
  }

  /** Cancel every step owned by `owner` (an agent process that died). */
  cancelOwned(owner: string): number {
    return this.#queue.cancelOwned(owner);
  }

  #push(timeMs: number, spec: StepSpec, run: () => void): QueuedStep {
    if (this.#queue.size >= this.bounds.maxPendingSteps) {
      throw new SimError(
        'bound-pending-steps',
        `the event queue is full (${this.bounds.maxPendingSteps} pending steps) while scheduling "${spec.label}" at t=${timeMs} ms: something schedules steps in a loop, or raise bounds.maxPendingSteps`,
      );
    }
    const step: QueuedStep = {
      seq: ++this.#seq,
      timeMs,
      kind: spec.kind,
      label: spec.label,
      owner: spec.owner ?? null,
      run,
      cancelled: false,
    };
    // A dead process schedules nothing: the step is born cancelled.
    if (step.owner !== null && this.#owners.get(step.owner)?.dead === true) step.cancelled = true;
    else this.#queue.push(step);
    return step;
  }

  // ---- trace ----------------------------------------------------------------------------------

  /** Record a trace event at the current step and time. */
  emit(type: string, fields?: JsonObject): void {
    this.trace.record(this.#step, this.now(), type, fields);
  }

  /** The trace events recorded so far. */
  get events(): readonly TraceEvent[] {
    return this.trace.events;
  }

  // ---- invariants -----------------------------------------------------------------------------

  /** Check `check` after every step; the first violation stops the run. */
  addInvariant(name: string, check: () => InvariantResult): void {
    if (this.#invariants.some((i) => i.name === name)) throw new SimError('duplicate-name', `an invariant named "${name}" is already registered`);
    this.#invariants.push({ name, check });
  }

  /** Run `fn` after every step, before invariants (the world uses it for bookkeeping). */
  onAfterStep(fn: () => void): void {
    this.#afterStep.push(fn);
  }

  /** Stop the run after the current step with `ok` / `stopped`. */
  requestStop(): void {
    this.#stop ??= this.#outcome({ status: 'ok', reason: 'stopped' });
  }

  // ---- tasks ----------------------------------------------------------------------------------

  /** Create a task record for `owner` (does not run anything). */
  newTask(owner: string, name: string): Task {
    return new Task(++this.#taskSeq, owner, name, this.#ownerRecord(owner));
  }

  /**
   * Run controller code as `task`, now, inside the current step. Sync code finishes here; async
   * code runs until it parks on a world call, and the engine waits for that before the next pick.
   * A throw or rejection becomes a finding.
   */
  activate(task: Task, fn: () => unknown): void {
    if (task.inactive) return;
    assert(task.state === 'running', `activate on a ${task.state} task ${task.label}`);
    if (this.#toSettle.length > 0) {
      // Exactly one task runs per step, so that every effect is attributable to one task: a
      // second activation in the same step becomes its own step at the same instant.
      this.after(0, { kind: 'task', label: `run ${task.label}`, owner: task.owner }, () => this.activate(task, fn));
      return;
    }
    this.#current = task;
    task.parked = false;
    let result: unknown;
    try {
      result = fn();
    } catch (e) {
      this.#taskFailed(task, e);
      return;
    }
    if (result instanceof Promise) {
      // If the root is itself a world call, `then` marks it awaited, which is what returning it means.
      void result.then(
        () => {
          if (task.state === 'running') task.state = 'done';
          this.#parked(task);
        },
        (e: unknown) => {
          if (task.state === 'running') this.#taskFailed(task, e);
          this.#parked(task);
        },
      );
      this.#toSettle.push(task);
    } else {
      task.state = 'done';
    }
  }

  /**
   * Schedule a step that starts `fn` as a new task of `owner` after `delayMs`.
   * Returns the task (not yet running).
   */
  spawn(owner: string, name: string, delayMs: number, fn: () => unknown): Task {
    const task = this.newTask(owner, name);
    this.after(delayMs, { kind: 'task', label: `start ${task.label}`, owner }, () => this.activate(task, fn));
    return task;
  }

  /**
   * A call from the running task into the world: schedules a step `delayMs` from now whose effect
   * runs `effect` and settles the returned promise with its value or error.
   */
  call<T>(spec: { readonly kind: string; readonly label: string; readonly delayMs?: number }, effect: () => T): Promise<T> {
    const c = this.#newCall<T>(spec.label);
    this.after(spec.delayMs ?? 0, { kind: spec.kind, label: spec.label, owner: c.task.owner }, () => this.#complete(c, effect));
    return c.promise;
  }

  /**
   * A helper made of world calls (an `async` function over them, like `ctx.iptables.append`),
   * started by the running task. Its promise fails like a world call's: when nothing awaits it
   * (no `await`, `then` or `catch` before it fails), the failure is a finding of the task that
   * started it (`unhandled-rejection`), never a process-level unhandled rejection.
   */
  tracked<T>(label: string, start: () => Promise<T>): Promise<T> {
    const task = this.#current;
    const inner = start();
    if (task === null) return inner;
    let subscribed = false;
    // While the helper runs, each of its calls' steps waits for the helper's code to go on
    // (the task's root may have returned already): its failure is seen within the run.
    task.helpers++;
    const out = new WorldPromise<T>((resolve, reject) => {
      inner.then(
        (v) => {
          task.helpers--;
          resolve(v);
        },
        (e: unknown) => {
        task.helpers--;
        if (subscribed || task.inactive) {
          reject(e);
          return;
        }
        // Nobody will ever read `out`: leave it pending, and report the failure once.
        this.#taskFailed(task, e, 'unhandled-rejection', `${label} failed and nothing awaited it`);
        },
      );
    });
    out.call = {
      awaited(): void {
        subscribed = true;
      },
    };
    return out;
  }

  /**
   * A world call that completes only when `wake` is called, from any later step (a workqueue
   * item arriving, SIGTERM). Resuming the task is then its own step. `wake` after the first
   * call does nothing.
   */
  park<T>(spec: { readonly kind: string; readonly label: string }): { readonly promise: Promise<T>; wake(value: T): void; fail(error: unknown): void } {
    const c = this.#newCall<T>(spec.label);
    const schedule = this.#parkWaker(c, spec);
    // Methods, not arrow properties: the handle may be passed around detached (they use no `this`).
    return {
      promise: c.promise,
      wake(value: T): void {
        schedule(() => value);
      },
      fail(error: unknown): void {
        schedule(() => {
          throw error;
        });
      },
    };
  }

  /** The first wake-up of a parked call schedules its completion; later ones do nothing. */
  #parkWaker<T>(c: PendingCall<T>, spec: { readonly kind: string; readonly label: string }): (effect: () => T) => void {
    let woken = false;
    return (effect) => {
      if (woken || c.task.inactive) return;
      woken = true;
      this.after(0, { kind: spec.kind, label: spec.label, owner: c.task.owner }, () => this.#complete(c, effect));
    };
  }

  #newCall<T>(label: string): PendingCall<T> {
    const task = this.#current;
    if (task === null || task.inactive) {
      throw new SimError(
        'no-current-task',
        `world call "${label}" made outside a controller task: world calls are made by controller code the simulator runs (start, handlers, workers, timers), not from outside a step`,
      );
    }
    return new PendingCall<T>(task, label, this.#awaitHooks);
  }

  /** Run a world call's effect now (its step) and settle its promise with the value or error. */
  #complete<T>(c: PendingCall<T>, effect: () => T): void {
    const task = c.task;
    // A task whose root function returned may still have calls in flight (fire-and-forget, or
    // `.then` chains): their effects happen as long as the process lives.
    if (task.inactive) return;
    this.#current = task;
    task.parked = false;
    c.settled = true;
    if (c.subscribed) task.subscribed--;
    let value: T;
    try {
      value = effect();
    } catch (e) {
      if (!c.subscribed) {
        // Keep Node from raising a process-level unhandled rejection: report it as a finding.
        c.promise.call = undefined;
        void c.promise.then(undefined, () => undefined);
        c.reject(e);
        this.#taskFailed(task, e, 'unhandled-rejection', `world call "${c.label}" failed and nothing awaited it`);
        return;
      }
      c.reject(e);
      this.#toSettle.push(task);
      return;
    }
    c.resolve(value);
    if (c.subscribed || task.helpers > 0) this.#toSettle.push(task);
  }

  /**
   * The process `owner` died: none of its tasks runs again, its pending steps are dropped and
   * steps it would schedule later are ignored.
   */
  killOwner(owner: string): void {
    this.#ownerRecord(owner).dead = true;
    this.cancelOwned(owner);
  }

  /** Whether `owner` was killed. */
  isDead(owner: string): boolean {
    return this.#owners.get(owner)?.dead ?? false;
  }

  #ownerRecord(owner: string): OwnerRecord {
    let r = this.#owners.get(owner);
    if (r === undefined) {
      r = { dead: false };
      this.#owners.set(owner, r);
    }
    return r;
  }

  #parked(task: Task): void {
    task.parked = true;
    if (this.#waitingOn === task && this.#resolveWait !== null) this.#endWait('signal');
  }

  #taskFailed(task: Task, e: unknown, kind: FindingKind = 'controller-threw', prefix?: string): void {
    task.state = 'failed';
    const thrown = describeThrown(e);
    const finding: Finding = {
      kind,
      message: `${prefix !== undefined ? prefix + ': ' : ''}${task.label} threw: ${thrown.message}`,
      step: this.#step,
      timeMs: this.now(),
      agent: task.owner,
      task: task.name,
      ...(thrown.stack !== undefined ? { stack: cleanStack(thrown.stack) } : {}),
    };
    this.emit('sim.finding', { kind, agent: task.owner, task: task.name, message: finding.message });
    const decision = this.#onTaskError?.(task, finding, e) ?? 'stop';
    if (decision === 'stop') this.#stop ??= this.#outcome({ status: 'finding', finding });
  }

  /** Wait until `task` is parked or finished; 'macrotask' means it did neither. */
  #waitParked(task: Task): Promise<'signal' | 'macrotask'> {
    if (task.parked || task.inactive) return Promise.resolve('signal');
    this.#waitingOn = task;
    return new Promise(this.#startWait);
  }

  #beginWait(resolve: (how: 'signal' | 'macrotask') => void): void {
    this.#resolveWait = resolve;
    // tidy-allow: the one allowed macrotask: a task that neither parks nor ends before it fires awaited something outside the simulation.
    this.#waitHandle = realSetImmediate(this.#onMacrotask);
  }

  /** The waited-on task parked or ended ('signal'), or a macrotask came first. */
  #endWait(how: 'signal' | 'macrotask'): void {
    const resolve = this.#resolveWait;
    if (how === 'signal') realClearImmediate(this.#waitHandle);
    this.#waitingOn = null;
    this.#resolveWait = null;
    this.#waitHandle = undefined;
    resolve?.(how);
  }

  async #settle(): Promise<void> {
    while (this.#toSettle.length > 0) {
      const task = this.#toSettle.shift() as Task;
      const how = await this.#waitParked(task);
      if (how === 'macrotask' && task.state === 'running' && !task.parked && task.subscribed === 0) {
        task.state = 'failed';
        const finding: Finding = {
          kind: 'awaited-outside',
          message: `controller awaited something outside the simulation: ${task.label} neither awaited a world call nor finished after step ${this.#step} (a real timer, real I/O, or a promise another task resolves by hand?)`,
          step: this.#step,
          timeMs: this.now(),
          agent: task.owner,
          task: task.name,
        };
        this.emit('sim.finding', { kind: finding.kind, agent: task.owner, task: task.name, message: finding.message });
        const decision = this.#onTaskError?.(task, finding, undefined) ?? 'stop';
        if (decision === 'stop') this.#stop ??= this.#outcome({ status: 'finding', finding });
      }
    }
  }

  // ---- the loop -------------------------------------------------------------------------------

  #choose(n: number): number {
    const path = this.#path;
    if (path !== undefined && this.#pathIndex < path.length) {
      const c = path[this.#pathIndex++] as number;
      return ((c % n) + n) % n;
    }
    if (path !== undefined && this.#whenPathExhausted === 'fifo') return 0;
    return this.streams.schedule.int(n);
  }

  #outcome(
    o:
      | { readonly status: 'ok'; readonly reason: 'horizon' | 'idle' | 'stopped' }
      | { readonly status: 'violation'; readonly violation: Violation }
      | { readonly status: 'finding'; readonly finding: Finding }
      | { readonly status: 'bound'; readonly bound: BoundName; readonly message: string },
  ): RunOutcome {
    return { ...o, seed: this.seed, steps: this.#step, timeMs: this.now(), choices: this.#choices.slice() };
  }

  /**
   * Run steps until the horizon `untilMs` (inclusive), until nothing is left to do, or until an
   * invariant, a finding or a bound stops the run. May be called again to continue.
   */
  async run(opts: { readonly untilMs?: number } = {}): Promise<RunOutcome> {
    if (this.#running) throw new SimError('reentrant-run', 'Engine.run called while the engine is already running');
    const untilMs = opts.untilMs ?? Number.POSITIVE_INFINITY;
    if (untilMs !== Number.POSITIVE_INFINITY && (!Number.isSafeInteger(untilMs) || untilMs < this.now())) {
      throw new SimError('invalid-argument', `run: untilMs must be an integer not before now (t=${this.now()}), got ${String(untilMs)}`);
    }
    this.#running = true;
    try {
      if (this.#stop !== null) return this.#stop;
      for (;;) {
        if (!this.#queue.advance(untilMs)) {
          if (untilMs === Number.POSITIVE_INFINITY) return this.#outcome({ status: 'ok', reason: 'idle' });
          // Time passes to the horizon; invariants look at the world one last time there, so a
          // problem that outlived its settle time after the last step is still caught.
          const moved = untilMs > this.now();
          this.#queue.advanceIdleTo(untilMs);
          const violated = moved ? this.#checkInvariants() : null;
          if (violated !== null) return violated;
          return this.#outcome({ status: 'ok', reason: 'horizon' });
        }
        if (this.#step >= this.bounds.maxSteps) {
          this.#stop = this.#outcome({
            status: 'bound',
            bound: 'steps',
            message: `the run reached ${this.bounds.maxSteps} steps at t=${this.now()} ms before its horizon: a busy loop, or raise bounds.maxSteps`,
          });
          return this.#stop;
        }
        const ready = this.#queue.ready;
        const n = ready.length;
        let index = 0;
        if (n > 1) {
          index = this.#choose(n);
          this.#choices.push(index);
        }
        const step = this.#queue.take(index);
        this.#step++;
        if (step.timeMs !== this.#instantMs) {
          this.#instantMs = step.timeMs;
          this.#stepsThisInstant = 0;
          this.#ownerCounts.clear();
        }
        this.#stepsThisInstant++;
        if (step.owner !== null) this.#ownerCounts.set(step.owner, (this.#ownerCounts.get(step.owner) ?? 0) + 1);
        if (this.trace.enabled) {
          const f: Record<string, JsonValue> = { kind: step.kind, label: step.label };
          if (step.owner !== null) f['owner'] = step.owner;
          if (n > 1) {
            f['ready'] = n;
            f['pick'] = index;
          }
          this.emit('sim.step', f);
        }
        if (this.#stepsThisInstant > this.bounds.maxStepsPerInstant) {
          this.#stop = this.#outcome({ status: 'finding', finding: this.#livelock() });
          return this.#stop;
        }
        try {
          step.run();
        } catch (e) {
          if (e instanceof SimError && e.code === 'bound-pending-steps') {
            this.#stop = this.#outcome({ status: 'bound', bound: 'pending-steps', message: e.message });
            return this.#stop;
          }
          throw e;
        }
        if (this.#toSettle.length > 0) await this.#settle();
        this.#current = null;
        if (this.#stop !== null) return this.#stop;
        for (const f of this.#afterStep) f();
        if (this.#stop !== null) return this.#stop;
        const violated = this.#checkInvariants();
        if (violated !== null) return violated;
        if (this.trace.overflowed) {
          this.#stop = this.#outcome({
            status: 'bound',
            bound: 'trace-events',
            message: `the trace reached ${this.bounds.maxTraceEvents} events at step ${this.#step}: shorten the run, turn tracing off, or raise bounds.maxTraceEvents`,
          });
          return this.#stop;
        }
      }
    } finally {
      this.#running = false;
    }
  }

  /** Check every invariant now; on the first violation set and return the stop outcome. */
  #checkInvariants(): RunOutcome | null {
    for (const inv of this.#invariants) {
      const r = inv.check();
      if (r === undefined) continue;
      const violation: Violation =
        typeof r === 'string'
          ? { invariant: inv.name, message: r, step: this.#step, timeMs: this.now() }
          : { invariant: inv.name, message: r.message, step: this.#step, timeMs: this.now(), ...(r.state !== undefined ? { state: r.state } : {}) };
      this.emit('sim.violation', { invariant: inv.name, message: violation.message, ...(violation.state !== undefined ? { state: violation.state } : {}) });
      this.#stop = this.#outcome({ status: 'violation', violation });
      return this.#stop;
    }
    return null;
  }

  /**
   * Make sure a step happens at `timeMs`, so invariants are checked then (a settle time ending).
   * One check step per instant, however many ask.
   */
  recheckAt(timeMs: number): void {
    if (!Number.isSafeInteger(timeMs) || timeMs <= this.now() || this.#rechecks.has(timeMs)) return;
    this.#rechecks.add(timeMs);
    this.at(timeMs, { kind: 'check', label: 'invariant settle deadline' }, () => {
      this.#rechecks.delete(timeMs);
    });
  }

  #livelock(): Finding {
    let top: string | undefined;
    let topN = 0;
    for (const [owner, count] of [...this.#ownerCounts].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
      if (count > topN) {
        top = owner;
        topN = count;
      }
    }
    return {
      kind: 'livelock',
      message: `livelock: more than ${this.bounds.maxStepsPerInstant} steps ran at t=${this.now()} ms without time passing${top !== undefined ? ` (${topN} of them by ${top})` : ''}: a controller loops on world calls without waiting`,
      step: this.#step,
      timeMs: this.now(),
      ...(top !== undefined ? { agent: top } : {}),
    };
  }
}

/** Stack traces relative to the working directory, so traces compare equal across checkouts. */
/**
 * What a controller threw, as text, whatever it threw: an Error (even one whose `message` or
 * `stack` getter throws), a string, a Symbol, an object without a prototype, a revoked Proxy.
 * Reading it never throws.
 */
export function describeThrown(e: unknown): { readonly message: string; readonly stack?: string } {
  const read = (f: () => unknown): unknown => {
    try {
      return f();
    } catch {
      return undefined;
    }
  };
  let isError = false;
  try {
    isError = e instanceof Error;
  } catch {
    // A revoked Proxy throws on every trap, `instanceof` included.
    return { message: 'a revoked Proxy (no message can be read from it)' };
  }
  if (isError) {
    const message = read(() => (e as Error).message);
    const stack = read(() => (e as Error).stack);
    const name = read(() => (e as Error).name);
    return {
      message: typeof message === 'string' ? message : `${typeof name === 'string' ? name : 'Error'} (its message could not be read)`,
      ...(typeof stack === 'string' ? { stack } : {}),
    };
  }
  if (typeof e === 'string') return { message: e };
  if (typeof e === 'symbol') {
    const text = read(() => e.toString());
    return { message: `a Symbol: ${typeof text === 'string' ? text : 'Symbol()'}` };
  }
  if (typeof e === 'number' || typeof e === 'boolean' || typeof e === 'bigint') return { message: String(e) };
  if (e === undefined) return { message: 'undefined' };
  if (e === null) return { message: 'null' };
  // An object or function: its own toString if it has a useful one, else its tag and JSON.
  const text = read(() => (e as { toString(): unknown }).toString());
  if (typeof text === 'string' && text !== '[object Object]') return { message: text };
  const json = read(() => JSON.stringify(e));
  const tag = read(() => Object.prototype.toString.call(e));
  return { message: `a non-Error ${typeof tag === 'string' ? tag : 'object'}${typeof json === 'string' && json !== '{}' ? `: ${json.length > 200 ? `${json.slice(0, 200)}…` : json}` : ''}` };
}

function cleanStack(stack: string): string {
  const cwd = process.cwd();
  return stack
    .split('\n')
    .filter((l) => !l.includes('node:internal') && !l.includes('/node_modules/'))
    .map((l) => l.split(cwd + '/').join(''))
    .join('\n');
}
