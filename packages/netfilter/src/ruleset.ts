/**
 * Constructors and small queries over the immutable ruleset model.
 */
import { BUILTIN_CHAINS, TABLE_NAMES, type Chain, type Hook, type Ruleset, type Table, type TableName } from './types.ts';

/** A table holding only its built-in chains, each with policy ACCEPT and zero counters. */
export function emptyTable(name: TableName): Table {
  const chains: { [name: string]: Chain } = {};
  for (const hook of BUILTIN_CHAINS[name]) {
    chains[hook] = { name: hook, policy: 'ACCEPT', counters: { packets: 0, bytes: 0 }, rules: [] };
  }
  return { name, chains };
}

/** A fresh host's ruleset: the four tables with their built-in chains, as after module load. */
export function emptyRuleset(): Ruleset {
  return {
    tables: {
      raw: emptyTable('raw'),
      mangle: emptyTable('mangle'),
      nat: emptyTable('nat'),
      filter: emptyTable('filter'),
    },
  };
}

/**
 * A fresh nf_tables host: no table exists yet, so `iptables-save` prints nothing. Every table is
 * marked `absent` and holds its built-in chains, so listing and evaluation work as on a real host.
 */
export function freshRuleset(): Ruleset {
  const absent = (name: TableName): Table => ({ ...emptyTable(name), absent: true });
  return { tables: { raw: absent('raw'), mangle: absent('mangle'), nat: absent('nat'), filter: absent('filter') } };
}

export function isBuiltinChain(table: TableName, chain: string): chain is Hook {
  return (BUILTIN_CHAINS[table] as readonly string[]).includes(chain);
}

export function isTableName(name: string): name is TableName {
  return (TABLE_NAMES as readonly string[]).includes(name);
}
