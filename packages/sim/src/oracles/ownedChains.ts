/**
 * **Owned chains stay programmed**: for every chain an agent declares it owns, once the jump from
 * a declared hook chain exists it must exist at every instant, and once the chain holds a rule
 * with its required target it must hold one at every instant. Strict: one step without is a
 * window in which packets bypass the chain (a flush before a refill, a delete before a re-add).
 * A node reboot starts the bookkeeping of that node afresh (its kernel state is gone).
 */
import type { OwnedChain } from '../agent.ts';
import type { CountingInvariant } from './counting.ts';
import { jumpsTo } from './reachable.ts';

export const OWNED_CHAINS = 'owned chains stay programmed';

/**
 * @example
 * ```ts
 * const world = new World({ seed: 1, cluster, controller, invariants: [ownedChainsStayProgrammed()] });
 * ```
 */
export function ownedChainsStayProgrammed(): () => CountingInvariant {
  return () => {
    /** `node|table|chain|what` → first seen at. */
    const programmed = new Map<string, number>();
    const boots = new Map<string, number>();
    let count = 0;
    return {
      name: OWNED_CHAINS,
      examined: () => count,
      check(view) {
        for (const node of view.nodes) {
          const b = view.boots?.(node.name) ?? 0;
          if ((boots.get(node.name) ?? 0) !== b) {
            boots.set(node.name, b);
            for (const k of [...programmed.keys()]) if (k.startsWith(`${node.name}|`)) programmed.delete(k);
          }
          const owned: OwnedChain[] = [];
          for (const a of view.agents?.(node.name) ?? []) for (const c of a.declares?.ownedChains ?? []) owned.push(c);
          if (owned.length === 0) continue;
          const rs = view.ruleset(node.name);
          for (const c of owned) {
            count++;
            const chain = rs.tables[c.table].chains[c.chain];
            const base = `${node.name}|${c.table}|${c.chain}`;
            for (const from of c.hookedFrom ?? []) {
              const k = `${base}|hook|${from}`;
              const has = chain !== undefined && jumpsTo(rs.tables[c.table].chains[from]?.rules ?? [], c.chain);
              const at = programmed.get(k);
              if (at === undefined) {
                if (has) programmed.set(k, view.nowMs);
              } else if (!has) {
                return { message: `${c.table} ${c.chain} on ${node.name} is unhooked: ${from} no longer jumps to it (it did since t=${at}ms)`, state: { node: node.name, table: c.table, chain: c.chain, hookedFrom: from } };
              }
            }
            if (c.requiredTarget !== undefined) {
              const k = `${base}|target`;
              const has = chain !== undefined && chain.rules.some((r) => r.target?.kind === c.requiredTarget);
              const at = programmed.get(k);
              if (at === undefined) {
                if (has) programmed.set(k, view.nowMs);
              } else if (!has) {
                const why = chain === undefined ? 'was deleted' : chain.rules.length === 0 ? 'is empty' : `has no ${c.requiredTarget} rule`;
                return { message: `${c.table} ${c.chain} on ${node.name} ${why} (it held a ${c.requiredTarget} rule since t=${at}ms)`, state: { node: node.name, table: c.table, chain: c.chain, rules: chain?.rules.length ?? 0 } };
              }
            }
          }
        }
        return undefined;
      },
    };
  };
}
