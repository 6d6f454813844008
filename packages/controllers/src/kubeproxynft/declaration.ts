/**
 * What kube-proxy (nftables mode) declares about itself for the controller-agnostic invariants:
 * it proxies Services, and a failed sync is retried after `--nftables-sync-period`.
 */
import type { ControllerDeclaration } from '@netsim/sim';

/** kube-proxy's nftables-mode declaration for a given `--nftables-sync-period`. */
export function kubeProxyNftDeclaration(syncPeriodMs: number): ControllerDeclaration {
  return {
    maxBackoffMs: syncPeriodMs,
    provides: ['service-proxy'],
  };
}
