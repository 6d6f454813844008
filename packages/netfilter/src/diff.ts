/**
 * Rule-level differences between two rulesets: tables and chains added or removed, policies
 * changed, and per chain the rules removed, added and moved. Rules are compared by their
 * `iptables-save` spec (counters aside), so two spellings of one rule are the same rule.
 *
 * Within a chain, the k-th occurrence of a spec in `a` pairs with its k-th occurrence in `b`; the
 * longest run of pairs that keeps its order stays put, other pairs are moves, and unpaired rules
 * are removals (from `a`) or additions (to `b`). This costs O(n log n) per chain.
 */
import { compareNames } from './draft.ts';
import { chainOrder } from './listing.ts';
import { ruleKey } from './ruleSpec.ts';
import { SAVE_TABLE_ORDER } from './save.ts';
import type { Chain, Policy, Rule, Ruleset, TableName } from './types.ts';

/** One difference between two rulesets; see {@link diff}. */
export type RulesetChange =
  | { readonly kind: 'table-added' | 'table-removed'; readonly table: TableName }
  | { readonly kind: 'chain-added' | 'chain-removed'; readonly table: TableName; readonly chain: string }
  | { readonly kind: 'policy-changed'; readonly table: TableName; readonly chain: string; readonly from: Policy; readonly to: Policy }
  | {
      readonly kind: 'rule-removed' | 'rule-added';
      readonly table: TableName;
      readonly chain: string;
      /** 1-based position in `a` (removed) or `b` (added). */
      readonly index: number;
      readonly rule: Rule;
      /** The rule as `iptables-save` prints it after `-A CHAIN`. */
      readonly spec: string;
    }
  | {
      readonly kind: 'rule-moved';
      readonly table: TableName;
      readonly chain: string;
      /** 1-based position in `a`. */
      readonly from: number;
      /** 1-based position in `b`. */
      readonly to: number;
      readonly rule: Rule;
      readonly spec: string;
    };

/**
 * The changes that turn `a` into `b`, table by table in `iptables-save` order, chain by chain in
 * listing order; an empty array when they print the same (counters aside).
 *
 * @example
 * diff(parseSave(before), parseSave(after)).filter((c) => c.kind === 'rule-removed')
 */
export function diff(a: Ruleset, b: Ruleset): RulesetChange[] {
  const out: RulesetChange[] = [];
  for (const table of SAVE_TABLE_ORDER) {
    const ta = a.tables[table];
    const tb = b.tables[table];
    const absentA = ta.absent === true;
    const absentB = tb.absent === true;
    if (absentA && !absentB) out.push({ kind: 'table-added', table });
    if (!absentA && absentB) out.push({ kind: 'table-removed', table });
    const chainsA = new Map(chainOrder(ta).map((c) => [c.name, c]));
    const chainsB = new Map(chainOrder(tb).map((c) => [c.name, c]));
    const names = [...new Set([...chainsA.keys(), ...chainsB.keys()])];
    const builtins = names.filter((n) => chainsA.get(n)?.policy !== undefined || chainsB.get(n)?.policy !== undefined);
    const users = names.filter((n) => !builtins.includes(n)).sort(compareNames);
    for (const name of [...builtins, ...users]) {
      const ca = chainsA.get(name);
      const cb = chainsB.get(name);
      if (ca === undefined && cb !== undefined) out.push({ kind: 'chain-added', table, chain: name });
      if (ca !== undefined && cb === undefined) out.push({ kind: 'chain-removed', table, chain: name });
      if (ca?.policy !== undefined && cb?.policy !== undefined && ca.policy !== cb.policy) {
        out.push({ kind: 'policy-changed', table, chain: name, from: ca.policy, to: cb.policy });
      }
      diffRules(table, name, ca, cb, out);
    }
  }
  return out;
}

