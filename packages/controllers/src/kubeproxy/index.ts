/**
 * kube-proxy (iptables mode) as a netsim controller, in a fixed variant (kube-proxy's rules) and
 * a faulty one (an unguarded jump that makes every restore fail on nodes without local endpoints
 * for a Local Service).
 */
import type { Controller, ControllerContext, JsonObject } from '@netsim/sim';
import { OptionsReader } from '../options.ts';
import { writeExternalChain, writeExternalChainUnguarded } from './externalChain.ts';
import { kubeProxyDeclaration } from './declaration.ts';
import { writeExternalChainMasqueradingLocal, type KubeProxyFlaw } from './flaws.ts';
import { Proxier } from './proxier.ts';

export type KubeProxyVariant = 'faulty' | 'fixed';

export interface KubeProxyOptions {
  /** `--cluster-cidr` (default `198.18.0.0/15`). */
  readonly clusterCidr?: string;
  /** `--iptables-sync-period` in ms (default 30000). */
  readonly syncPeriodMs?: number;
  /** `--iptables-min-sync-period` in ms (default 1000). */
  readonly minSyncPeriodMs?: number;
  /**
   * `--nodeport-addresses`: `all` (default, the flag unset: NodePorts on every local address) or
   * `primary` (only on the node's primary IP, its InternalIP).
   */
  readonly nodePortAddresses?: 'all' | 'primary';
}

/**
 * kube-proxy in iptables mode (controller name `kube-proxy`).
 *
 * @example
 * ```ts
 * const world = new World({ seed: 1, cluster, controller: kubeProxy('fixed'), probes: [{ kind: 'nodeport-health', service: 'web', everyMs: 1000 }], invariants: [probesSucceed()] });
 * ```
 */
export function kubeProxy(variant: KubeProxyVariant, options: JsonObject = {}): Controller<ControllerContext> {
  return buildKubeProxy(variant, options, undefined, `kube-proxy:${variant}`);
}

/**
 * kube-proxy with one flaw switched on (the mutation suite's builder; not part of the package's
 * exports; flaws apply to the fixed proxy). `label` names the controller in option errors.
 */
export function buildKubeProxy(variant: KubeProxyVariant, options: JsonObject, flaw: KubeProxyFlaw | undefined, label: string): Controller<ControllerContext> {
  const r = new OptionsReader(label, options);
  const clusterCidr = r.cidr('clusterCidr', '198.18.0.0/15');
  const syncPeriodMs = r.int('syncPeriodMs', 30_000, 1, 3_600_000);
  const minSyncPeriodMs = r.int('minSyncPeriodMs', 1000, 0, 3_600_000);
  const nodePortAddresses = r.oneOf('nodePortAddresses', 'all', ['all', 'primary']);
  r.done();
  return {
    name: 'kube-proxy',
    declares: kubeProxyDeclaration(syncPeriodMs),
    create: (ctx) => {
      const writer = variant === 'faulty' ? writeExternalChainUnguarded : flaw === 'local-policy-masquerades' ? writeExternalChainMasqueradingLocal : writeExternalChain;
      const p = new Proxier(ctx, { clusterCidr, syncPeriodMs, minSyncPeriodMs, nodePortAddresses, writeExternalChain: writer, ...(flaw !== undefined ? { flaw } : {}) });
      return { start: () => p.run(), stop: () => p.stop() };
    },
  };
}
