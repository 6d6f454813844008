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
  const execMemo = new Memo();
  const restoreMemo = new Memo();
  // Methods, not named arrows: some TypeScript runners (tsx's keepNames) pay a defineProperty per named arrow.
  return {
    initialRuleset() {
      return fresh;
    },
    exec(ruleset, argv) {
      const key = argv.join('\u0000');
      return execMemo.get(ruleset, key) ?? execMemo.set(ruleset, key, exec(ruleset, argv));
    },
    restore(ruleset, text, flags) {
      const key = `${flags.noflush ? 'n' : '-'}${flags.counters ? 'c' : '-'}${text}`;
      return restoreMemo.get(ruleset, key) ?? restoreMemo.set(ruleset, key, restoreOnce(ruleset, text, flags));
    },
    save(ruleset, table) {
      return formatSave(table === undefined ? ruleset : onlyTable(ruleset, table));
    },
  };
}

/** Entries per generation of a {@link Memo}. */
const GENERATION_ENTRIES = 1024;
/** Long inputs (a whole restore of a busy node) rarely repeat and would pin large rulesets. */
const MAX_MEMO_INPUT = 4096;

/**
 * Results per (ruleset, input), in two generations of bounded size: new results go to the young
 * one; when it is full it becomes the old one and the previous old one is dropped. A hit in the
 * old generation moves back to the young one, so the results every run asks for (a controller's
 * start-up commands on the initial ruleset) survive while one-off results age out. Results hold
 * the rulesets they produced, which key further entries: the bound keeps that chain finite.
 */
class Memo {
  #young = new WeakMap<Ruleset, Map<string, ExecResult>>();
  #old = new WeakMap<Ruleset, Map<string, ExecResult>>();
  #youngEntries = 0;

  get(ruleset: Ruleset, key: string): ExecResult | undefined {
    const y = this.#young.get(ruleset)?.get(key);
    if (y !== undefined) return y;
    const o = this.#old.get(ruleset)?.get(key);
    if (o !== undefined) this.set(ruleset, key, o);
    return o;
  }

  set(ruleset: Ruleset, key: string, result: ExecResult): ExecResult {
    if (key.length > MAX_MEMO_INPUT) return result;
    if (this.#youngEntries >= GENERATION_ENTRIES) {
      this.#old = this.#young;
      this.#young = new WeakMap();
      this.#youngEntries = 0;
    }
    let m = this.#young.get(ruleset);
    if (m === undefined) {
      m = new Map();
      this.#young.set(ruleset, m);
    }
    m.set(key, result);
    this.#youngEntries++;
    return result;
  }
}
