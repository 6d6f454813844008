/**
 * The rule plumbing both flannel lifecycles share (flannel v0.26's `iptables.go`, unchanged in
 * v0.27): check that every rule exists, bootstrap them in one restore (deleting and re-appending
 * rules that exist so the order is right), and tear a set of rules down in one restore.
 */
import type { IptablesHandle } from '@netsim/sim';
import { applyWithoutFlush, type RestoreRules } from './iptablesRestore.ts';
import { MASQ_CHAIN, touchesChain, type IptablesRule } from './rules.ts';

/** True when every rule exists (`-C` each; a missing chain means missing rules). Order and duplicates are not checked. */
export async function ipTablesRulesExist(ipt: IptablesHandle, rules: readonly IptablesRule[]): Promise<boolean> {
  for (const rule of rules) {
    if (touchesChain(rule, MASQ_CHAIN) && !(await ipt.chainExists(rule.table, MASQ_CHAIN))) return false;
    if (!(await ipt.exists(rule.table, rule.chain, ...rule.rulespec))) return false;
  }
  return true;
}

function push(tables: RestoreRules, table: string, words: string[]): void {
  const lines = tables.get(table) ?? [];
  lines.push(words);
  tables.set(table, lines);
}

/** The bootstrap transaction: for every rule, `-D` it if it exists, then append it (creating the chain if missing). */
export async function ipTablesCleanAndBuild(ipt: IptablesHandle, rules: readonly IptablesRule[]): Promise<RestoreRules> {
  const tables: RestoreRules = new Map();
  for (const rule of rules) {
    if (touchesChain(rule, MASQ_CHAIN) && !(await ipt.chainExists(rule.table, MASQ_CHAIN))) await ipt.clearChain(rule.table, MASQ_CHAIN);
    // Deleting and re-appending in one transaction puts the rules in order with nothing between them.
    if (await ipt.exists(rule.table, rule.chain, ...rule.rulespec)) push(tables, rule.table, ['-D', rule.chain, ...rule.rulespec]);
    push(tables, rule.table, [rule.action, rule.chain, ...rule.rulespec]);
  }
  return tables;
}

/** `ipTablesBootstrap`: build the transaction and apply it. */
export async function ipTablesBootstrap(ipt: IptablesHandle, rules: readonly IptablesRule[]): Promise<void> {
  const tables = await ipTablesCleanAndBuild(ipt, rules);
  await applyWithoutFlush(ipt, tables);
}

/** `ensureIPTables`: if any rule is missing, bootstrap them all again. Returns whether it did. */
export async function ensureIPTables(ipt: IptablesHandle, rules: readonly IptablesRule[]): Promise<boolean> {
  if (await ipTablesRulesExist(ipt, rules)) return false;
  await ipTablesBootstrap(ipt, rules);
  return true;
}

/** `teardownIPTables`: delete every rule that exists, in one restore. */
export async function teardownIPTables(ipt: IptablesHandle, rules: readonly IptablesRule[]): Promise<void> {
  const tables: RestoreRules = new Map();
  for (const rule of rules) {
    if (touchesChain(rule, MASQ_CHAIN) && !(await ipt.chainExists(rule.table, MASQ_CHAIN))) continue;
    if (await ipt.exists(rule.table, rule.chain, ...rule.rulespec)) push(tables, rule.table, ['-D', rule.chain, ...rule.rulespec]);
  }
  await applyWithoutFlush(ipt, tables);
}
