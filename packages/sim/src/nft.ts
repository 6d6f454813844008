/**
 * The `nft` handle controllers get (`ctx.nft`), shaped like what agents call — knftables runs
 * `nft -f -` with a whole transaction on stdin, and `nft list …` to read back — and built the way
 * it runs: every call is one `nft` process, one step of the simulation, with room for another
 * actor in between.
 *
 * A transaction applies whole or not at all (`@netsim/nftables`' `nft -f` semantics, with the real
 * tool's messages). The node's fault state is the one `ctx.iptables` consults: `iptables.fail`
 * makes the next N commands of either tool fail, `iptables.restore-fail` the next
 * `iptables-restore` or `nft -f` (nothing changes), `iptables.slow` slows both; the xtables lock
 * does not concern nft, which takes none.
 */
import { formatChainListing, formatRuleset, formatTable, isNftError, tryNftApply, type NftVersion, type Ruleset } from '@netsim/nftables';
import type { Engine } from './engine.ts';
import { SimError, ToolExecError } from './errors.ts';
import type { IptablesFaultState, RawResult } from './iptables.ts';

/** Where a node's nft ruleset lives (the host's kernel state); `listing` adds the counters the datapath counted. */
export interface NftStore {
  get(): Ruleset;
  set(ruleset: Ruleset): void;
  /** The ruleset as `nft list` shows it now (counters advanced); default `get()`. */
  listing?(): Ruleset;
}

export interface NftHandleOptions {
  /** Simulated duration of one `nft` process (default 2 ms). */
  readonly latencyMs?: number;
  /** The nft release to imitate (default 1.0.6). */
  readonly version?: NftVersion;
}

/**
 * A failed `nft` run, as knftables reports it: the command line, the exit status and what nft
 * printed (`/dev/stdin:3:9-12: Error: Could not process rule: No such file or directory …`).
 */
export class NftExecError extends ToolExecError {
  override readonly name = 'NftExecError';
  readonly code = 'nft-failed' as const;

  /** knftables' `IsNotFound`: the table, chain, set or element does not exist (ENOENT). */
  isNotFound(): boolean {
    return /No such file or directory/.test(this.stderr);
  }

  /** knftables' `IsAlreadyExists`: `create` of something that exists (EEXIST). */
  isAlreadyExists(): boolean {
    return /File exists/.test(this.stderr);
  }
}

export function isNftExecError(e: unknown): e is NftExecError {
  return e instanceof NftExecError;
}

/**
 * The `nft` handle of a controller context.
 *
 * @example
 * ```ts
 * await ctx.nft.apply('add table ip kube-proxy\nflush table ip kube-proxy\nadd chain ip kube-proxy services\n');
 * const text = await ctx.nft.listTable('ip', 'kube-proxy');
 * ```
 */
export interface NftHandle {
  /** `nft -f -` with `text` on stdin: one atomic transaction; throws {@link NftExecError} and changes nothing on failure. */
  apply(text: string): Promise<void>;
  /** `nft -c -f -`: checks the transaction against the current ruleset without applying it. */
  check(text: string): Promise<void>;
  /** `nft list ruleset`. */
  listRuleset(): Promise<string>;
  /** `nft list table FAMILY NAME`. */
  listTable(family: string, table: string): Promise<string>;
  /** `nft list chain FAMILY TABLE CHAIN`. */
  listChain(family: string, table: string, chain: string): Promise<string>;
  /** Any supported `nft` argv (`-f -` with `stdin`, `-c -f -`, `list ruleset|table|chain …`); resolves with the exit status instead of throwing. */
  run(argv: readonly string[], stdin?: string): Promise<RawResult>;
}

const EAGAIN = 'Error: Could not process rule: Resource temporarily unavailable\n';

