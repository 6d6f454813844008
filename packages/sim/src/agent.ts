/**
 * Agents: a controller running as a process on a node, with the lifecycle of a real DaemonSet
 * Pod. A process has an incarnation number; everything it keeps in memory (caches, informers,
 * workqueues) lives in the controller instance created for that incarnation, so a crash or
 * restart loses it, while the node's kernel state (rules, conntrack) stays.
 *
 * - start: a new incarnation; the controller's `start` runs as a task.
 * - graceful stop (SIGTERM): `ctx.stopping` turns true, `ctx.done()` resolves, the controller's
 *   `stop` runs; the process exits when `stop` returns, or is killed when the grace period ends.
 * - crash: the process dies at an interleaving point (between two steps): no more of its code runs,
 *   its pending world calls are dropped.
 * - restart: a fresh incarnation after a delay, as kubelet or the DaemonSet controller would.
 */
import type { Pod, Service } from '@netsim/kube';
import { SimError } from './errors.ts';
import type { Engine, Task } from './engine.ts';
import type { JsonObject } from './json.ts';

/** Log levels of the controller logger. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** A structured logger whose lines land in the trace as `agent.log` events. */
export interface Logger {
  debug(msg: string, fields?: JsonObject): void;
  info(msg: string, fields?: JsonObject): void;
  warn(msg: string, fields?: JsonObject): void;
  error(msg: string, fields?: JsonObject): void;
}

/** A periodic loop started with {@link ProcessContext.every}. */
export interface Ticker {
  /** Stop after the current run (if any). */
  stop(): void;
}

/**
 * What every controller process gets from the engine itself: identity, time, concurrency and
 * logging. The world adds the kube client, informers, workqueues and the `iptables` handle
 * (see `ControllerContext`).
 */
export interface ProcessContext {
  /** The node this process runs on. */
  readonly node: string;
  /** `node/controller`, the agent's stable name. */
  readonly agent: string;
  /** 1 for the first start, then 2, 3, … after each restart. */
  readonly incarnation: number;
  readonly log: Logger;
  /** Simulated time in milliseconds. */
  now(): number;
  /** Resolve after `ms` of simulated time (an interleaving point even for 0). */
  sleep(ms: number): Promise<void>;
  /** Start `fn` as a concurrent task of this process (Go's `go f()`), at the next step. */
  go(name: string, fn: () => unknown): void;
  /** Run `fn` after `delayMs`, as its own task. */
  after(delayMs: number, name: string, fn: () => unknown): void;
  /**
   * Run `fn` now and then every `periodMs` after each run finishes (client-go's `wait.Until`):
   * runs never overlap, and the loop ends when the process is stopping or `stop()` is called.
   */
  every(periodMs: number, name: string, fn: () => unknown, opts?: { readonly firstDelayMs?: number }): Ticker;
  /** True once SIGTERM was delivered. */
  readonly stopping: boolean;
  /** Resolves when SIGTERM is delivered (Go's `<-ctx.Done()`). */
  done(): Promise<void>;
  /** Yield to the engine (an interleaving point), like `runtime.Gosched()`. */
  yield(): Promise<void>;
}

/** One process of a controller: created fresh at every (re)start. */
export interface ControllerInstance {
  /** Start-up; may be async and may return while goroutines (`ctx.go`) keep running. */
  start(): unknown;
  /** The SIGTERM handler. The process exits when it returns (or at the end of the grace period). */
  stop?(): unknown;
}

/**
 * A controller: a name and a factory for its processes. Everything an instance keeps in memory
 * is lost when its process dies; state that must survive lives in the world (rules, annotations).
 *
 * @example
 * ```ts
 * const ticker: Controller<ProcessContext> = {
 *   name: 'ticker',
 *   create: (ctx) => ({
 *     start: () => { ctx.every(1000, 'tick', () => ctx.log.info('tick')); },
 *   }),
 * };
 * ```
 */
