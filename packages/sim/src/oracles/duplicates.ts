/**
 * **No duplicate rules in any table**: no chain of any table holds the same rule twice once the
 * node has settled. Programming must be idempotent across restarts and resyncs; a duplicated jump
 * from a built-in chain is the classic leak (a `-A` where a `-C` then `-A` was meant).
 */
import { TABLE_NAMES, type Rule } from '@netsim/netfilter';
import { settled, type Problem } from '../invariants.ts';
import { ruleIdentity } from '../view.ts';
import type { CountingInvariant } from './counting.ts';

export const NO_DUPLICATE_RULES = 'no duplicate rules in any table';

/**
 * @example
 * ```ts
 * const world = new World({ seed: 1, cluster, controller, invariants: [noDuplicateRulesAnywhere()] });
 * ```
 */
export function noDuplicateRulesAnywhere(opts: { readonly settleMs?: number } = {}): () => CountingInvariant {
  const ids = new WeakMap<Rule, string>();
  const idOf = (r: Rule): string => {
    let id = ids.get(r);
    if (id === undefined) {
      id = ruleIdentity(r);
      ids.set(r, id);
    }
    return id;
  };
  return () => {
    const byChain = new Map<string, { readonly rules: readonly Rule[]; readonly problems: readonly Problem[] }>();
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
              const where = `${node.name}|${table}|${name}`;
              const hit = byChain.get(where);
              if (hit !== undefined && hit.rules === chain.rules) {
                for (const p of hit.problems) out.push(p);
                continue;
              }
              count.n += chain.rules.length;
              const problems: Problem[] = [];
              const seen = new Map<string, number>();
              chain.rules.forEach((r, i) => {
                const id = idOf(r);
                const first = seen.get(id);
                if (first === undefined) seen.set(id, i + 1);
                else problems.push({ key: `${where}|${id}`, node: node.name, message: `${table} ${name} on ${node.name} holds the same rule at positions ${first} and ${i + 1}`, state: { node: node.name, table, chain: name, positions: [first, i + 1] } });
              });
              byChain.set(where, { rules: chain.rules, problems });
              for (const p of problems) out.push(p);
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
