/**
 * The `iptables` handle controllers get: shaped like the libraries real agents call
 * (coreos/go-iptables, which flannel and Antrea use; kube-proxy's utiliptables for restore), and
 * built the way they are built: every method runs one or more `iptables` / `iptables-restore`
 * processes, and each process is one step of the simulation. So `appendUnique` is a `-C` then an
 * `-A`, with room for another actor in between, exactly as in real life.
 *
 * Commands run against the node's ruleset through an {@link IptablesBackend} (the netfilter
 * package's argv and restore semantics). Faults (a held xtables lock, a resource problem, a
 * restore failing at a line, slow calls) are applied here, with the real tools' messages.
 */
import { isTableName, type Ruleset, type TableName } from '@netsim/netfilter';
import { SimError, ToolExecError } from './errors.ts';
import { rulesChange } from './rulesTrace.ts';
import type { Engine } from './engine.ts';

/** The outcome of one `iptables` or `iptables-restore` process. */
export interface ExecResult {
  /** The ruleset after the command: unchanged when `iptables` failed; for a failed restore, with the tables committed before the failure. */
  readonly ruleset: Ruleset;
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number;
}

/** Options of one `iptables-restore` run. */
export interface RestoreFlags {
  /** `--noflush`: do not flush the tables named in the input; `:CHAIN` lines flush just that chain. */
  readonly noflush: boolean;
  /** `--counters`: take rule counters from the input. */
  readonly counters: boolean;
}

/** What the handle needs from the netfilter layer. */
export interface IptablesBackend {
  /** One `iptables` argv (without the program name), e.g. `['-t', 'nat', '-A', 'X', '-j', 'RETURN']`. */
  exec(ruleset: Ruleset, argv: readonly string[]): ExecResult;
  /** One `iptables-restore` run: atomic per the real tool. */
  restore(ruleset: Ruleset, text: string, flags: RestoreFlags): ExecResult;
  /** `iptables-save` text of one table, or of every table in use when `table` is absent. */
  save(ruleset: Ruleset, table?: TableName): string;
  /** The rules of a fresh host (default: netfilter's `freshRuleset()`). */
  initialRuleset?(): Ruleset;
}

/** Where a node's rules live (the host's kernel state: it survives agent restarts). */
export interface RulesetStore {
  get(): Ruleset;
  set(ruleset: Ruleset): void;
}

/** Per-node fault state the handle consults at the moment each process runs. */
export interface IptablesFaultState {
  /** Another program holds the xtables lock until this time (exclusive). */
  lockHeldUntilMs: number;
  /** The next this-many commands fail with "Resource temporarily unavailable" (exit 4). */
  resourceFailures: number;
  /** Every command fails that way until this time (exclusive): a persistent failure. */
  failUntilMs: number;
  /** When a failure was last injected (a resource failure, a failing restore), or -1. */
  lastInjectedMs: number;
  /** The next `iptables-restore` fails at this input line (1-based) and changes nothing. */
  restoreFailAtLine: number | null;
  /** Extra latency added to every command until `slowUntilMs`. */
  slowExtraMs: number;
  slowUntilMs: number;
}

export function noIptablesFaults(): IptablesFaultState {
  return { lockHeldUntilMs: 0, resourceFailures: 0, failUntilMs: 0, lastInjectedMs: -1, restoreFailAtLine: null, slowExtraMs: 0, slowUntilMs: 0 };
}

/** How the handle waits for the xtables lock, like the library's `--wait` flag. */
export type LockWait = 'forever' | 'no' | { readonly seconds: number };

export interface IptablesHandleOptions {
  /** Wait for the xtables lock: `'forever'` passes `--wait` (go-iptables' default), `{seconds}` passes `--wait N`, `'no'` passes nothing. */
  readonly lockWait?: LockWait;
  /** Simulated duration of one `iptables` process (default 1 ms). */
  readonly latencyMs?: number;
  /** Simulated duration of one `iptables-restore` process (default 2 ms). */
  readonly restoreLatencyMs?: number;
}

/**
 * A failed `iptables` or `iptables-restore` run, as go-iptables reports it:
 * `running [iptables -t nat -A X -j Y --wait]: exit status 1: iptables: No chain/target/match by that name.`
 */
export class IptablesError extends ToolExecError {
  override readonly name = 'IptablesError';
  readonly code = 'iptables-failed' as const;

  /** go-iptables' `IsNotExist`: the rule, chain or target does not exist. */
  isNotExist(): boolean {
    return this.exitCode === 1 && /No chain\/target\/match by that name|Bad rule \(does a matching rule exist in that chain\?\)|does not exist/.test(this.stderr);
  }
}

export function isIptablesError(e: unknown): e is IptablesError {
  return e instanceof IptablesError;
}

