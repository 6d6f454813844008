/**
 * **No duplicate rules in any table**: no chain of any table holds the same rule twice once the
 * node has settled. Programming must be idempotent across restarts and resyncs; a duplicated jump
 * from a built-in chain is the classic leak (a `-A` where a `-C` then `-A` was meant).
 */
import { TABLE_NAMES } from '@netsim/netfilter';
import { duplicateRuleFinder, ruleIdentities, settled, type Problem } from '../invariants.ts';
import type { CountingInvariant } from './counting.ts';

export const NO_DUPLICATE_RULES = 'no duplicate rules in any table';

/**
 * @example
 * ```ts
 * const world = new World({ seed: 1, cluster, controller, invariants: [noDuplicateRulesAnywhere()] });
 * ```
 */
export function noDuplicateRulesAnywhere(opts: { readonly settleMs?: number } = {}): () => CountingInvariant {
  const idOf = ruleIdentities();
  return () => {
    const duplicates = duplicateRuleFinder(idOf, { nameTable: true });
    const count = { n: 0 };
    const inv = settled(
      NO_DUPLICATE_RULES,
      (view) => {
        const out: Problem[] = [];
        for (const node of view.nodes) {
          const rs = view.ruleset(node.name);
          for (const table of TABLE_NAMES) {
            const chains = rs.tables[table].chains;
            for (const name of Object.keys(chains).sort()) {
              const chain = chains[name];
              if (chain === undefined || chain.rules.length === 0) continue;
              count.n += chain.rules.length;
              for (const p of duplicates(node.name, table, name, chain.rules)) out.push(p);
            }
          }
        }
        return out;
      },
      { ...(opts.settleMs !== undefined ? { settleMs: opts.settleMs } : {}), dependsOnPodsAndRulesOnly: true },
    )();
    return { name: inv.name, check: (v) => inv.check(v), examined: () => count.n };
  };
}
