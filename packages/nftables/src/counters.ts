/**
 * Counters as the kernel keeps them: a `counter` statement counts the packets and bytes that reach
 * it, and `nft list` prints the running totals. Evaluation records the counts in its state
 * ({@link NftEvalState.counts}); {@link withCounters} gives the ruleset value a listing prints.
 */
import type { NftEvalState } from './evaluate.ts';
import type { Chain, Rule, Ruleset, Stmt, Table } from './types.ts';

/**
 * `rs` with every counter statement showing what it was loaded with plus what evaluation counted
 * since. Returns `rs` itself when nothing was counted.
 */
export function withCounters(rs: Ruleset, state: NftEvalState): Ruleset {
  if (state.counts.size === 0) return rs;
  let changed = false;
  const tables = rs.tables.map((t): Table => {
    let tChanged = false;
    const chains = t.chains.map((c): Chain => {
      let cChanged = false;
      const rules = c.rules.map((r): Rule => {
        let rChanged = false;
        const stmts = r.stmts.map((s): Stmt => {
          if (s.kind !== 'counter') return s;
          const n = state.counts.get(s);
          if (n === undefined) return s;
          rChanged = true;
          return { kind: 'counter', packets: s.packets + n.packets, bytes: s.bytes + n.bytes };
        });
        if (!rChanged) return r;
        cChanged = true;
        return { ...r, stmts };
      });
      if (!cChanged) return c;
      tChanged = true;
      return { ...c, rules };
    });
    if (!tChanged) return t;
    changed = true;
    return { ...t, chains };
  });
  return changed ? { ...rs, tables } : rs;
}

/**
 * Forgets the counts of statements no longer in `rs` (after a transaction replaced their rules),
 * so the state does not grow with every rule ever loaded.
 */
export function pruneCounts(rs: Ruleset, state: NftEvalState): void {
  if (state.counts.size === 0) return;
  const live = new Set<Stmt>();
  for (const t of rs.tables) for (const c of t.chains) for (const r of c.rules) for (const s of r.stmts) if (s.kind === 'counter') live.add(s);
  for (const s of [...state.counts.keys()]) if (!live.has(s)) state.counts.delete(s);
}
