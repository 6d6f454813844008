/**
 * The `KUBE-EXT-<hash>` chain of a Service reachable from outside (NodePort, LoadBalancer): what
 * external traffic goes through before its traffic policy chain. Two versions, and the difference
 * between them is the proxy defect the faulty variant carries.
 *
 * With `externalTrafficPolicy: Local`, the policy chain is `KUBE-SVL-<hash>`, which exists only on
 * nodes with a local endpoint. kube-proxy guards the final jump with `hasExternalEndpoints`; the
 * unguarded version jumps to a chain the restore input never declares on the other nodes, so
 * `iptables-restore` refuses the line — and with it the whole transaction: no Service's rules are
 * written on that node, on this sync or any later one, until the Service changes. This is the
 * class of kube-proxy defect where one bad line fails every Service (kubernetes#36652 was an empty
 * `-s` in a rule of the same chain family).
 */

/** Everything the chain's rules depend on. */
export interface ExternalChainContext {
  readonly nameString: string;
  readonly externalTrafficChain: string;
  readonly externalPolicyChain: string;
  readonly clusterPolicyChain: string;
  readonly externalPolicyLocal: boolean;
  readonly hasExternalEndpoints: boolean;
  /** `-s <cluster CIDR>`: the local-traffic detector (`--detect-local-mode=ClusterCIDR`). */
  readonly ifLocal: readonly string[];
  readonly markMasqChain: string;
}

/** Writes the chain's rules as restore lines. */
export type ExternalChainWriter = (c: ExternalChainContext, write: (...words: string[]) => void) => void;

function shortCircuitAndMasquerade(c: ExternalChainContext, write: (...words: string[]) => void): void {
  if (!c.externalPolicyLocal) {
    // Non-local endpoints may be used: masquerade, in case the packet crosses nodes.
    write('-A', c.externalTrafficChain, '-m', 'comment', '--comment', `"masquerade traffic for ${c.nameString} external destinations"`, '-j', c.markMasqChain);
    return;
  }
  // Pods reaching the external address of a Local Service take the cluster path, as if they went
  // out to a load balancer and back.
  write('-A', c.externalTrafficChain, '-m', 'comment', '--comment', `"pod traffic for ${c.nameString} external destinations"`, ...c.ifLocal, '-j', c.clusterPolicyChain);
  // The node itself: the destination is a local address, so it is the source too; masquerade.
  write('-A', c.externalTrafficChain, '-m', 'comment', '--comment', `"masquerade LOCAL traffic for ${c.nameString} external destinations"`, '-m', 'addrtype', '--src-type', 'LOCAL', '-j', c.markMasqChain);
  write('-A', c.externalTrafficChain, '-m', 'comment', '--comment', `"route LOCAL traffic for ${c.nameString} external destinations"`, '-m', 'addrtype', '--src-type', 'LOCAL', '-j', c.clusterPolicyChain);
}

/** kube-proxy's version: the jump to the policy chain only when that chain has endpoints. */
export const writeExternalChain: ExternalChainWriter = (c, write) => {
  shortCircuitAndMasquerade(c, write);
  if (c.hasExternalEndpoints) write('-A', c.externalTrafficChain, '-j', c.externalPolicyChain);
};

/** The faulty version: the same rules, and the jump to the policy chain whether or not it exists. */
export const writeExternalChainUnguarded: ExternalChainWriter = (c, write) => {
  shortCircuitAndMasquerade(c, write);
  write('-A', c.externalTrafficChain, '-j', c.externalPolicyChain);
};
