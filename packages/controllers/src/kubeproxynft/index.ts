/**
 * kube-proxy in nftables mode as a netsim controller, fixed (kube-proxy's behaviour) and faulty.
 * The faulty proxy's default flaw: after a failed transaction it goes on with partial syncs, as
 * `syncProxyRules` would without the `needFullSync` it sets on every failure (the changes that sync
 * carried are lost) — the iptables proxier's kubernetes/kubernetes#112604 in nftables mode, where
 * it has not been reported. `{ flaw: 'stale-chain-reuse' }` selects the nftables-mode bug
 * kubernetes/kubernetes#122604 instead (see {@link KubeProxyNftFlaw}).
 */
import type { Controller, ControllerContext, JsonObject } from '@netsim/sim';
import { OptionsReader } from '../options.ts';
import { kubeProxyNftDeclaration } from './declaration.ts';
import { NftProxier, type KubeProxyNftFlaw } from './proxier.ts';

export type KubeProxyNftVariant = 'faulty' | 'fixed';

export interface KubeProxyNftOptions {
  /** `--cluster-cidr` (default `198.18.0.0/15`). */
  readonly clusterCidr?: string;
  /** `--nftables-sync-period` in ms (default 30000): the retry delay after a failed sync. */
  readonly syncPeriodMs?: number;
  /** `--nftables-min-sync-period` in ms (default 1000). */
  readonly minSyncPeriodMs?: number;
  /** `--nodeport-addresses`: `all` (default) or `primary` (the node's InternalIP only). */
  readonly nodePortAddresses?: 'all' | 'primary';
  /** The faulty variant's flaw (default `partial-sync-after-failure`); not an option of the fixed one. */
  readonly flaw?: KubeProxyNftFlaw;
}

/**
 * The faulty variant's default flaw: kubernetes/kubernetes#112604's mechanism (an iptables-mode
 * report) in the nftables proxier; `flaw: 'stale-chain-reuse'` is the nftables-mode
 * kubernetes/kubernetes#122604.
 */
export const KUBE_PROXY_NFT_FAULTY_FLAW: KubeProxyNftFlaw = 'partial-sync-after-failure';

/**
 * kube-proxy in nftables mode (controller name `kube-proxy`, table `ip kube-proxy`).
 *
 * @example
 * ```ts
 * const world = new World({ seed: 1, cluster, controller: kubeProxyNft('fixed'), probes: [{ kind: 'nodeport-health', service: 'web', everyMs: 1000 }], invariants: [probesSucceed()] });
 * ```
 */
export function kubeProxyNft(variant: KubeProxyNftVariant, options: JsonObject = {}): Controller<ControllerContext> {
  const label = `kube-proxy-nft:${variant}`;
  const r = new OptionsReader(label, options);
  const clusterCidr = r.cidr('clusterCidr', '198.18.0.0/15');
  const syncPeriodMs = r.int('syncPeriodMs', 30_000, 1, 3_600_000);
  const minSyncPeriodMs = r.int('minSyncPeriodMs', 1000, 0, 3_600_000);
  const nodePortAddresses = r.oneOf('nodePortAddresses', 'all', ['all', 'primary']);
  const flaw = variant === 'faulty' ? r.oneOf<KubeProxyNftFlaw>('flaw', KUBE_PROXY_NFT_FAULTY_FLAW, ['partial-sync-after-failure', 'stale-chain-reuse']) : undefined;
  r.done();
  return {
    name: 'kube-proxy',
    declares: kubeProxyNftDeclaration(syncPeriodMs),
    create: (ctx) => {
      const p = new NftProxier(ctx, { clusterCidr, syncPeriodMs, minSyncPeriodMs, nodePortAddresses, ...(flaw !== undefined ? { flaw } : {}) });
      return { start: () => p.run(), stop: () => p.stop() };
    },
  };
}