/** Builds the handle of one agent process on one node. */
export function createNftHandle(args: {
  readonly engine: Engine;
  readonly node: string;
  readonly agent: string;
  readonly store: NftStore;
  readonly faults: IptablesFaultState;
  readonly options?: NftHandleOptions;
}): NftHandle {
  const { engine, node, agent, store, faults } = args;
  const latencyMs = args.options?.latencyMs ?? 2;
  const version = args.options?.version;
  if (!Number.isSafeInteger(latencyMs) || latencyMs < 0) throw new SimError('invalid-argument', `nft handle for ${agent}: latencyMs must be a non-negative integer of milliseconds`);

  const transact = (text: string, apply: boolean): RawResult => {
    if (faults.resourceFailures > 0 || engine.now() < faults.failUntilMs) {
      if (faults.resourceFailures > 0) faults.resourceFailures--;
      faults.lastInjectedMs = engine.now();
      return { stdout: '', stderr: EAGAIN, exitCode: 1 };
    }
    if (faults.restoreFailAtLine !== null) {
      const line = faults.restoreFailAtLine;
      faults.restoreFailAtLine = null;
      faults.lastInjectedMs = engine.now();
      const src = text.split('\n')[line - 1] ?? '';
      const end = Math.max(1, src.length);
      return { stdout: '', stderr: `/dev/stdin:${line}:1-${end}: ${EAGAIN}${src}\n${'^'.repeat(end)}\n`, exitCode: 1 };
    }
    const r = tryNftApply(store.get(), text, { file: '/dev/stdin', ...(version !== undefined && { version }) });
    if (!r.ok) return { stdout: '', stderr: isNftError(r.error) ? r.error.stderr : `${String(r.error)}\n`, exitCode: 1 };
    if (apply) store.set(r.ruleset);
    return { stdout: '', stderr: '', exitCode: 0 };
  };

  /** nft's ENOENT for a list command: the command line with the missing name underlined. */
  const notFound = (argv: readonly string[], at: number): RawResult => {
    const line = argv.join(' ');
    const start = argv.slice(0, at).join(' ').length + 1;
    return { stdout: '', stderr: `Error: No such file or directory\n${line}\n${' '.repeat(start)}${'^'.repeat((argv[at] ?? '').length)}\n`, exitCode: 1 };
  };

  const list = (argv: readonly string[]): RawResult => {
    const rs = store.listing?.() ?? store.get();
    const what = argv[1];
    if (what === 'ruleset' && argv.length === 2) return { stdout: formatRuleset(rs), stderr: '', exitCode: 0 };
    const family = argv[2] ?? '';
    const tableName = argv[3] ?? '';
    const table = rs.tables.find((t) => t.family === family && t.name === tableName);
    if ((what === 'table' && argv.length === 4) || (what === 'chain' && argv.length === 5)) {
      if (table === undefined) return notFound(argv, 3);
      if (what === 'table') return { stdout: formatTable(table), stderr: '', exitCode: 0 };
      const text = formatChainListing(table, argv[4] ?? '');
      if (text === undefined) return notFound(argv, 4);
      return { stdout: text, stderr: '', exitCode: 0 };
    }
    return { stdout: '', stderr: `Error: syntax error in nft ${argv.join(' ')} (netsim runs list ruleset, list table FAMILY NAME, list chain FAMILY TABLE CHAIN)\n`, exitCode: 1 };
  };

  const exec = (argv: readonly string[], stdin: string | undefined): RawResult => {
    if (argv[0] === '-f' && argv[1] === '-' && argv.length === 2) return transact(stdin ?? '', true);
    if (argv[0] === '-c' && argv[1] === '-f' && argv[2] === '-' && argv.length === 3) return transact(stdin ?? '', false);
    if (argv[0] === 'list') return list(argv);
    return { stdout: '', stderr: `Error: nft ${argv.join(' ')}: netsim runs -f -, -c -f - and list commands\n`, exitCode: 1 };
  };

  const run = async (argv: readonly string[], stdin?: string): Promise<RawResult> => {
    const shown = ['nft', ...argv].join(' ');
    const delayMs = latencyMs + (engine.now() < faults.slowUntilMs ? faults.slowExtraMs : 0);
    return engine.call({ kind: 'nft', label: `${agent} ${shown}`, delayMs }, () => {
      const r = exec(argv, stdin);
      if (engine.trace.enabled) {
        engine.emit(argv[0] === 'list' ? 'nft.list' : 'nft.exec', {
          node,
          agent,
          argv: shown,
          exit: r.exitCode,
          ...(stdin !== undefined ? { input: stdin } : {}),
          ...(r.stderr !== '' ? { stderr: r.stderr } : {}),
        });
      }
      return r;
    });
  };

  const must = async (argv: readonly string[], stdin?: string): Promise<string> => {
    const r = await run(argv, stdin);
    if (r.exitCode !== 0) throw new NftExecError(['nft', ...argv], r.exitCode, r.stderr);
    return r.stdout;
  };

  return {
    async apply(text) {
      await must(['-f', '-'], text);
    },
    async check(text) {
      await must(['-c', '-f', '-'], text);
    },
    listRuleset() {
      return must(['list', 'ruleset']);
    },
    listTable(family, table) {
      return must(['list', 'table', family, table]);
    },
    listChain(family, table, chain) {
      return must(['list', 'chain', family, table, chain]);
    },
    run,
  };
}
