/**
 * One-bug variants of the fixed kube-proxy (iptables mode).
 */
import { buildKubeProxy } from '../src/kubeproxy/index.ts';
import type { KubeProxyFlaw } from '../src/kubeproxy/flaws.ts';
import type { Mutant } from './mutant.ts';

function kubeProxy(flaw: KubeProxyFlaw, bug: string, issue: string, issueTitle: string): Mutant {
  const name = `kube-proxy:${flaw}`;
  return { name, family: 'kube-proxy', flaw, bug, issue, issueTitle, create: (options) => buildKubeProxy('fixed', options, flaw, name) };
}

/** The kube-proxy variants. */
export const KUBE_PROXY_MUTANTS: readonly Mutant[] = [
  /** UDP flows DNATed to an endpoint that went away keep going there: conntrack is not cleared. */
  kubeProxy('stale-udp-conntrack', 'UDP conntrack entries to a removed endpoint are not deleted', 'kubernetes/kubernetes#59368', 'kube-proxy/iptables, UDP conntrack data not removed on endpoint changes'),
  /** UDP service ports get no rules at all. */
  kubeProxy('udp-ignored', 'UDP service ports are not proxied', 'kubernetes/kubernetes#19029', 'iptables kube-proxy could handle UDP backend changes better'),
  /** External traffic to a Local-policy Service is masqueraded: the client source is lost. */
  kubeProxy('local-policy-masquerades', 'externalTrafficPolicy: Local traffic is masqueraded', 'kubernetes/kubernetes#91437', 'Source ip is not preserved even though externalTrafficPolicy is Local'),
  /** External traffic to a Local-policy Service goes to every endpoint, not only the node's. */
  kubeProxy('local-policy-cluster-endpoints', 'externalTrafficPolicy: Local balances over endpoints on other nodes', 'kubernetes/kubernetes#97073', 'kube-proxy ignores source address preservation with external-traffic-policy: Local and externalIP address'),
  /** After a failed restore the next sync is partial, and the changes the failed one consumed are lost. */
  kubeProxy('lost-changes-after-failed-restore', 'a failed iptables-restore loses the changes it carried', 'kubernetes/kubernetes#112604', 'kube-proxy loses track of some changes if iptables-restore fails'),
  /** The change tracker sees Service changes only: on a partial sync, endpoint changes are skipped. */
  kubeProxy('endpoint-changes-ignored', 'endpoint changes of an unchanged Service are not written', 'kubernetes/kubernetes#51445', 'kube-proxy does not update iptables for default/kubernetes Endpoints'),
  /** The jumps from the built-in chains are inserted without `-C` first: every full sync adds more. */
  kubeProxy('duplicate-jumps', 'the jumps from the built-in chains are inserted again at every full sync', 'coreos/kenc#42', 'iptables-restore with no flush leads to duplicate rules'),
  /** Each sync flushes the chains in one restore and refills them in a second: Services are down in between. */
  kubeProxy('flush-before-refill', 'each sync empties the chains before refilling them', 'kubernetes/kubernetes#76376', 'Service access failure during kube-proxy rolling update'),
  /** A failed sync is not retried; only the next change would sync again. */
  kubeProxy('no-retry', 'a failed sync is never retried', 'kubernetes/kubernetes#38140', 'kube-proxy should have retry logic for iptables op failure'),
  /** A delete handler reads a tombstone as the object: a delete missed in a watch gap crashes the proxy. */
  kubeProxy('tombstone-crash', 'a tombstone in a delete handler crashes the proxy', 'd2iq-archive/kubernetes-mesos#705', 'panic in executor/observer: interface conversion: interface is cache.DeletedFinalStateUnknown, not *api.Pod'),
  /** Serving-terminating endpoints are dropped: a Local Service whose only local endpoint is terminating drops traffic. */
  kubeProxy('terminating-endpoints-ignored', 'terminating but still serving endpoints are never used, even when nothing else is left', 'kubernetes/kubernetes#85643', 'Create ability to do zero downtime deployments when using externalTrafficPolicy: Local'),
  /** The endpoint chain forgets the hairpin masquerade: a Pod that reaches itself through its Service gets no reply. */
  kubeProxy('hairpin-not-masqueraded', 'a Pod reaching itself through its Service is not masqueraded', 'kubernetes/kubernetes#20475', "A pod can't direct traffic to itself via a service"),
];
