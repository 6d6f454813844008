/**
 * Known disagreements: each is a rule pattern, the reason (with the evidence) and who should act.
 * A disagreement counts as known only when a field that disagrees is the counter of a rule with
 * the pattern (the pattern elsewhere in the case explains nothing) and, where
 * the lab can also run iptables-legacy, the same case on iptables-legacy agrees with netsim (so
 * the difference lies in iptables-nft's translation, not in netsim). Everything else is a new
 * disagreement and fails the default run.
 *
 * Fixed ones leave the list and keep a regression test: eval-null-dnat-sets-ctstate-dnat (a DNAT
 * to the packet's own destination marked `--ctstate DNAT` in OUTPUT) was fixed in
 * @netsim/netfilter by 580f3c5; test/known.test.ts pins it.
 */
import { TABLE_NAMES, type Rule, type Ruleset } from '@netsim/netfilter';
import type { NfCase } from './generate.ts';
import { counterKey } from './outcome.ts';

export interface KnownDisagreement {
  readonly id: string;
  readonly title: string;
  /** Why the kernel and netsim differ, with the evidence, in full sentences. */
  readonly reason: string;
  /** The rule holds what causes it. */
  ruleHas(r: Rule): boolean;
  /** Confirmed when the same case on iptables-legacy agrees with netsim. */
  readonly legacyAgrees: boolean;
}

/** The counter keys (`filter FORWARD #2`, as the diffs name them) of the rules `pred` holds for. */
export function ruleKeys(rs: Ruleset, pred: (r: Rule) => boolean): string[] {
  const keys: string[] = [];
  for (const t of TABLE_NAMES) {
    for (const chain of Object.values(rs.tables[t].chains)) chain.rules.forEach((r, i) => pred(r) && keys.push(counterKey(t, chain.name, i + 1)));
  }
  return keys;
}

export const KNOWN_DISAGREEMENTS: readonly KnownDisagreement[] = [
  {
    id: 'nft-inverted-port-pair',
    title: 'iptables-nft 1.8.9 merges `! --sport A ! --dport B` into one compare',
    reason:
      'iptables-nft (1.8.9, Debian 12) translates a tcp/udp match whose source and destination ports are both single ' +
      'and both negated into one 32-bit payload compare, `(sport, dport) != (A, B)` (seen with `nft --debug=netlink ' +
      'list ruleset`: `payload load 4b @ transport header + 0`, `cmp neq`), so the rule matches when either port ' +
      'differs. The xt_tcp/xt_udp match that iptables-legacy loads, and the documented meaning, need both to differ; ' +
      'netsim follows that, and iptables-legacy agrees with netsim on these cases. Nothing to fix in netsim.',
    ruleHas: (r) =>
      r.matches.some(
        (m) =>
          (m.kind === 'tcp' || m.kind === 'udp') &&
          m.sport !== undefined &&
          m.dport !== undefined &&
          m.sport.negate &&
          m.dport.negate &&
          m.sport.range.from === m.sport.range.to &&
          m.dport.range.from === m.dport.range.to,
      ),
    legacyAgrees: true,
  },
];

/**
 * The known disagreements that explain `diffs` of case `c`: a differing field is the counter of a
 * rule holding the pattern (`counter raw PREROUTING #1: kernel 1, netsim 0`).
 */
export function knownCandidates(c: NfCase, diffs: readonly string[]): KnownDisagreement[] {
  return KNOWN_DISAGREEMENTS.filter((k) => {
    const keys = ruleKeys(c.ruleset, (r) => k.ruleHas(r));
    return keys.length > 0 && diffs.some((d) => keys.some((key) => d.startsWith(`counter ${key}:`)));
  });
}
