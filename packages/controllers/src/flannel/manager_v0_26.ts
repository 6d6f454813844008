/**
 * flannel v0.25.0 – v0.26.x's iptables traffic manager: the **faulty** lifecycle.
 *
 * - `Init` arms a goroutine that waits for the context to end (SIGTERM), sleeps one second, then
 *   deletes every rule the manager recorded, in one restore: `FLANNEL-POSTRTG` is left empty and
 *   the POSTROUTING jump is gone, so Pods' new outbound connections leave un-masqueraded until
 *   the next flanneld has started and re-bootstrapped.
 * - `SetupAndEnsureMasqRules` creates the chain *or flushes it* (`-N`, else `-F`), then a goroutine
 *   bootstraps the rules in one restore and ensures them every resync period.
 */
import { isIptablesError, type ControllerContext } from '@netsim/sim';
import { errorMessage } from '../errors.ts';
import { ensureIPTables, ipTablesBootstrap, teardownIPTables } from './iptables.ts';
import { ensureLoop, type MasqSetup, type TrafficManager } from './manager.ts';
import { MASQ_CHAIN, masqRules, type IptablesRule } from './rules.ts';

/** How long the clean-up goroutine sleeps after the context ends. */
export const TEARDOWN_DELAY_MS = 1000;

export class IptablesManagerV026 implements TrafficManager {
  readonly release = 'v0.26.5';
  readonly #ctx: ControllerContext;
  /** Every rule set up so far (`iptm.ipv4Rules`): what the teardown deletes. */
  readonly #ipv4Rules: IptablesRule[] = [];

  constructor(ctx: ControllerContext) {
    this.#ctx = ctx;
  }

  init(): Promise<void> {
    // The teardown goroutine is the SIGTERM handler below (`shutdown`).
    return Promise.resolve();
  }

  async shutdown(): Promise<void> {
    await this.#ctx.sleep(TEARDOWN_DELAY_MS);
    await this.#cleanUp();
  }

  async #cleanUp(): Promise<void> {
    if (this.#ipv4Rules.length === 0) return;
    this.#ctx.log.info('iptables (ipv4): cleaning-up before exiting flannel...');
    try {
      await teardownIPTables(this.#ctx.iptables, this.#ipv4Rules);
    } catch (e) {
      if (!isIptablesError(e)) throw e;
      this.#ctx.log.error('Failed to tear down IPTables', { error: e.message });
    }
  }

  async setupAndEnsureMasqRules(setup: MasqSetup): Promise<void> {
    await this.#createIP4Chain('nat', MASQ_CHAIN);
    const rules = masqRules(setup.clusterCidr, setup.podCidr);
    this.#ctx.go('setupAndEnsureIP4Tables', () => this.#setupAndEnsureIP4Tables(rules, setup.resyncMs));
  }

  /** `CreateIP4Chain`: go-iptables' ClearChain, which flushes a chain that exists. */
  async #createIP4Chain(table: string, chain: string): Promise<void> {
    try {
      await this.#ctx.iptables.clearChain(table, chain);
    } catch (e) {
      if (!isIptablesError(e)) throw e;
      this.#ctx.log.error('Failed to setup IPTables. Error on creating the chain', { error: e.message });
    }
  }

  async #setupAndEnsureIP4Tables(rules: readonly IptablesRule[], resyncMs: number): Promise<void> {
    const ipt = this.#ctx.iptables;
    try {
      await ipTablesBootstrap(ipt, rules);
      this.#ctx.log.info('bootstrap done');
    } catch (e) {
      if (!isIptablesError(e)) throw e;
      this.#ctx.log.error('Failed to bootstrap IPTables', { error: e.message });
    }
    this.#ipv4Rules.push(...rules);
    await ensureLoop(this.#ctx, resyncMs, async () => {
      try {
        if (await ensureIPTables(ipt, rules)) this.#ctx.log.info('Some iptables rules are missing; deleting and recreating rules');
      } catch (e) {
        if (!isIptablesError(e)) throw e;
        this.#ctx.log.error('Failed to ensure iptables rules', { error: errorMessage(e) });
      }
    });
  }
}
