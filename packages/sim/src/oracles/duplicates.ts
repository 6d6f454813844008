/**
 * **No duplicate rules in any table**: no chain of any table holds the same rule twice once the
 * node has settled. Programming must be idempotent across restarts and resyncs; a duplicated jump
 * from a built-in chain is the classic leak (a `-A` where a `-C` then `-A` was meant). The same
 * holds for the chains of every nftables table (a rule is its statements and comment; handles and
 * counter values aside).
 */
import { TABLE_NAMES } from '@netsim/netfilter';
import { duplicateRuleFinder, ruleIdentities, settled, type Problem } from '../invariants.ts';
import type { Rule as NftRule, Stmt } from '@netsim/nftables';
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
          for (const t of view.nftRuleset?.(node.name).tables ?? []) {
            for (const chain of t.chains) {
              count.n += chain.rules.length;
              if (chain.rules.length < 2) continue;
              const where = `nft ${t.family} ${t.name} ${chain.name}`;
              const seen = new Map<string, number>();
              chain.rules.forEach((r, i) => {
                const id = nftRuleIdentity(r);
                const first = seen.get(id);
                if (first === undefined) seen.set(id, i + 1);
                else out.push({ key: `${node.name}|${where}|${id}`, node: node.name, message: `${where} on ${node.name} holds the same rule twice (rules ${first} and ${i + 1})`, state: { node: node.name, chain: where, rules: [first, i + 1] } });
              });
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

/** A rule's statements and comment as text, counter values left out. */
function nftRuleIdentity(r: NftRule): string {
  const stmts = r.stmts.map((x: Stmt) => (x.kind === 'counter' ? { kind: 'counter' } : x));
  return JSON.stringify([stmts, r.comment ?? null]);
}
