/**
 * The flannel masquerade manager as a netsim controller (`flanneld`), in v0.26's faulty lifecycle
 * and v0.27's fixed one. The rules and their plumbing are shared; only the lifecycle differs.
 */
import type { Controller, ControllerContext, JsonObject } from '@netsim/sim';
import { OptionsReader } from '../options.ts';
import { DEFAULT_RESYNC_MS, runFlanneld, type TrafficManager } from './manager.ts';
import { flannelDeclaration } from './declaration.ts';
import type { FlannelFlaw } from './flaws.ts';
import { IptablesManagerV026 } from './manager_v0_26.ts';
import { IptablesManagerV027, type ChainSetup } from './manager_v0_27.ts';

/** `faulty`: flannel v0.26's lifecycle. `fixed`: v0.27's. */
export type FlannelVariant = 'faulty' | 'fixed';

export interface FlannelOptions {
  /** The cluster network (default `198.18.0.0/15`, the simulated API server's cluster CIDR). */
  readonly clusterCidr?: string;
  /** `--iptables-resync` in ms (default 5000). */
  readonly resyncMs?: number;
  /** Fixed variant only: `ensure` (default) or `clear` (v0.27.0's create-or-flush at start). */
  readonly chainSetup?: ChainSetup;
}

/**
 * The flannel masquerade manager (controller name `flanneld`).
 *
 * @example
 * ```ts
 * const world = new World({ seed: 1, cluster, controller: flannel('faulty'), invariants: [chainNeverEmpty({ chain: MASQ_CHAIN })] });
 * ```
 */
export function flannel(variant: FlannelVariant, options: JsonObject = {}): Controller<ControllerContext> {
  return buildFlannel(variant, options, undefined, `flannel:${variant}`);
}

/**
 * flanneld with one flaw switched on (the mutation suite's builder; not part of the package's
 * exports; flaws apply to the fixed lifecycle). `label` names the controller in option errors.
 */
export function buildFlannel(variant: FlannelVariant, options: JsonObject, flaw: FlannelFlaw | undefined, label: string): Controller<ControllerContext> {
  const r = new OptionsReader(label, options);
  const clusterCidr = r.cidr('clusterCidr', '198.18.0.0/15');
  const resyncMs = r.int('resyncMs', DEFAULT_RESYNC_MS, 1, 3_600_000);
  const chainSetup = variant === 'fixed' ? r.oneOf<ChainSetup>('chainSetup', 'ensure', ['ensure', 'clear']) : 'clear';
  r.done();
  return {
    name: 'flanneld',
    declares: flannelDeclaration(resyncMs),
    create: (ctx) => {
      const mgr: TrafficManager = variant === 'faulty' ? new IptablesManagerV026(ctx) : new IptablesManagerV027(ctx, chainSetup, flaw);
      return { start: () => runFlanneld(ctx, mgr, { clusterCidr, resyncMs }), stop: () => mgr.shutdown() };
    },
  };
}
