/**
 * The rules a packet can meet: the chains of a table reachable from its built-in chains through
 * jumps and gotos. A chain no hook reaches does nothing, so its rules are no one's traffic.
 */
import { BUILTIN_CHAINS, type Rule, type Ruleset, type TableName } from '@netsim/netfilter';
import { dnatRules, type DnatRule } from '../view.ts';

/** The chains of `table` reachable from its built-in chains, in a stable order (built-ins first, then by discovery). */
export function reachableChains(ruleset: Ruleset, table: TableName): string[] {
  const t = ruleset.tables[table];
  const seen = new Set<string>();
  const queue: string[] = [];
  for (const b of BUILTIN_CHAINS[table]) {
    if (t.chains[b] !== undefined && !seen.has(b)) {
      seen.add(b);
      queue.push(b);
    }
  }
  for (let i = 0; i < queue.length; i++) {
    const c = t.chains[queue[i] as string];
    if (c === undefined) continue;
    for (const r of c.rules) {
      const k = r.target?.kind;
      if (k !== 'jump' && k !== 'goto') continue;
      const next = (r.target as { readonly chain: string }).chain;
      if (!seen.has(next) && t.chains[next] !== undefined) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return queue;
}

/** Whether `from` holds a jump or goto to `to`. */
export function jumpsTo(rules: readonly Rule[], to: string): boolean {
  return rules.some((r) => (r.target?.kind === 'jump' || r.target?.kind === 'goto') && r.target.chain === to);
}

/**
 * Every DNAT rule of the nat table a packet can meet, remembered per rule array (rule arrays are
 * immutable; most steps change none).
 */
export function reachableDnatMemo(): (ruleset: Ruleset) => readonly DnatRule[] {
  const perChain = new WeakMap<readonly Rule[], { readonly chain: string; readonly dnat: readonly DnatRule[] }>();
  let lastRules: Ruleset | undefined;
  let last: readonly DnatRule[] = [];
  return (ruleset) => {
    if (ruleset === lastRules) return last;
    const out: DnatRule[] = [];
    for (const chain of reachableChains(ruleset, 'nat')) {
      const c = ruleset.tables.nat.chains[chain];
      if (c === undefined) continue;
      let hit = perChain.get(c.rules);
      if (hit === undefined || hit.chain !== chain) {
        hit = { chain, dnat: dnatRules(ruleset, 'nat', chain) };
        perChain.set(c.rules, hit);
      }
      for (const d of hit.dnat) out.push(d);
    }
    lastRules = ruleset;
    last = out;
    return out;
  };
}

/** `a.b.c.d/n` contains `ip`. */
export function inCidr(cidr: string, ip: string): boolean {
  const [base, bits] = cidr.split('/');
  const n = Number(bits);
  const a = toInt(base ?? '');
  const b = toInt(ip);
  if (a === undefined || b === undefined || !Number.isInteger(n) || n < 0 || n > 32) return false;
  if (n === 0) return true;
  const mask = (0xffffffff << (32 - n)) >>> 0;
  return ((a & mask) >>> 0) === ((b & mask) >>> 0);
}

function toInt(ip: string): number | undefined {
  const p = ip.split('.');
  if (p.length !== 4) return undefined;
  let v = 0;
  for (const x of p) {
    const n = Number(x);
    if (!/^[0-9]{1,3}$/.test(x) || n > 255) return undefined;
    v = v * 256 + n;
  }
  return v;
}