function diffRules(table: TableName, chain: string, ca: Chain | undefined, cb: Chain | undefined, out: RulesetChange[]): void {
  const ra = ca?.rules ?? [];
  const rb = cb?.rules ?? [];
  if (ra.length === 0 && rb.length === 0) return;
  const ka = ra.map(ruleKey);
  const kb = rb.map(ruleKey);
  // Pair the k-th occurrence of each spec in a with its k-th occurrence in b.
  const positionsA = new Map<string, number[]>();
  ka.forEach((k, i) => {
    const list = positionsA.get(k);
    if (list === undefined) positionsA.set(k, [i]);
    else list.push(i);
  });
  const used = new Map<string, number>();
  const pairOfB: number[] = new Array<number>(kb.length).fill(-1);
  const pairedA = new Uint8Array(ka.length);
  kb.forEach((k, j) => {
    const n = used.get(k) ?? 0;
    const i = positionsA.get(k)?.[n];
    if (i !== undefined) {
      pairOfB[j] = i;
      pairedA[i] = 1;
      used.set(k, n + 1);
    }
  });
  const stays = longestIncreasing(pairOfB);

  for (let i = 0; i < ra.length; i++) {
    if (pairedA[i] === 0) out.push({ kind: 'rule-removed', table, chain, index: i + 1, rule: ra[i] as Rule, spec: ka[i] as string });
  }
  for (let j = 0; j < rb.length; j++) {
    const i = pairOfB[j] as number;
    if (i >= 0 && !stays.has(j)) out.push({ kind: 'rule-moved', table, chain, from: i + 1, to: j + 1, rule: rb[j] as Rule, spec: kb[j] as string });
  }
  for (let j = 0; j < rb.length; j++) {
    if (pairOfB[j] === -1) out.push({ kind: 'rule-added', table, chain, index: j + 1, rule: rb[j] as Rule, spec: kb[j] as string });
  }
}

/** Indexes j (with seq[j] >= 0) of a longest strictly increasing subsequence of seq. */
function longestIncreasing(seq: readonly number[]): Set<number> {
  const tails: number[] = []; // tails[len-1] = index j ending the best run of that length
  const prev: number[] = new Array<number>(seq.length).fill(-1);
  for (let j = 0; j < seq.length; j++) {
    const v = seq[j] as number;
    if (v < 0) continue;
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((seq[tails[mid] as number] as number) < v) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) prev[j] = tails[lo - 1] as number;
    tails[lo] = j;
  }
  const result = new Set<number>();
  let j = tails.length > 0 ? (tails[tails.length - 1] as number) : -1;
  while (j >= 0) {
    result.add(j);
    j = prev[j] as number;
  }
  return result;
}

/**
 * The changes as text, one per line, grouped under `*table` headers: `+`/`-` for added and removed
 * chains and rules (`[n]` is the rule's position), `~` for policies and moves.
 *
 * @example
 * formatDiff(diff(a, b))
 * // *nat
 * // + chain KUBE-SVC-NEW
 * // - [3] -A KUBE-SERVICES -d 198.18.0.10/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-OLD
 */
export function formatDiff(changes: readonly RulesetChange[]): string {
  let out = '';
  let table: TableName | undefined;
  for (const c of changes) {
    if (c.table !== table) {
      table = c.table;
      out += `*${table}\n`;
    }
    switch (c.kind) {
      case 'table-added':
        out += '+ table\n';
        break;
      case 'table-removed':
        out += '- table\n';
        break;
      case 'chain-added':
        out += `+ chain ${c.chain}\n`;
        break;
      case 'chain-removed':
        out += `- chain ${c.chain}\n`;
        break;
      case 'policy-changed':
        out += `~ policy ${c.chain} ${c.from} -> ${c.to}\n`;
        break;
      case 'rule-removed':
        out += `- [${c.index}] -A ${c.chain}${c.spec === '' ? '' : ` ${c.spec}`}\n`;
        break;
      case 'rule-added':
        out += `+ [${c.index}] -A ${c.chain}${c.spec === '' ? '' : ` ${c.spec}`}\n`;
        break;
      case 'rule-moved':
        out += `~ [${c.from} -> ${c.to}] -A ${c.chain}${c.spec === '' ? '' : ` ${c.spec}`}\n`;
        break;
    }
  }
  return out;
}
