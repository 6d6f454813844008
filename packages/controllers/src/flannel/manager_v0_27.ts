/**
 * flannel v0.27's iptables traffic manager: the **fixed** lifecycle.
 *
 * - Nothing is torn down on SIGTERM: the rules stay in the kernel while flanneld is away.
 * - Clean-up moved to start-up. On start the chain is *ensured* (created if missing, never
 *   flushed), and the bootstrap writes the whole chain in one `iptables-restore --noflush` whose
 *   `:FLANNEL-POSTRTG` line replaces its content in the same commit: stale rules (an old subnet,
 *   duplicates) vanish, and the chain is never empty in between.
 *
 * flannel v0.27.0 itself still creates-or-flushes the chain at start (`CreateIP4Chain`) before its
 * bootstrap restore: a window of a few milliseconds instead of v0.26's whole restart. The
 * `chainSetup: 'clear'` option reproduces exactly that; the default (`'ensure'`) is the lifecycle
 * the fix aims for.
 */
import { isIptablesError, type ControllerContext } from '@netsim/sim';
import { errorMessage } from '../errors.ts';
import { flawedMasqRules, type FlannelFlaw } from './flaws.ts';
import { ensureIPTables } from './iptables.ts';
import { buildRestorePayload, type RestoreRules } from './iptablesRestore.ts';
import { ensureLoop, type MasqSetup, type TrafficManager } from './manager.ts';
import { MASQ_CHAIN, masqRules, type IptablesRule } from './rules.ts';

/** How the chain is prepared at start: `ensure` (no flush) or `clear` (v0.27.0's create-or-flush). */
export type ChainSetup = 'ensure' | 'clear';

/** The start-up transaction: the chain replaced whole, the POSTROUTING jump deleted (if present) and re-appended. */
export async function atomicBootstrap(ctx: ControllerContext, rules: readonly IptablesRule[], flaw?: FlannelFlaw): Promise<void> {
  const ipt = ctx.iptables;
  const lines: string[][] = [];
  const chainRules = rules.filter((r) => r.chain === MASQ_CHAIN);
  for (const r of rules) {
    if (r.chain === MASQ_CHAIN) continue;
    // The flaw appends the jump without deleting the one a previous process left.
    if (flaw !== 'duplicate-jump-on-restart' && (await ipt.exists(r.table, r.chain, ...r.rulespec))) lines.push(['-D', r.chain, ...r.rulespec]);
    lines.push([r.action, r.chain, ...r.rulespec]);
  }
  for (const r of chainRules) lines.push([r.action, r.chain, ...r.rulespec]);
  const tables: RestoreRules = new Map([['nat', lines]]);
  // The chain line goes right after `*nat`: it creates or flushes the chain inside the transaction.
  const payload = buildRestorePayload(tables).replace('*nat\n', `*nat\n:${MASQ_CHAIN} - [0:0]\n`);
  await ipt.restore(payload, { noflush: true });
}

export class IptablesManagerV027 implements TrafficManager {
  readonly release = 'v0.27.0';
  readonly #ctx: ControllerContext;
  readonly #chainSetup: ChainSetup;
  readonly #flaw: FlannelFlaw | undefined;

  /** `flaw`: mutation suite only, the one bug this manager carries. */
  constructor(ctx: ControllerContext, chainSetup: ChainSetup, flaw?: FlannelFlaw) {
    this.#ctx = ctx;
    this.#chainSetup = chainSetup;
    this.#flaw = flaw;
  }

  init(): Promise<void> {
    // v0.27 cleans the *other* traffic manager's rules (nftables) here; netsim models iptables only.
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    // No teardown: the rules must outlive the process.
    return Promise.resolve();
  }

  async setupAndEnsureMasqRules(setup: MasqSetup): Promise<void> {
    const ipt = this.#ctx.iptables;
    try {
      if (this.#chainSetup === 'clear' || this.#flaw === 'flush-before-refill') await ipt.clearChain('nat', MASQ_CHAIN);
      else if (!(await ipt.chainExists('nat', MASQ_CHAIN))) await ipt.newChain('nat', MASQ_CHAIN);
    } catch (e) {
      if (!isIptablesError(e)) throw e;
      this.#ctx.log.error('Failed to setup IPTables. Error on creating the chain', { error: e.message });
    }
    const flaw = this.#flaw;
    const rules = flawedMasqRules(masqRules(setup.clusterCidr, setup.podCidr), setup.podCidr, setup.clusterCidr, flaw);
    this.#ctx.go('setupAndEnsureIP4Tables', async () => {
      try {
        await atomicBootstrap(this.#ctx, rules, flaw);
        this.#ctx.log.info('bootstrap done');
      } catch (e) {
        if (!isIptablesError(e)) throw e;
        this.#ctx.log.error('Failed to bootstrap IPTables', { error: e.message });
        // The flaw gives up: no ensure loop ever repairs what the failed bootstrap did not write.
        if (flaw === 'bootstrap-not-retried') return;
      }
      await ensureLoop(this.#ctx, setup.resyncMs, async () => {
        try {
          if (flaw === 'resync-flushes-chain') {
            // Every resync rewrites everything, starting from an empty chain.
            await ipt.clearChain('nat', MASQ_CHAIN);
            await atomicBootstrap(this.#ctx, rules, flaw);
            return;
          }
          if (await ensureIPTables(ipt, rules)) this.#ctx.log.info('Some iptables rules are missing; deleting and recreating rules');
        } catch (e) {
          if (!isIptablesError(e)) throw e;
          this.#ctx.log.error('Failed to ensure iptables rules', { error: errorMessage(e) });
        }
      });
    });
  }
}
