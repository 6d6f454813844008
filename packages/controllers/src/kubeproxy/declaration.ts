/**
 * What kube-proxy declares about itself for the controller-agnostic invariants: the chains that
 * hold rules whatever the Services are (the per-Service chains come and go with them, and the
 * filter chains that only hold REJECT/DROP rules for Services without endpoints are empty while
 * every Service has some), with the jumps from the built-in chains a full sync ensures, and the
 * longest retry delay: a failed sync is retried after `--iptables-sync-period`.
 */
import type { ControllerDeclaration } from '@netsim/sim';
import { KUBE_FIREWALL, KUBE_FORWARD, KUBE_MARK_MASQ, KUBE_POSTROUTING, KUBE_SERVICES } from './proxier.ts';

/** kube-proxy's declaration for a given `--iptables-sync-period`. */
export function kubeProxyDeclaration(syncPeriodMs: number): ControllerDeclaration {
  return {
    ownedChains: [
      // Its last rule is always the jump to KUBE-NODEPORTS.
      { table: 'nat', chain: KUBE_SERVICES, hookedFrom: ['PREROUTING', 'OUTPUT'] },
      { table: 'nat', chain: KUBE_POSTROUTING, hookedFrom: ['POSTROUTING'], requiredTarget: 'MASQUERADE' },
      { table: 'nat', chain: KUBE_MARK_MASQ, requiredTarget: 'MARK' },
      { table: 'filter', chain: KUBE_FORWARD, hookedFrom: ['FORWARD'], requiredTarget: 'ACCEPT' },
      { table: 'filter', chain: KUBE_FIREWALL, hookedFrom: ['INPUT', 'OUTPUT'], requiredTarget: 'DROP' },
    ],
    maxBackoffMs: syncPeriodMs,
    // ClusterIP and NodePort Services, both external traffic policies, TCP and UDP.
    provides: ['service-proxy'],
  };
}
