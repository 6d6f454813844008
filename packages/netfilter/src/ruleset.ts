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

export function isBuiltinChain(table: TableName, chain: string): chain is Hook {
  return (BUILTIN_CHAINS[table] as readonly string[]).includes(chain);
}

export function isTableName(name: string): name is TableName {
  return (TABLE_NAMES as readonly string[]).includes(name);
}
