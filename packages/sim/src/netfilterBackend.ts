/**
 * The default {@link IptablesBackend}: `@netsim/netfilter`'s argv, restore and save semantics,
 * byte for byte as iptables 1.8 (nf_tables) prints them.
 *
 * `exec` and `restore` are pure functions of (ruleset, input), and rulesets are immutable, so a
 * backend can remember results per ruleset object: property campaigns replay the same start-up
 * commands against the same rulesets thousands of times. The memo lives in the backend instance
 * (share one across runs to benefit) and holds rulesets weakly.
 */
import { exec, formatSave, freshRuleset, tryRestore, type Ruleset, type Table, type TableName } from '@netsim/netfilter';
import type { ExecResult, IptablesBackend, RestoreFlags } from './iptables.ts';

/** A ruleset where only `table` is printed by `formatSave` (what `iptables-save -t table` shows). */
function onlyTable(rs: Ruleset, table: TableName): Ruleset {
  const pick = (name: TableName): Table => {
    const { absent: _absent, ...t } = rs.tables[name];
    return name === table ? t : { ...t, absent: true };
  };
  return { tables: { raw: pick('raw'), mangle: pick('mangle'), nat: pick('nat'), filter: pick('filter') } };
}

function restoreOnce(ruleset: Ruleset, text: string, flags: RestoreFlags): ExecResult {
  const r = tryRestore(ruleset, text, { noflush: flags.noflush, counters: flags.counters });
  if ('error' in r) {
    const stderr = r.error.stderr ?? `${r.error.message}\n`;
    return { ruleset: r.ruleset, stdout: '', stderr, exitCode: r.error.exitCode };
  }
  return { ruleset: r.ruleset, stdout: '', stderr: '', exitCode: 0 };
}

/** The netfilter backend: its `initialRuleset()` is the same object on every call, so memoised results carry over between runs. */
export interface NetfilterBackend extends IptablesBackend {
  initialRuleset(): Ruleset;
}

/**
 * @example
 * ```ts
 * const backend = netfilterBackend();           // share it across the runs of a campaign
 * const world = new World({ seed: 1, cluster, controller, iptablesBackend: backend });
 * ```
 */
export function netfilterBackend(): NetfilterBackend {
  const fresh = freshRuleset();
  // Results hold the rulesets they produced, which are keys of further entries: a chain reachable
  // from the initial ruleset. Start over past a bound so a long run does not keep every ruleset alive.
  let execMemo = new WeakMap<Ruleset, Map<string, ExecResult>>();
  let restoreMemo = new WeakMap<Ruleset, Map<string, ExecResult>>();
  let entries = 0;
  const MAX_ENTRIES = 1024;
  // Long restore inputs (a whole chain of a busy node) rarely repeat and would pin large rulesets.
  const MAX_MEMO_INPUT = 4096;
  const memoized = (which: 'exec' | 'restore', ruleset: Ruleset, key: string, run: () => ExecResult): ExecResult => {
    if (key.length > MAX_MEMO_INPUT) return run();
    if (entries >= MAX_ENTRIES) {
      execMemo = new WeakMap();
      restoreMemo = new WeakMap();
      entries = 0;
    }
    const memo = which === 'exec' ? execMemo : restoreMemo;
    let m = memo.get(ruleset);
    if (m === undefined) {
      m = new Map();
      memo.set(ruleset, m);
    }
    let r = m.get(key);
    if (r === undefined) {
      r = run();
      m.set(key, r);
      entries++;
    }
    return r;
  };
  return {
    initialRuleset: () => fresh,
    exec: (ruleset, argv) => memoized('exec', ruleset, argv.join('\u0000'), () => exec(ruleset, argv)),
    restore: (ruleset, text, flags) => memoized('restore', ruleset, `${flags.noflush ? 'n' : '-'}${flags.counters ? 'c' : '-'}${text}`, () => restoreOnce(ruleset, text, flags)),
    save: (ruleset, table) => formatSave(table === undefined ? ruleset : onlyTable(ruleset, table)),
  };
}