export interface Controller<C extends ProcessContext = ProcessContext> {
  readonly name: string;
  create(ctx: C): ControllerInstance;
  /**
   * What the controller says about itself, so that the built-in, controller-agnostic invariants
   * can check names only the controller knows (the chains it owns, the annotations it publishes,
   * how long it may back off). Absent: those invariants have nothing of this controller's to check,
   * and say so.
   */
  readonly declares?: ControllerDeclaration;
}

/** A netfilter table name, as a controller declares chains in it. */
export type DeclaredTable = 'raw' | 'mangle' | 'nat' | 'filter';

/** A chain an agent owns: once programmed it must never be empty nor unhooked. */
export interface OwnedChain {
  readonly table: DeclaredTable;
  readonly chain: string;
  /** The chains (built-in or owned) that jump to it once it is programmed, e.g. `['POSTROUTING']`. */
  readonly hookedFrom?: readonly string[];
  /** A target some rule of the chain must have once programmed, e.g. `MASQUERADE`. */
  readonly requiredTarget?: string;
}

/**
 * A chain of an nftables table a controller owns: once programmed it must keep its hook (a base
 * chain), the jumps to it, and a rule with the required statement, at every instant.
 */
export interface OwnedNftChain {
  readonly family: 'ip' | 'inet';
  readonly table: string;
  readonly chain: string;
  /** A base chain: the hook it is on once programmed, e.g. `postrouting`. */
  readonly hook?: 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting';
  /** Chains of the same table that jump or go to it once programmed. */
  readonly jumpedFrom?: readonly string[];
  /** A statement some rule must hold once programmed: `masquerade`, `snat`, `dnat`, `redirect` or `mark` (`meta mark set`). */
  readonly requiredStatement?: 'masquerade' | 'snat' | 'dnat' | 'redirect' | 'mark';
}

/** One mapping a controller publishes for a Pod: node port → Pod port. */
export interface PublishedMapping {
  readonly protocol: 'TCP' | 'UDP';
  readonly nodePort: number;
  readonly podPort: number;
  /** The Pod IP the mapping was published for, when the annotation says it. */
  readonly podIP?: string;
}

/** An annotation a controller publishes on Pods, and how to read it. */
export interface PublishedAnnotation {
  /** The annotation key, e.g. `nodeportlocal.antrea.io`. */
  readonly key: string;
  /** Reads the annotation's value; `undefined` when it cannot be read (itself a finding). */
  parse(value: string): readonly PublishedMapping[] | undefined;
  /**
   * The mappings a live Pod must get, given every Service (empty: the Pod is not eligible). With
   * it, liveness requires every eligible Pod to publish them once the cluster is calm, and a
   * controller that publishes nothing fails.
   */
  eligible?(pod: Pod, services: readonly Service[]): readonly EligiblePort[];
}

/** A Pod port a controller must publish a mapping for. */
export interface EligiblePort {
  readonly podPort: number;
  readonly protocol: 'TCP' | 'UDP';
}

/** What a controller does to the data plane, so the datapath probes that test it apply. */
export type DatapathRole =
  /** Masquerades Pod egress that leaves the cluster CIDR (and only that): the Pod egress probes. */
  | 'pod-egress-masquerade'
  /** Implements Services (ClusterIP, NodePort with both traffic policies): the Service probes. */
  | 'service-proxy';

/** A controller's declaration (see {@link Controller.declares}). */
export interface ControllerDeclaration {
  readonly ownedChains?: readonly OwnedChain[];
  /** Chains of nftables tables it owns (see {@link OwnedNftChain}). */
  readonly ownedNftChains?: readonly OwnedNftChain[];
  readonly annotations?: readonly PublishedAnnotation[];
  /** The longest delay between two retries of a failed sync (ms); bounds liveness checks. */
  readonly maxBackoffMs?: number;
  /**
   * The delay before the first retry of a failed sync (ms), doubling up to {@link maxBackoffMs}:
   * how long an injected iptables failure is forgiven. Default: {@link maxBackoffMs}.
   */
  readonly firstBackoffMs?: number;
  /** What the controller does to the data plane (which datapath probes apply). */
  readonly provides?: readonly DatapathRole[];
}

