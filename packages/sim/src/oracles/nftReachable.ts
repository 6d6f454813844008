/**
 * The nftables rules a packet can meet: in each table, the chains reachable from its base chains
 * through `jump` and `goto` verdicts, including those of verdict maps (anonymous, or named with
 * their elements' verdicts). The `dnat to` statements of chains reachable from a `nat` base chain
 * on a destination-NAT hook (prerouting, output) are the nft side of "no stale DNAT".
 */
import type { Chain, Element, Ruleset as NftRuleset, Stmt, Table, Verdict } from '@netsim/nftables';

/** A `dnat to` statement as the invariants see it (the fields of the iptables view's `DnatRule` they read). */
export interface NftDnat {
  /** `nft ip kube-proxy endpoint-…`: the family, the table and the chain. */
  readonly chain: string;
  /** 1-based position in the chain. */
  readonly index: number;
  /** 6 tcp, 17 udp, 0 any. */
  readonly proto: number;
  readonly dport?: number;
  readonly toIp?: string;
  readonly toPort?: number;
}

function verdictTargets(v: Verdict, out: string[]): void {
  if (v.kind === 'jump' || v.kind === 'goto') out.push(v.chain);
}

function elementTargets(elements: readonly Element[], out: string[]): void {
  for (const e of elements) for (const d of e.data ?? []) if (d.type === 'verdict') verdictTargets(d.v, out);
}

/** The chains one statement can send a packet to. */
function stmtTargets(t: Table, s: Stmt, out: string[]): void {
  if (s.kind === 'verdict') verdictTargets(s.verdict, out);
  else if (s.kind === 'vmap') {
    const m = s.lookup.map;
    if (m.kind === 'anon') elementTargets(m.elements, out);
    else {
      const named = t.sets.find((x) => x.name === m.name);
      if (named !== undefined) elementTargets(named.elements, out);
    }
  }
}

/** The chains of `t` reachable from its base chains that pass `from` (all base chains by default), base chains first. */
export function nftReachableChains(t: Table, from: (c: Chain) => boolean = (c) => c.base !== undefined): Chain[] {
  const byName = new Map(t.chains.map((c) => [c.name, c]));
  const seen = new Set<string>();
  const queue: Chain[] = [];
  for (const c of t.chains) {
    if (c.base !== undefined && from(c)) {
      seen.add(c.name);
      queue.push(c);
    }
  }
  const targets: string[] = [];
  for (let i = 0; i < queue.length; i++) {
    const c = queue[i] as Chain;
    for (const r of c.rules) for (const s of r.stmts) stmtTargets(t, s, targets);
    for (const name of targets.splice(0)) {
      const next = byName.get(name);
      if (next !== undefined && !seen.has(name)) {
        seen.add(name);
        queue.push(next);
      }
    }
  }
  return queue;
}

/** Whether a chain of `t` jumps or goes to `to` (directly, or through a verdict map). */
export function nftJumpsTo(t: Table, from: Chain, to: string): boolean {
  const targets: string[] = [];
  for (const r of from.rules) for (const s of r.stmts) stmtTargets(t, s, targets);
  return targets.includes(to);
}

function ipv4(n: number): string {
  return `${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** The `dnat to` statements of one chain, with the protocol and destination port its rule matches. */
function chainDnat(t: Table, c: Chain): NftDnat[] {
  const out: NftDnat[] = [];
  c.rules.forEach((r, i) => {
    let proto = 0;
    let dport: number | undefined;
    for (const s of r.stmts) {
      if (s.kind === 'match' && s.op !== '!=' && s.right.kind === 'value') {
        const l = s.left;
        const v = s.right.value;
        if (l.kind === 'meta' && l.key === 'l4proto' && 'n' in v) proto = v.n;
        if (l.kind === 'payload' && l.field === 'dport' && 'n' in v) {
          dport = v.n;
          if (l.proto === 'tcp') proto = 6;
          if (l.proto === 'udp') proto = 17;
        }
      }
      if (s.kind !== 'nat' || s.nat !== 'dnat') continue;
      const a = s.addr;
      const toIp = a?.kind === 'value' && 'n' in a.value ? ipv4(a.value.n) : a?.kind === 'range' ? ipv4(a.lo) : undefined;
      out.push({
        chain: `nft ${t.family} ${t.name} ${c.name}`,
        index: i + 1,
        proto,
        ...(dport !== undefined ? { dport } : {}),
        ...(toIp !== undefined ? { toIp } : {}),
        ...(s.port !== undefined ? { toPort: s.port.lo } : {}),
      });
    }
  });
  return out;
}

/**
 * Every `dnat to` a packet can meet: in chains reachable from a `nat` base chain on prerouting
 * or output, remembered per ruleset (rulesets are immutable; most steps change none).
 */
export function nftReachableDnatMemo(): (ruleset: NftRuleset) => readonly NftDnat[] {
  let lastRules: NftRuleset | undefined;
  let last: readonly NftDnat[] = [];
  return (ruleset) => {
    if (ruleset === lastRules) return last;
    const out: NftDnat[] = [];
    for (const t of ruleset.tables) {
      if (t.dormant) continue;
      for (const c of nftReachableChains(t, (b) => b.base?.type === 'nat' && (b.base.hook === 'prerouting' || b.base.hook === 'output'))) for (const d of chainDnat(t, c)) out.push(d);
    }
    lastRules = ruleset;
    last = out;
    return out;
  };
}
