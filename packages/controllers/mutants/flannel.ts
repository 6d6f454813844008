/**
 * One-bug variants of the fixed flannel masquerade manager (v0.27 lifecycle).
 */
import { buildFlannel } from '../src/flannel/index.ts';
import type { FlannelFlaw } from '../src/flannel/flaws.ts';
import type { Mutant } from './mutant.ts';

function flannel(flaw: FlannelFlaw, bug: string, issue: string, issueTitle: string): Mutant {
  const name = `flannel:${flaw}`;
  return { name, family: 'flannel', flaw, bug, issue, issueTitle, create: (options) => buildFlannel('fixed', options, flaw, name) };
}

/** The flannel variants. */
export const FLANNEL_MUTANTS: readonly Mutant[] = [
  /** v0.27.0's create-or-flush at start: the chain is empty between the flush and the bootstrap restore. */
  flannel('flush-before-refill', 'the chain is flushed at start before the bootstrap refills it', 'flannel-io/flannel#1668', 'FLANNEL-FWD and FLANNEL-POSTRTG chains not recreated after firewalld restart'),
  /** Without the overlay exemptions, Pod-to-Pod traffic across nodes is masqueraded and loses its source. */
  flannel('masquerade-pod-to-pod', 'Pod-to-Pod traffic is masqueraded', 'flannel-io/flannel#2176', 'Incorrect pod IPs for the pods that run in pod network'),
  /** The rule for Pods leaving the cluster network is missing: their egress keeps a Pod source. */
  flannel('no-egress-masquerade', 'Pod egress out of the cluster network is not masqueraded', 'coreos/bugs#1439', 'No IP masquerade for traffic destined for outside the flannel network'),
  /** The bootstrap appends the POSTROUTING jump without deleting the one a previous process left. */
  flannel('duplicate-jump-on-restart', 'every restart adds another POSTROUTING jump', 'flannel-io/flannel#1702', "Pod can't access clusterip service for another pod with endpoint on the same node"),
  /** A bootstrap that failed (iptables error) is never retried: no ensure loop runs after it. */
  flannel('bootstrap-not-retried', 'a failed bootstrap is never retried', 'kubernetes/kubernetes#56797', 'Kubernetes Flannel CNI does not re-create POSTROUTING MASQUERADE rules'),
  /** Every resync rewrites everything from an empty chain, whether anything was missing or not. */
  flannel('resync-flushes-chain', 'every resync flushes the chain and rewrites it', 'kubernetes/kubernetes#110268', 'minimize iptables-restore input'),
];
