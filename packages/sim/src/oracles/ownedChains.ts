/**
 * **Owned chains stay programmed**: for every chain an agent declares it owns, once the jump from
 * a declared hook chain exists it must exist at every instant, and once the chain holds a rule
 * with its required target it must hold one at every instant. Strict: one step without is a
 * window in which packets bypass the chain (a flush before a refill, a delete before a re-add).
 * A node reboot starts the bookkeeping of that node afresh (its kernel state is gone). The same
 * holds for the chains of nftables tables an agent declares (`ownedNftChains`): a base chain keeps
 * its hook, the declared chains keep jumping to it, and a rule keeps the required statement.
 */
import type { Stmt } from '@netsim/nftables';
import type { OwnedChain, OwnedNftChain } from '../agent.ts';
import type { InvariantResult } from '../engine.ts';
import type { WorldView } from '../view.ts';
import type { CountingInvariant } from './counting.ts';
import { nftJumpsTo } from './nftReachable.ts';
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
          const ownedNft: OwnedNftChain[] = [];
          for (const a of view.agents?.(node.name) ?? []) {
            for (const c of a.declares?.ownedChains ?? []) owned.push(c);
            for (const c of a.declares?.ownedNftChains ?? []) ownedNft.push(c);
          }
          if (ownedNft.length > 0) {
            const found = nftProblem(view, node.name, ownedNft, programmed);
            count += ownedNft.length;
            if (found !== undefined) return found;
          }
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

/** Whether a rule statement is the declared kind (`mark` is `meta mark set`). */
function isStatement(kind: NonNullable<OwnedNftChain['requiredStatement']>, s: Stmt): boolean {
  return kind === 'mark' ? s.kind === 'meta-set' && s.key === 'mark' : s.kind === 'nat' && s.nat === kind;
}

/** The first owned nft chain of `node` that lost what it had, bookkept in `programmed`. */
function nftProblem(view: WorldView, node: string, owned: readonly OwnedNftChain[], programmed: Map<string, number>): InvariantResult {
  const rs = view.nftRuleset?.(node);
  for (const c of owned) {
    const table = rs?.tables.find((t) => t.family === c.family && t.name === c.table);
    const chain = table?.chains.find((x) => x.name === c.chain);
    const name = `nft ${c.family} ${c.table} ${c.chain}`;
    const base = `${node}|nft|${c.family}|${c.table}|${c.chain}`;
    const state = { node, family: c.family, table: c.table, chain: c.chain };
    const gone = table === undefined ? `lost its table (${c.family} ${c.table} was deleted)` : chain === undefined ? 'was deleted' : undefined;
    if (c.hook !== undefined) {
      const k = `${base}|hook`;
      const has = chain?.base?.hook === c.hook;
      const at = programmed.get(k);
      if (at === undefined) {
        if (has) programmed.set(k, view.nowMs);
      } else if (!has) return { message: `${name} on ${node} ${gone ?? `is no longer a base chain on the ${c.hook} hook`} (it was since t=${at}ms)`, state: { ...state, hook: c.hook } };
    }
    for (const from of c.jumpedFrom ?? []) {
      const k = `${base}|from|${from}`;
      const src = table?.chains.find((x) => x.name === from);
      const has = table !== undefined && chain !== undefined && src !== undefined && nftJumpsTo(table, src, c.chain);
      const at = programmed.get(k);
      if (at === undefined) {
        if (has) programmed.set(k, view.nowMs);
      } else if (!has) return { message: `${name} on ${node} is unhooked: ${from} no longer jumps to it (it did since t=${at}ms)`, state: { ...state, jumpedFrom: from } };
    }
    if (c.requiredStatement !== undefined) {
      const want = c.requiredStatement;
      const k = `${base}|stmt`;
      const has = chain !== undefined && chain.rules.some((r) => r.stmts.some((s) => isStatement(want, s)));
      const at = programmed.get(k);
      if (at === undefined) {
        if (has) programmed.set(k, view.nowMs);
      } else if (!has) {
        const why = gone ?? (chain?.rules.length === 0 ? 'is empty' : `has no ${want} rule`);
        return { message: `${name} on ${node} ${why} (it held a ${want} rule since t=${at}ms)`, state: { ...state, rules: chain?.rules.length ?? 0 } };
      }
    }
  }
  return undefined;
}
