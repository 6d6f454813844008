/**
 * Differences between two rulesets at the level users reason about: tables, chains (their base
 * chain line and each rule, as `nft list` prints them) and sets (declaration and elements).
 */
import { formatElement, formatRule, formatPriority } from './listing.ts';
import { compareKeys } from './elements.ts';
import type { Chain, NftSet, Ruleset, Table } from './types.ts';

/** One difference: `-` only in the first ruleset, `+` only in the second, under its object. */
export interface RulesetChange {
  readonly sign: '-' | '+';
  /** `table ip t`, `table ip t chain c`, `table ip t set s`. */
  readonly where: string;
  readonly text: string;
}

function chainLines(c: Chain, t: Table): string[] {
  const out: string[] = [];
  if (c.base !== undefined) out.push(`type ${c.base.type} hook ${c.base.hook} priority ${formatPriority(c.base.priority, c.base.hook)}; policy ${c.base.policy};`);
  for (const r of c.rules) out.push(formatRule(r, t.family));
  return out;
}

function setLines(s: NftSet): string[] {
  const out = [`type ${s.keyType.join(' . ')}${s.dataType !== undefined ? ` : ${s.dataType.join(' . ')}` : ''}${s.flags.length > 0 ? ` flags ${s.flags.join(',')}` : ''}`];
  const els = [...s.elements].sort((a, b) => compareKeys(a.key, b.key));
  for (const e of els) {
    // Timeouts are state, not configuration: compare what is in the set.
    const { timeoutMs: _timeout, ...rest } = e;
    out.push(`element ${formatElement(rest)}`);
  }
  return out;
}

/** Multiset difference of two line lists, keeping each side's order. */
function lineDiff(a: readonly string[], b: readonly string[], where: string, out: RulesetChange[]): void {
  const count = new Map<string, number>();
  for (const l of b) count.set(l, (count.get(l) ?? 0) + 1);
  const onlyA: string[] = [];
  for (const l of a) {
    const n = count.get(l) ?? 0;
    if (n > 0) count.set(l, n - 1);
    else onlyA.push(l);
  }
  const countA = new Map<string, number>();
  for (const l of a) countA.set(l, (countA.get(l) ?? 0) + 1);
  const onlyB: string[] = [];
  for (const l of b) {
    const n = countA.get(l) ?? 0;
    if (n > 0) countA.set(l, n - 1);
    else onlyB.push(l);
  }
  for (const text of onlyA) out.push({ sign: '-', where, text });
  for (const text of onlyB) out.push({ sign: '+', where, text });
}

/** The changes that turn `a` into `b`. */
export function diffRulesets(a: Ruleset, b: Ruleset): RulesetChange[] {
  const out: RulesetChange[] = [];
  const key = (t: Table): string => `table ${t.family} ${t.name}`;
  const bt = new Map(b.tables.map((t) => [key(t), t]));
  const at = new Map(a.tables.map((t) => [key(t), t]));
  for (const t of a.tables) if (!bt.has(key(t))) out.push({ sign: '-', where: key(t), text: key(t) });
  for (const t of b.tables) if (!at.has(key(t))) out.push({ sign: '+', where: key(t), text: key(t) });
  for (const ta of a.tables) {
    const tb = bt.get(key(ta));
    if (tb === undefined) continue;
    const names = [...new Set([...ta.sets.map((s) => s.name), ...tb.sets.map((s) => s.name)])];
    for (const n of names) {
      const sa = ta.sets.find((s) => s.name === n);
      const sb = tb.sets.find((s) => s.name === n);
      lineDiff(sa === undefined ? [] : setLines(sa), sb === undefined ? [] : setLines(sb), `${key(ta)} ${sa?.isMap === true || sb?.isMap === true ? 'map' : 'set'} ${n}`, out);
    }
    const chains = [...new Set([...ta.chains.map((c) => c.name), ...tb.chains.map((c) => c.name)])];
    for (const n of chains) {
      const ca = ta.chains.find((c) => c.name === n);
      const cb = tb.chains.find((c) => c.name === n);
      const where = `${key(ta)} chain ${n}`;
      if (ca === undefined) out.push({ sign: '+', where, text: `chain ${n}` });
      if (cb === undefined) out.push({ sign: '-', where, text: `chain ${n}` });
      lineDiff(ca === undefined ? [] : chainLines(ca, ta), cb === undefined ? [] : chainLines(cb, tb), where, out);
    }
  }
  return out;
}

/** The changes grouped under their object, `-`/`+` lines like diff(1). */
export function formatRulesetDiff(changes: readonly RulesetChange[]): string {
  let out = '';
  let last = '';
  for (const c of changes) {
    if (c.where !== last) {
      out += `${c.where}\n`;
      last = c.where;
    }
    out += `${c.sign} ${c.text}\n`;
  }
  return out;
}
