/**
 * flannel's masquerade rules (`pkg/trafficmngr/iptables`, `masqRules`), IPv4, with
 * `--random-fully` (iptables ≥ 1.6.2 has it): every rule carries the comment `flanneld masq`.
 */

/** The nat chain holding flannel's masquerade rules, jumped to from POSTROUTING. */
export const MASQ_CHAIN = 'FLANNEL-POSTRTG';
/** The comment on every rule flannel writes. */
export const MASQ_COMMENT = 'flanneld masq';
/** The mark kube-proxy sets on traffic it will masquerade itself. */
export const KUBE_PROXY_MARK = '0x4000/0x4000';

/** One rule as flannel records it: table, action (`-A`), chain and rule spec. */
export interface IptablesRule {
  readonly table: string;
  readonly action: string;
  readonly chain: string;
  readonly rulespec: readonly string[];
}

const comment: readonly string[] = ['-m', 'comment', '--comment', MASQ_COMMENT];

/**
 * The rules for a node whose Pods get addresses from `podCidr` inside the cluster network
 * `clusterCidr`, in flannel's order: the POSTROUTING jump first, then the chain's rules.
 *
 * @example
 * ```ts
 * masqRules('198.18.0.0/15', '198.18.1.0/24')[5].rulespec.join(' ');
 * // '-s 198.18.0.0/15 ! -d 224.0.0.0/4 -m comment --comment flanneld masq -j MASQUERADE --random-fully'
 * ```
 */
export function masqRules(clusterCidr: string, podCidr: string): IptablesRule[] {
  const nat = (chain: string, rulespec: string[]): IptablesRule => ({ table: 'nat', action: '-A', chain, rulespec });
  return [
    // Run flannel's rules before other POSTROUTING rules appended later.
    nat('POSTROUTING', [...comment, '-j', MASQ_CHAIN]),
    // kube-proxy masquerades what it marked: no double NAT.
    nat(MASQ_CHAIN, ['-m', 'mark', '--mark', KUBE_PROXY_MARK, ...comment, '-j', 'RETURN']),
    // No NAT inside the overlay.
    nat(MASQ_CHAIN, ['-s', podCidr, '-d', clusterCidr, ...comment, '-j', 'RETURN']),
    nat(MASQ_CHAIN, ['-s', clusterCidr, '-d', podCidr, ...comment, '-j', 'RETURN']),
    // External traffic arriving from the node that owns the Pod address keeps its source.
    nat(MASQ_CHAIN, ['!', '-s', clusterCidr, '-d', podCidr, ...comment, '-j', 'RETURN']),
    // Pods leaving the cluster network (not multicast) are masqueraded.
    nat(MASQ_CHAIN, ['-s', clusterCidr, '!', '-d', '224.0.0.0/4', ...comment, '-j', 'MASQUERADE', '--random-fully']),
    // So is the host talking to the overlay.
    nat(MASQ_CHAIN, ['!', '-s', clusterCidr, '-d', clusterCidr, ...comment, '-j', 'MASQUERADE', '--random-fully']),
  ];
}

/** True when the rule lives in, or jumps to, `chain`. */
export function touchesChain(rule: IptablesRule, chain: string): boolean {
  return rule.chain === chain || rule.rulespec[rule.rulespec.length - 1] === chain;
}
