/**
 * One-bug switches on the fixed kube-proxy, for the mutation suite
 * (`packages/controllers/mutants/`); the public factory never sets one.
 */
import { writeExternalChain, type ExternalChainWriter } from './externalChain.ts';

export const KUBE_PROXY_FLAWS = [
  'stale-udp-conntrack',
  'udp-ignored',
  'local-policy-masquerades',
  'local-policy-cluster-endpoints',
  'lost-changes-after-failed-restore',
  'endpoint-changes-ignored',
  'duplicate-jumps',
  'flush-before-refill',
  'no-retry',
  'tombstone-crash',
  'terminating-endpoints-ignored',
  'hairpin-not-masqueraded',
] as const;

/** A kube-proxy flaw (see {@link KUBE_PROXY_FLAWS}). */
export type KubeProxyFlaw = (typeof KUBE_PROXY_FLAWS)[number];

/**
 * The `local-policy-masquerades` writer: the fixed chain, preceded by the Cluster policy's
 * masquerade rule whatever the policy, so Local external traffic loses its client source.
 */
export const writeExternalChainMasqueradingLocal: ExternalChainWriter = (c, write) => {
  if (c.externalPolicyLocal) write('-A', c.externalTrafficChain, '-m', 'comment', '--comment', `"masquerade traffic for ${c.nameString} external destinations"`, '-j', c.markMasqChain);
  writeExternalChain(c, write);
};
