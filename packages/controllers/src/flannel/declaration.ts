/**
 * What flanneld declares about itself for the controller-agnostic invariants: the masquerade
 * chain it owns, hooked from POSTROUTING and holding a MASQUERADE rule once programmed, and its
 * longest retry delay, which is the ensure loop's period (a failed bootstrap or ensure is only
 * tried again at the next resync).
 */
import type { ControllerDeclaration } from '@netsim/sim';
import { MASQ_CHAIN } from './rules.ts';

/** flanneld's declaration for a given `--iptables-resync` period. */
export function flannelDeclaration(resyncMs: number): ControllerDeclaration {
  return {
    ownedChains: [{ table: 'nat', chain: MASQ_CHAIN, hookedFrom: ['POSTROUTING'], requiredTarget: 'MASQUERADE' }],
    maxBackoffMs: resyncMs,
    // Pod egress leaving the cluster network is masqueraded, Pod-to-Pod traffic is not.
    provides: ['pod-egress-masquerade'],
  };
}