/** The result of a raw command: never throws on a non-zero exit. */
export interface RawResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number;
}

/**
 * The `iptables` handle of a controller context. Tables and chains are plain strings as in the
 * Go libraries; a rule spec is the argv after the chain name.
 *
 * @example
 * ```ts
 * await ctx.iptables.clearChain('nat', 'FLANNEL-POSTRTG');
 * await ctx.iptables.appendUnique('nat', 'POSTROUTING', '-m', 'comment', '--comment', 'flanneld masq', '-j', 'FLANNEL-POSTRTG');
 * const rules = await ctx.iptables.list('nat', 'FLANNEL-POSTRTG'); // ['-N FLANNEL-POSTRTG', '-A FLANNEL-POSTRTG ...']
 * await ctx.iptables.restore('*nat\n:ANTREA-NODE-PORT-LOCAL - [0:0]\nCOMMIT\n', { noflush: true });
 * ```
 */
export interface IptablesHandle {
  /** `-C`: true when the rule exists; false on exit status 1; throws on anything else. */
  exists(table: string, chain: string, ...rulespec: string[]): Promise<boolean>;
  /** `-A`. */
  append(table: string, chain: string, ...rulespec: string[]): Promise<void>;
  /** `-C`, then `-A` if missing (two processes: another actor may run in between). */
  appendUnique(table: string, chain: string, ...rulespec: string[]): Promise<void>;
  /** `-I chain pos`. */
  insert(table: string, chain: string, pos: number, ...rulespec: string[]): Promise<void>;
  /** `-D`. */
  delete(table: string, chain: string, ...rulespec: string[]): Promise<void>;
  /** `-C`, then `-D` if present. */
  deleteIfExists(table: string, chain: string, ...rulespec: string[]): Promise<void>;
  /** `-S chain`: the chain's `-N`/`-P` line, then its rules, as printed. */
  list(table: string, chain: string): Promise<string[]>;
  /** `-S`: the names of every chain of the table, built-in first. */
  listChains(table: string): Promise<string[]>;
  /** `-S chain 1`: exit status 1 means no such chain. */
  chainExists(table: string, chain: string): Promise<boolean>;
  /** `-N`. */
  newChain(table: string, chain: string): Promise<void>;
  /** `-N`, and `-F` if it already existed (create or flush). */
  clearChain(table: string, chain: string): Promise<void>;
  /** `-X` (the chain must be empty and unreferenced). */
  deleteChain(table: string, chain: string): Promise<void>;
  /** `-E old new`. */
  renameChain(table: string, oldChain: string, newChain: string): Promise<void>;
  /** One `iptables-restore` process reading `text` (atomic per table, as the real tool). */
  restore(text: string, opts?: { readonly noflush?: boolean; readonly counters?: boolean }): Promise<void>;
  /** `iptables-save [-t table]`. */
  save(table?: string): Promise<string>;
  /** Any `iptables` argv (without the program name); resolves with the exit status instead of throwing. */
  run(argv: readonly string[]): Promise<RawResult>;
}

const XTABLES_LOCK_NO_WAIT = 'Another app is currently holding the xtables lock. Perhaps you want to use the -w option?\n';
const RESOURCE_PROBLEM = 'iptables: Resource temporarily unavailable.\n';
/** iptables' RESOURCE_PROBLEM exit status. */
const EXIT_RESOURCE = 4;

type Program = 'iptables' | 'iptables-restore' | 'iptables-save';

type Attempt = { readonly kind: 'done'; readonly result: RawResult } | { readonly kind: 'locked'; readonly untilMs: number };

