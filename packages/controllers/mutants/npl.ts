/**
 * One-bug variants of the fixed NodePortLocal agent (Antrea v2.4.4's handlers).
 */
import { buildNodePortLocal } from '../src/npl/index.ts';
import type { NplFlaw } from '../src/npl/flaws.ts';
import type { Mutant } from './mutant.ts';

function npl(flaw: NplFlaw, bug: string, issue: string, issueTitle: string): Mutant {
  const name = `npl:${flaw}`;
  return { name, family: 'npl', flaw, bug, issue, issueTitle, create: (options) => buildNodePortLocal('fixed', options, flaw, name) };
}

/** The NodePortLocal variants. */
export const NPL_MUTANTS: readonly Mutant[] = [
  /**
   * The incident's flaw 1 alone: the clean-up loop over a Pod's entries returns after the first
   * one it deletes, so a deleted multi-port Pod leaves its other DNAT rules behind.
   */
  npl('cleanup-stops-early', 'deleting a multi-port Pod removes only its first DNAT rule', 'antrea-io/antrea#6281', 'Deletion of individual NodePortLocal (NPL) mapping rules not working correctly'),
  /**
   * The incident's flaw 2 alone: a cached entry is reused without comparing its Pod IP, so a Pod
   * deleted and recreated under the same name (seen as one update) keeps rules to the old IP.
   */
  npl('cached-ip-reused', 'a same-name recreate with a new IP keeps the DNAT rules to the old IP', 'antrea-io/antrea#7512', '[NodePortLocal] Handle missing Pod IP and Pod IP changes'),
  /** A tombstone (a delete seen only at a relist) is dropped instead of unwrapped: no clean-up. */
  npl('tombstone-dropped', 'a delete missed by the watch (DeletedFinalStateUnknown) is ignored, its rules stay', 'projectcalico/calico#12793', 'Handle DeletedFinalStateUnknown across kube-controllers and confd delete handlers'),
  /** A tombstone is cast to a Pod, as a Go type assertion without the ok check: the agent crashes and crash-loops. */
  npl('tombstone-crash', 'a tombstone is read as a Pod and the agent crashes', 'projectcalico/calico#12741', 'kube-controllers/pkg/controllers/node/controller.go: func NewController(...): panicing if casting is failed'),
  /** When a Pod stops being selected its rules go but the annotation stays, publishing mappings nothing serves. */
  npl('annotation-not-removed', 'a Pod no longer selected keeps its annotation after its rules are deleted', 'antrea-io/antrea#1910', "NPL(NodePort Local) changing service type from clusterIP to Nodeport doesn't removes the NPL annotations in POD"),
  /** The annotation is written once and never corrected: a node port reallocated later is not published. */
  npl('annotation-not-updated', 'the annotation is only written when absent, never updated', 'antrea-io/antrea#6527', 'NodePortLocal rules for a particular Pod are missing while the NPL annotation is present'),
  /** UDP target ports are skipped, as NodePortLocal did before it supported UDP. */
  npl('udp-ignored', 'UDP Service ports get no mapping', 'antrea-io/antrea#2395', 'Support other protocols (UDP, SCTP) in NodePortLocal'),
  /** A Pod key whose sync failed (an iptables error) is forgotten instead of requeued with backoff. */
  npl('no-retry', 'a sync that failed on an iptables error is never retried', 'kubernetes/kubernetes#38140', 'kube-proxy should have retry logic for iptables op failure'),
  /** A failed key is requeued at once, with no backoff at all. */
  npl('retry-without-backoff', 'a failed sync is retried immediately, in a hot loop', 'istio/istio#31936', 'Istio CNI: Retry if iptables programming fails [xtables locked]'),
  /** The start-up path flushes the chain and re-adds one rule at a time instead of one atomic restore. */
  npl('flush-before-refill', 'at start the chain is flushed, then refilled rule by rule: mappings vanish meanwhile', 'kubernetes/kubernetes#76376', 'Service access failure during kube-proxy rolling update'),
  /** The jumps are appended without the check: every restart adds another pair. */
  npl('duplicate-jumps', 'the PREROUTING/OUTPUT jumps are appended again at every start', 'coreos/kenc#42', 'iptables-restore with no flush leads to duplicate rules'),
  /** A Service's port changes (targetPort changed, port added or removed) do not resync the Pods it selects. */
  npl('port-update-ignored', 'a Service targetPort change or a removed Service port leaves the old mappings', 'antrea-io/antrea#1912', "NPL(node Port Local) doesn't works for Multi-Port Services objects"),
  /** A named targetPort (`targetPort: http`) is never resolved against the Pod's container ports. */
  npl('named-port-ignored', 'a Service with a named targetPort gets no mapping', 'antrea-io/antrea#2222', 'Use target port of Service in NodePortLocal to configure Pod reachability'),
  /** A Service's selector change does not resync the Pods that left or joined it. */
  npl('selector-update-ignored', 'Pods no longer selected keep their mappings, newly selected ones get none', 'kubernetes/kubernetes#98066', 'kube-proxy would not update iptables rules when pod selectors are used for service'),
];
