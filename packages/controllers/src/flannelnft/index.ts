/**
 * flannel's nftables masquerade manager as a netsim controller (`flanneld`): `faulty` deletes its
 * table on SIGTERM as flannel's nftables mode does; `fixed` leaves it for the next flanneld.
 */
import type { Controller, ControllerContext, ControllerDeclaration, JsonObject } from '@netsim/sim';
import { OptionsReader } from '../options.ts';
import { DEFAULT_RESYNC_MS, runFlanneld } from '../flannel/manager.ts';
import { FLANNEL_NFT_POSTRTG, FLANNEL_NFT_TABLE, NftablesManager } from './manager.ts';

export type FlannelNftVariant = 'faulty' | 'fixed';

/** flanneld's declaration in nftables mode. */
export function flannelNftDeclaration(resyncMs: number): ControllerDeclaration {
  return {
    // A base chain on postrouting that holds a masquerade rule once programmed.
    ownedNftChains: [{ family: 'ip', table: FLANNEL_NFT_TABLE, chain: FLANNEL_NFT_POSTRTG, hook: 'postrouting', requiredStatement: 'masquerade' }],
    maxBackoffMs: resyncMs,
    provides: ['pod-egress-masquerade'],
  };
}

/**
 * flanneld in nftables mode (controller name `flanneld`).
 *
 * @example
 * ```ts
 * const world = new World({ seed: 1, cluster, controller: flannelNft('fixed'), probes: [{ kind: 'pod-egress', everyMs: 500 }], invariants: [probesSucceed()] });
 * ```
 */
export function flannelNft(variant: FlannelNftVariant, options: JsonObject = {}): Controller<ControllerContext> {
  const r = new OptionsReader(`flannel-nft:${variant}`, options);
  const clusterCidr = r.cidr('clusterCidr', '198.18.0.0/15');
  const resyncMs = r.int('resyncMs', DEFAULT_RESYNC_MS, 1, 3_600_000);
  r.done();
  return {
    name: 'flanneld',
    declares: flannelNftDeclaration(resyncMs),
    create: (ctx) => {
      const mgr = new NftablesManager(ctx, { teardownOnShutdown: variant === 'faulty', clusterCidr });
      return { start: () => runFlanneld(ctx, mgr, { clusterCidr, resyncMs }), stop: () => mgr.shutdown() };
    },
  };
}
