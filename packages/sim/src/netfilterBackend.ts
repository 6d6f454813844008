/**
 * The default {@link IptablesBackend}: `@netsim/netfilter`'s argv, restore and save semantics,
 * byte for byte as iptables 1.8 (nf_tables) prints them.
 */
import { exec, formatSave, tryRestore, type Ruleset, type Table, type TableName } from '@netsim/netfilter';
import type { IptablesBackend } from './iptables.ts';

/** A ruleset where only `table` is printed by `formatSave` (what `iptables-save -t table` shows). */
function onlyTable(rs: Ruleset, table: TableName): Ruleset {
  const pick = (name: TableName): Table => {
    const { absent: _absent, ...t } = rs.tables[name];
    return name === table ? t : { ...t, absent: true };
  };
  return { tables: { raw: pick('raw'), mangle: pick('mangle'), nat: pick('nat'), filter: pick('filter') } };
}

/**
 * @example
 * ```ts
 * const world = new World({ seed: 1, cluster, controller, iptablesBackend: netfilterBackend() });
 * ```
 */
export function netfilterBackend(): IptablesBackend {
  return {
    exec: (ruleset, argv) => exec(ruleset, argv),
    restore: (ruleset, text, flags) => {
      const r = tryRestore(ruleset, text, { noflush: flags.noflush, counters: flags.counters });
      if ('error' in r) {
        const stderr = r.error.stderr ?? `${r.error.message}\n`;
        return { ruleset: r.ruleset, stdout: '', stderr, exitCode: r.error.exitCode };
      }
      return { ruleset: r.ruleset, stdout: '', stderr: '', exitCode: 0 };
    },
    save: (ruleset, table) => formatSave(table === undefined ? ruleset : onlyTable(ruleset, table)),
  };
}
