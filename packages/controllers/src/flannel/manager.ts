/**
 * What flanneld's main needs from its traffic manager, and the flanneld process itself: read the
 * node's subnet lease (the Node's `spec.podCIDR`, as the kube subnet manager does), then set up
 * and keep ensuring the masquerade rules. The lifecycle around that — what happens on SIGTERM and
 * at start — is the manager's, and is where flannel v0.26 and v0.27 differ.
 */
import type { ControllerContext } from '@netsim/sim';
import { masqRules } from './rules.ts';

/** flanneld's `--iptables-resync` default, in ms. */
export const DEFAULT_RESYNC_MS = 5000;

export interface MasqSetup {
  readonly clusterCidr: string;
  readonly podCidr: string;
  readonly resyncMs: number;
}

/** A flannel iptables traffic manager release. */
export interface TrafficManager {
  /** The flannel release this lifecycle comes from. */
  readonly release: string;
  /** Start-up before the lease (v0.27: clean-up; v0.26: arm the SIGTERM teardown). */
  init(): Promise<void>;
  /** Create the chain, bootstrap the rules and start the ensure loop. */
  setupAndEnsureMasqRules(setup: MasqSetup): Promise<void>;
  /** What runs between SIGTERM and the process exit. */
  shutdown(): Promise<void>;
}

/** The flanneld process: lease, then masquerade rules. */
export async function runFlanneld(ctx: ControllerContext, mgr: TrafficManager, opts: { readonly clusterCidr: string; readonly resyncMs: number }): Promise<void> {
  await mgr.init();
  // The kube subnet manager's lease is the Node's Pod CIDR.
  const node = await ctx.kube.get('Node', '', ctx.node);
  const podCidr = node.spec.podCIDR;
  if (podCidr === undefined || podCidr === '') throw new Error(`node "${ctx.node}" pod cidr not assigned`);
  ctx.log.info('Setting up masking rules', { clusterCidr: opts.clusterCidr, podCidr, rules: masqRules(opts.clusterCidr, podCidr).length });
  await mgr.setupAndEnsureMasqRules({ clusterCidr: opts.clusterCidr, podCidr, resyncMs: opts.resyncMs });
}

/** The ensure loop: every `resyncMs` after setup, re-bootstrap if any rule is missing, until SIGTERM. */
export async function ensureLoop(ctx: ControllerContext, resyncMs: number, ensure: () => Promise<void>): Promise<void> {
  for (;;) {
    await ctx.sleep(resyncMs);
    if (ctx.stopping) return;
    await ensure();
  }
}
