/**
 * Whether a ruleset makes the kernel track connections in its namespace. Conntrack is not always
 * on: it runs in a network namespace only once a rule there depends on it (checked on 6.18 with
 * iptables-nft: a fresh namespace, or one with only plain filter or raw rules, tracks nothing; a
 * rule in the nat table, a `conntrack`/`state` match or a CONNMARK target turns it on). A Pod's
 * namespace without rules therefore has an empty `conntrack -L`.
 */
import type { Match, Ruleset, Target } from '@netsim/netfilter';

const CT_MODULES: ReadonlySet<string> = new Set(['conntrack', 'state', 'connmark', 'connbytes', 'connlabel', 'connlimit', 'helper', 'cluster']);

function matchNeeds(m: Match): boolean {
  if (m.kind === 'conntrack' || m.kind === 'state') return true;
  return m.kind === 'unknown' && CT_MODULES.has(m.module);
}

function targetNeeds(t: Target | undefined): boolean {
  if (t === undefined) return false;
  switch (t.kind) {
    case 'CONNMARK':
    case 'NOTRACK':
    case 'CT':
    case 'DNAT':
    case 'SNAT':
    case 'MASQUERADE':
      return true;
    case 'unknown':
      return t.name === 'CONNSECMARK' || t.name === 'REDIRECT' || t.name === 'NETMAP';
    case 'ACCEPT':
    case 'DROP':
    case 'RETURN':
    case 'REJECT':
    case 'jump':
    case 'goto':
    case 'MARK':
    case 'LOG':
    case 'NFLOG':
    case 'TRACE':
      return false;
  }
}

/** True when any rule of the ruleset needs conntrack (see the module comment). */
export function rulesetNeedsConntrack(rs: Ruleset): boolean {
  for (const chain of Object.values(rs.tables.nat.chains)) if (chain.rules.length > 0) return true;
  for (const table of Object.values(rs.tables)) {
    for (const chain of Object.values(table.chains)) {
      for (const r of chain.rules) {
        if (targetNeeds(r.target)) return true;
        for (const m of r.matches) if (matchNeeds(m)) return true;
      }
    }
  }
  return false;
}
