/**
 * One-bug switches on the fixed flannel masquerade manager (v0.27 lifecycle), for the mutation
 * suite (`packages/controllers/mutants/`); the public factory never sets one.
 */
import { MASQ_CHAIN, type IptablesRule } from './rules.ts';

export const FLANNEL_FLAWS = ['flush-before-refill', 'masquerade-pod-to-pod', 'no-egress-masquerade', 'duplicate-jump-on-restart', 'bootstrap-not-retried', 'resync-flushes-chain'] as const;

/** A flannel flaw (see {@link FLANNEL_FLAWS}). */
export type FlannelFlaw = (typeof FLANNEL_FLAWS)[number];

/** The rule set a flawed manager writes: the reference rules without the ones its flaw forgets. */
export function flawedMasqRules(rules: readonly IptablesRule[], podCidr: string, clusterCidr: string, flaw: FlannelFlaw | undefined): IptablesRule[] {
  const spec = (r: IptablesRule): string => r.rulespec.join(' ');
  return rules.filter((r) => {
    if (r.chain !== MASQ_CHAIN) return true;
    // The overlay exemptions: without them Pod-to-Pod traffic across nodes is masqueraded.
    if (flaw === 'masquerade-pod-to-pod') return !(spec(r).startsWith(`-s ${podCidr} -d ${clusterCidr} `) || spec(r).startsWith(`-s ${clusterCidr} -d ${podCidr} `));
    // The rule for Pods leaving the cluster network.
    if (flaw === 'no-egress-masquerade') return !spec(r).startsWith(`-s ${clusterCidr} ! -d 224.0.0.0/4 `);
    return true;
  });
}