/** Builds the handle of one agent process on one node. */
export function createIptablesHandle(args: {
  readonly engine: Engine;
  readonly node: string;
  readonly agent: string;
  readonly backend: IptablesBackend;
  readonly store: RulesetStore;
  readonly faults: IptablesFaultState;
  readonly options?: IptablesHandleOptions;
}): IptablesHandle {
  const { engine, node, agent, backend, store, faults } = args;
  const lockWait: LockWait = args.options?.lockWait ?? 'forever';
  const latencyMs = args.options?.latencyMs ?? 1;
  const restoreLatencyMs = args.options?.restoreLatencyMs ?? 2;
  if (!Number.isSafeInteger(latencyMs) || latencyMs < 0 || !Number.isSafeInteger(restoreLatencyMs) || restoreLatencyMs < 0) {
    throw new SimError('invalid-argument', `iptables handle for ${agent}: latencies must be non-negative integers of milliseconds`);
  }
  const waitArgs: readonly string[] = lockWait === 'forever' ? ['--wait'] : lockWait === 'no' ? [] : ['--wait', String(lockWait.seconds)];

  // Methods that use no `this` (they work detached), not named arrows: some TypeScript runners
  // (tsx's keepNames) pay a defineProperty for every named arrow, at every process start.
  const h = {
    delay(this: void, base: number): number {
      return base + (engine.now() < faults.slowUntilMs ? faults.slowExtraMs : 0);
    },

    /** One attempt of one process, run as the effect of a step. */
    attempt(this: void, program: Program, body: () => RawResult): Attempt {
      if (engine.now() < faults.lockHeldUntilMs) {
        if (lockWait === 'no') {
          return { kind: 'done', result: { stdout: '', stderr: XTABLES_LOCK_NO_WAIT, exitCode: EXIT_RESOURCE } };
        }
        return { kind: 'locked', untilMs: faults.lockHeldUntilMs };
      }
      if (faults.resourceFailures > 0 || engine.now() < faults.failUntilMs) {
        if (faults.resourceFailures > 0) faults.resourceFailures--;
        faults.lastInjectedMs = engine.now();
        const stderr = program === 'iptables' ? RESOURCE_PROBLEM : `${program}: Resource temporarily unavailable.\n`;
        return { kind: 'done', result: { stdout: '', stderr, exitCode: EXIT_RESOURCE } };
      }
      return { kind: 'done', result: body() };
    },

    /** Run one process to completion: lock waits become sleeps on the simulated clock. */
    async process(this: void, program: Program, argv: readonly string[], body: () => RawResult, stdin?: string): Promise<RawResult> {
      // iptables-save takes no lock.
      const shown = program === 'iptables-save' ? [program, ...argv] : [program, ...argv, ...waitArgs];
      const eventType = program === 'iptables' ? 'iptables.exec' : program === 'iptables-save' ? 'iptables.save' : 'iptables.restore';
      const label = `${agent} ${shown.join(' ')}`;
      const startedMs = engine.now();
      for (;;) {
        const a = await engine.call({ kind: 'iptables', label, delayMs: delay(program === 'iptables' ? latencyMs : restoreLatencyMs) }, () => {
          const before = store.get();
          const r = program === 'iptables-save' ? ({ kind: 'done', result: body() } as const) : attempt(program, body);
          if (!engine.trace.enabled) return r;
          if (r.kind === 'done') {
            engine.emit(eventType, {
              node,
              agent,
              argv: shown.join(' '),
              exit: r.result.exitCode,
              ...(stdin !== undefined ? { input: stdin } : {}),
              ...(r.result.stderr !== '' ? { stderr: r.result.stderr } : {}),
            });
            const change = rulesChange(node, agent, before, store.get());
            if (change !== undefined) engine.emit('ruleset.change', change);
          } else {
            engine.emit('iptables.lock-wait', { node, agent, argv: shown.join(' '), untilMs: r.untilMs });
          }
          return r;
        });
        if (a.kind === 'done') return a.result;
        if (typeof lockWait === 'object') {
          const deadline = startedMs + lockWait.seconds * 1000;
          if (a.untilMs > deadline) {
            // The real tool polls until its deadline, then gives up.
            if (deadline > engine.now()) await engine.call({ kind: 'timer', label: `${label} waits for the xtables lock`, delayMs: deadline - engine.now() }, () => undefined);
            const stderr = `Another app is currently holding the xtables lock. Stopped waiting after ${lockWait.seconds}s.\n`;
            await engine.call({ kind: 'iptables', label, delayMs: 0 }, () => {
              engine.emit(eventType, { node, agent, argv: shown.join(' '), exit: EXIT_RESOURCE, stderr });
            });
            return { stdout: '', stderr, exitCode: EXIT_RESOURCE };
          }
        }
        await engine.call({ kind: 'timer', label: `${label} waits for the xtables lock`, delayMs: Math.max(0, a.untilMs - engine.now()) }, () => undefined);
      }
    },

    execRaw(this: void, argv: readonly string[]): Promise<RawResult> {
      return process('iptables', argv, () => {
        const r = backend.exec(store.get(), argv);
        store.set(r.ruleset);
        return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode };
      });
    },

    async run(this: void, argv: readonly string[]): Promise<string> {
      const r = await execRaw(argv);
      if (r.exitCode !== 0) throw new IptablesError(['iptables', ...argv, ...waitArgs], r.exitCode, r.stderr);
      return r.stdout;
    },

    /** Exit status 1 means "no" for -C and -S chain; anything else non-zero is an error. */
    async check(this: void, argv: readonly string[]): Promise<boolean> {
      const r = await execRaw(argv);
      if (r.exitCode === 0) return true;
      if (r.exitCode === 1) return false;
      throw new IptablesError(['iptables', ...argv, ...waitArgs], r.exitCode, r.stderr);
    },

    lines(this: void, stdout: string): string[] {
      const out = stdout.split('\n');
      if (out.length > 0 && out[out.length - 1] === '') out.pop();
      return out;
    },

    exists(this: void, table: string, chain: string, ...rulespec: string[]): Promise<boolean> {
      return check(['-t', table, '-C', chain, ...rulespec]);
    },
  };
  const { delay, attempt, process, execRaw, run, check, lines, exists } = h;

  // Methods that use no `this` (the handle still works detached), not arrow properties.
  const handle: IptablesHandle = {
    exists,
    async append(table, chain, ...rulespec) {
      await run(['-t', table, '-A', chain, ...rulespec]);
    },
    async appendUnique(table, chain, ...rulespec) {
      if (!(await exists(table, chain, ...rulespec))) await run(['-t', table, '-A', chain, ...rulespec]);
    },
    async insert(table, chain, pos, ...rulespec) {
      await run(['-t', table, '-I', chain, String(pos), ...rulespec]);
    },
    async delete(table, chain, ...rulespec) {
      await run(['-t', table, '-D', chain, ...rulespec]);
    },
    async deleteIfExists(table, chain, ...rulespec) {
      if (await exists(table, chain, ...rulespec)) await run(['-t', table, '-D', chain, ...rulespec]);
    },
    async list(table, chain) {
      return lines(await run(['-t', table, '-S', chain]));
    },
    async listChains(table) {
      const out: string[] = [];
      for (const l of lines(await run(['-t', table, '-S']))) {
        if (!l.startsWith('-P ') && !l.startsWith('-N ')) break;
        const name = l.split(' ')[1];
        if (name !== undefined) out.push(name);
      }
      return out;
    },
    chainExists(table, chain) {
      return check(['-t', table, '-S', chain, '1']);
    },
    async newChain(table, chain) {
      await run(['-t', table, '-N', chain]);
    },
    async clearChain(table, chain) {
      const r = await execRaw(['-t', table, '-N', chain]);
      if (r.exitCode === 0) return;
      if (r.exitCode === 1) {
        await run(['-t', table, '-F', chain]);
        return;
      }
      throw new IptablesError(['iptables', '-t', table, '-N', chain, ...waitArgs], r.exitCode, r.stderr);
    },
    async deleteChain(table, chain) {
      await run(['-t', table, '-X', chain]);
    },
    async renameChain(table, oldChain, newChain) {
      await run(['-t', table, '-E', oldChain, newChain]);
    },
    async restore(text, opts = {}) {
      const flags: RestoreFlags = { noflush: opts.noflush ?? false, counters: opts.counters ?? false };
      const argv = [...(flags.noflush ? ['--noflush'] : []), ...(flags.counters ? ['--counters'] : [])];
      const r = await process(
        'iptables-restore',
        argv,
        () => {
          if (faults.restoreFailAtLine !== null) {
            const line = faults.restoreFailAtLine;
            faults.restoreFailAtLine = null;
            faults.lastInjectedMs = engine.now();
            return { stdout: '', stderr: `iptables-restore: line ${line} failed\n`, exitCode: 1 };
          }
          // A failed restore keeps the tables it committed before the failing block, as the real tool.
          const res = backend.restore(store.get(), text, flags);
          store.set(res.ruleset);
          return { stdout: res.stdout, stderr: res.stderr, exitCode: res.exitCode };
        },
        text,
      );
      if (r.exitCode !== 0) throw new IptablesError(['iptables-restore', ...argv, ...waitArgs], r.exitCode, r.stderr);
    },
    async save(table) {
      const argv = table === undefined ? [] : ['-t', table];
      if (table !== undefined && !isTableName(table)) {
        const r = await process('iptables-save', argv, () => ({ stdout: '', stderr: `Table \`${table}' does not exist\n`, exitCode: 1 }));
        throw new IptablesError(['iptables-save', ...argv], r.exitCode, r.stderr);
      }
      const r = await process('iptables-save', argv, () => ({ stdout: backend.save(store.get(), table), stderr: '', exitCode: 0 }));
      return r.stdout;
    },
    run(argv) {
      return execRaw(argv);
    },
  };
  return failuresAreFindings(engine, handle);
}

/**
 * The handle with every method's failure tracked (`Engine.tracked`): a failing call nothing
 * awaits (`void ctx.iptables.append(…)`) is an `unhandled-rejection` finding of the task that
 * made it, like an unawaited failing `ctx.kube` call, and never kills the process.
 */
function failuresAreFindings(engine: Engine, handle: IptablesHandle): IptablesHandle {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(handle) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    out[name] = function (this: void, ...args: unknown[]): Promise<unknown> {
      return engine.tracked(`ctx.iptables.${name}()`, () => fn(...args));
    };
  }
  return out as unknown as IptablesHandle;
}