export type AgentState = 'down' | 'running' | 'terminating';

/** Why a process ended. */
export type ExitReason = 'stopped' | 'killed' | 'crashed' | 'failed';

export interface AgentOptions {
  /** Delay between a process exit and the next start when restarting (default 1000 ms). */
  readonly restartDelayMs?: number;
  /** Grace period between SIGTERM and SIGKILL (default 30,000 ms, Kubernetes' default). */
  readonly graceMs?: number;
}

/** A process handle the world uses to build per-process services. */
export interface ProcessHandle {
  readonly agent: Agent;
  readonly incarnation: number;
  /** The engine owner key of this process's steps. */
  readonly owner: string;
  alive(): boolean;
  /** Run `fn` when the process exits (stop informers, release sockets). */
  onExit(fn: (reason: ExitReason) => void): void;
}

/**
 * Builds the context a controller sees from the process context; the world adds its services
 * here. The default adds nothing.
 */
export type ContextFactory<C extends ProcessContext> = (base: ProcessContext, proc: ProcessHandle) => C;

/**
 * The members every context shares with its process: copied from the process's own context, with
 * `stopping` left to the subclass so that it stays live. A class, so that the live `stopping`
 * getter sits on a shared prototype: an object literal with a getter (or a per-run prototype made
 * with `Object.create`) gets a hidden class of its own, allocated in V8's old generation, that
 * keeps the run's whole world reachable until a full collection.
 */
export abstract class ProcessContextMembers implements ProcessContext {
  readonly node: string;
  readonly agent: string;
  readonly incarnation: number;
  readonly log: Logger;
  readonly now: ProcessContext['now'];
  readonly sleep: ProcessContext['sleep'];
  readonly go: ProcessContext['go'];
  readonly after: ProcessContext['after'];
  readonly every: ProcessContext['every'];
  readonly done: ProcessContext['done'];
  readonly yield: ProcessContext['yield'];

  constructor(m: Omit<ProcessContext, 'stopping'>) {
    this.node = m.node;
    this.agent = m.agent;
    this.incarnation = m.incarnation;
    this.log = m.log;
    this.now = m.now;
    this.sleep = m.sleep;
    this.go = m.go;
    this.after = m.after;
    this.every = m.every;
    this.done = m.done;
    this.yield = m.yield;
  }

  abstract get stopping(): boolean;
}

/** A process's context: `stopping` reads the process. */
class BaseContext extends ProcessContextMembers {
  readonly #proc: Process;

  constructor(proc: Process, m: Omit<ProcessContext, 'stopping'>) {
    super(m);
    this.#proc = proc;
  }

  get stopping(): boolean {
    return this.#proc.stopping;
  }
}

class Process implements ProcessHandle {
  readonly agent: Agent;
  readonly incarnation: number;
  readonly owner: string;
  readonly exitHooks: ((reason: ExitReason) => void)[] = [];
  readonly doneWaiters: (() => void)[] = [];
  live = true;
  stopping = false;
  instance: ControllerInstance | null = null;
  graceTimer: { readonly seq: number; readonly timeMs: number } | null = null;

  constructor(agent: Agent, incarnation: number) {
    this.agent = agent;
    this.incarnation = incarnation;
    this.owner = `${agent.name}#${incarnation}`;
  }

  alive(): boolean {
    return this.live;
  }

  onExit(fn: (reason: ExitReason) => void): void {
    this.exitHooks.push(fn);
  }
}

/**
 * One controller on one node, across restarts.
 */
export class Agent<C extends ProcessContext = ProcessContext> {
  readonly name: string;
  readonly node: string;
  readonly controller: Controller<C>;
  readonly restartDelayMs: number;
  readonly graceMs: number;
  readonly #engine: Engine;
  readonly #makeContext: ContextFactory<C>;
  #proc: Process | null = null;
  #incarnations = 0;
  #restartPending = false;

