/**
 * What kube-proxy (nftables mode) declares about itself for the controller-agnostic invariants:
 * the chains of table `ip kube-proxy` that hold rules whatever the Services are (its NAT base
 * chains on their hooks, the `services` dispatch chain they jump to, the masquerade pair), that
 * it proxies Services, and that a failed sync is retried after `--nftables-sync-period`. The
 * per-Service chains come and go with the Services; the filter helpers are empty while every
 * Service has endpoints.
 */
import type { ControllerDeclaration, OwnedNftChain } from '@netsim/sim';
import { KUBE_PROXY_TABLE, MARK_MASQ_CHAIN, MASQUERADING_CHAIN, SERVICES_CHAIN } from './names.ts';

const owned = (chain: string, more: Omit<OwnedNftChain, 'family' | 'table' | 'chain'>): OwnedNftChain => ({ family: 'ip', table: KUBE_PROXY_TABLE, chain, ...more });

/** kube-proxy's owned chains in table `ip kube-proxy`. */
export const KUBE_PROXY_NFT_OWNED_CHAINS: readonly OwnedNftChain[] = [
  owned('nat-prerouting', { hook: 'prerouting' }),
  owned('nat-output', { hook: 'output' }),
  owned('nat-postrouting', { hook: 'postrouting' }),
  owned(SERVICES_CHAIN, { jumpedFrom: ['nat-prerouting', 'nat-output'] }),
  owned(MASQUERADING_CHAIN, { jumpedFrom: ['nat-postrouting'], requiredStatement: 'masquerade' }),
  owned(MARK_MASQ_CHAIN, { requiredStatement: 'mark' }),
];

/** kube-proxy's nftables-mode declaration for a given `--nftables-sync-period`. */
export function kubeProxyNftDeclaration(syncPeriodMs: number): ControllerDeclaration {
  return {
    ownedNftChains: KUBE_PROXY_NFT_OWNED_CHAINS,
    maxBackoffMs: syncPeriodMs,
    provides: ['service-proxy'],
  };
}
