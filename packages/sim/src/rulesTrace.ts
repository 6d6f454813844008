/**
 * The `ruleset.change` trace event: what one `iptables` or `iptables-restore` process changed in
 * a node's ruleset, so a trace alone can answer "how many rules did this chain hold at t" and
 * "what did the rules look like change by change" (the HTML report draws both). Written only
 * when the process changed something, right after its `iptables.exec`/`iptables.restore` event.
 */
import { diff, formatDiff, type Ruleset, type RulesetChange } from '@netsim/netfilter';
import type { JsonObject } from './json.ts';

/**
 * The event's fields for a change from `before` to `after`, or `undefined` when nothing changed
 * (counters aside). `chains` lists every chain the change touched, in diff order, with its rule
 * count afterwards (`null` once the chain is gone); `diff` is the `netsim ruleset diff` text.
 */
export function rulesChange(node: string, agent: string, before: Ruleset, after: Ruleset): JsonObject | undefined {
  if (before === after) return undefined;
  const changes = diff(before, after);
  if (changes.length === 0) return undefined;
  const chains: JsonObject[] = [];
  const seen = new Set<string>();
  for (const c of changes) {
    const chain = chainOf(c);
    if (chain === undefined) continue;
    const key = `${c.table} ${chain}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const now = after.tables[c.table].chains[chain];
    chains.push({ table: c.table, chain, rules: now === undefined ? null : now.rules.length });
  }
  return { node, agent, chains, diff: formatDiff(changes) };
}

function chainOf(c: RulesetChange): string | undefined {
  switch (c.kind) {
    case 'table-added':
    case 'table-removed':
      return undefined;
    case 'chain-added':
    case 'chain-removed':
    case 'policy-changed':
    case 'rule-added':
    case 'rule-removed':
    case 'rule-moved':
      return c.chain;
  }
}