  constructor(engine: Engine, node: string, controller: Controller<C>, makeContext: ContextFactory<C>, opts: AgentOptions = {}) {
    this.#engine = engine;
    this.node = node;
    this.controller = controller;
    this.name = `${node}/${controller.name}`;
    this.#makeContext = makeContext;
    this.restartDelayMs = opts.restartDelayMs ?? 1000;
    this.graceMs = opts.graceMs ?? 30_000;
    for (const [k, v] of [
      ['restartDelayMs', this.restartDelayMs],
      ['graceMs', this.graceMs],
    ] as const) {
      if (!Number.isSafeInteger(v) || v < 0) throw new SimError('invalid-argument', `agent ${this.name}: ${k} must be a non-negative integer, got ${String(v)}`);
    }
  }

  get state(): AgentState {
    if (this.#proc === null) return 'down';
    return this.#proc.stopping ? 'terminating' : 'running';
  }

  /** The current incarnation (0 before the first start). */
  get incarnation(): number {
    return this.#incarnations;
  }

  /** The owner key of the live process's steps, or null when down. */
  get owner(): string | null {
    return this.#proc?.owner ?? null;
  }

  /** Start a new process now (inside a step). No effect if one is running. */
  start(): void {
    if (this.#proc !== null) return;
    this.#restartPending = false;
    const proc = new Process(this, ++this.#incarnations);
    this.#proc = proc;
    const engine = this.#engine;
    engine.emit('agent.start', { agent: this.name, incarnation: proc.incarnation });
    const base = this.#baseContext(proc);
    const ctx = this.#makeContext(base, proc);
    const task = engine.newTask(proc.owner, 'start');
    engine.activate(task, () => {
      proc.instance = this.controller.create(ctx);
      return proc.instance.start();
    });
  }

  /**
   * Deliver SIGTERM now: run the controller's `stop`, then exit; kill after `graceMs`.
   * With `restart`, a new process starts `restartDelayMs` after the exit.
   */
  sigterm(opts: { readonly graceMs?: number; readonly restart?: boolean; readonly restartDelayMs?: number } = {}): void {
    const proc = this.#proc;
    if (proc === null || proc.stopping) return;
    const engine = this.#engine;
    const graceMs = opts.graceMs ?? this.graceMs;
    proc.stopping = true;
    engine.emit('agent.sigterm', { agent: this.name, incarnation: proc.incarnation, graceMs });
    if (opts.restart === true) this.#restartPending = true;
    const restartDelayMs = opts.restartDelayMs ?? this.restartDelayMs;
    for (const w of proc.doneWaiters.splice(0)) w();
    proc.graceTimer = engine.after(graceMs, { kind: 'lifecycle', label: `${this.name} grace period over: SIGKILL` }, () => {
      if (this.#proc === proc) this.#exit(proc, 'killed', restartDelayMs);
    });
    const instance = proc.instance;
    if (instance?.stop === undefined) {
      this.#exit(proc, 'stopped', restartDelayMs);
      return;
    }
    const task = engine.newTask(proc.owner, 'sigterm');
    engine.activate(task, async () => {
      await instance.stop?.();
      // The handler returned: main() returns and the process exits. Exiting is its own step so
      // that the handler's last world call and the exit are separate, as in real life.
      engine.after(0, { kind: 'lifecycle', label: `${this.name} exits after SIGTERM` }, () => {
        if (this.#proc === proc) this.#exit(proc, 'stopped', restartDelayMs);
      });
    });
  }

  /** Kill the process now (SIGKILL, OOM, panic): no more of its code runs. Kernel state is kept. */
  crash(opts: { readonly restart?: boolean; readonly restartDelayMs?: number; readonly reason?: string } = {}): void {
    const proc = this.#proc;
    if (proc === null) return;
    if (opts.restart === true) this.#restartPending = true;
    this.#engine.emit('agent.crash', { agent: this.name, incarnation: proc.incarnation, ...(opts.reason !== undefined ? { reason: opts.reason } : {}) });
    this.#exit(proc, 'crashed', opts.restartDelayMs ?? this.restartDelayMs);
  }

  /** The process failed on its own (a controller error under the "crash" policy). Restarts like kubelet would. */
  fail(reason: string): void {
    const proc = this.#proc;
    if (proc === null) return;
    this.#restartPending = true;
    this.#engine.emit('agent.crash', { agent: this.name, incarnation: proc.incarnation, reason });
    this.#exit(proc, 'failed', this.restartDelayMs);
  }

  /** Whether `task` belongs to the live process. */
  owns(task: Task): boolean {
    return this.#proc !== null && task.owner === this.#proc.owner;
  }

  #exit(proc: Process, reason: ExitReason, restartDelayMs: number): void {
    const engine = this.#engine;
    proc.live = false;
    this.#proc = null;
    if (proc.graceTimer !== null) engine.cancel(proc.graceTimer);
    engine.killOwner(proc.owner);
    for (const hook of proc.exitHooks) hook(reason);
    engine.emit('agent.exit', { agent: this.name, incarnation: proc.incarnation, reason });
    if (this.#restartPending) {
      this.#restartPending = false;
      engine.after(restartDelayMs, { kind: 'lifecycle', label: `${this.name} restart` }, () => this.start());
    }
  }

  #baseContext(proc: Process): ProcessContext {
    const engine = this.#engine;
    const agent = this.name;
    // Methods that use no `this` (they work detached), not named arrows: some TypeScript runners
    // (tsx's keepNames) pay a defineProperty for every named arrow, at every process start.
    const h = {
      spawn(this: void, name: string, delayMs: number, fn: () => unknown): void {
        if (!proc.live) return;
        const task = engine.newTask(proc.owner, name);
        engine.after(delayMs, { kind: 'task', label: `${agent} ${name}`, owner: proc.owner }, () => {
          engine.activate(task, fn);
        });
      },
      log(this: void, level: LogLevel): (msg: string, fields?: JsonObject) => void {
        return (msg, fields) => {
          engine.emit('agent.log', { agent, level, msg, ...(fields !== undefined ? { fields } : {}) });
        };
      },
      sleep(this: void, ms: number): Promise<void> {
        if (!Number.isSafeInteger(ms) || ms < 0) throw new SimError('invalid-argument', `${agent}: sleep(${String(ms)}): the delay must be a non-negative integer of milliseconds`);
        return engine.call({ kind: 'timer', label: `${agent} sleep ${ms}ms`, delayMs: ms }, () => undefined);
      },
    };
    const { spawn, log, sleep } = h;
    return new BaseContext(proc, {
      node: this.node,
      agent,
      incarnation: proc.incarnation,
      log: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') },
      now(): number {
        return engine.now();
      },
      sleep,
      yield(): Promise<void> {
        return engine.call({ kind: 'timer', label: `${agent} yield` }, () => undefined);
      },
      go(name, fn) {
        spawn(name, 0, fn);
      },
      after(delayMs, name, fn) {
        if (!Number.isSafeInteger(delayMs) || delayMs < 0) throw new SimError('invalid-argument', `${agent}: after(${String(delayMs)}): the delay must be a non-negative integer`);
        spawn(name, delayMs, fn);
      },
      every(periodMs, name, fn, opts) {
        if (!Number.isSafeInteger(periodMs) || periodMs < 1) throw new SimError('invalid-argument', `${agent}: every(${String(periodMs)}): the period must be a positive integer of milliseconds`);
        let stopped = false;
        spawn(name, opts?.firstDelayMs ?? 0, async () => {
          while (!stopped && !proc.stopping) {
            await fn();
            if (stopped || proc.stopping) break;
            await sleep(periodMs);
          }
        });
        return {
          stop(): void {
            stopped = true;
          },
        };
      },
      done() {
        if (proc.stopping) return engine.call({ kind: 'timer', label: `${agent} SIGTERM already delivered` }, () => undefined);
        const w = engine.park<undefined>({ kind: 'lifecycle', label: `${agent} wakes on SIGTERM` });
        proc.doneWaiters.push(() => w.wake(undefined));
        return w.promise;
      },
    });
  }
}
