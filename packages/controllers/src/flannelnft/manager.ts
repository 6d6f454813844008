/**
 * flannel's nftables traffic manager (`pkg/trafficmngr/nftables`, flannel >= 0.25 with
 * `EnableNFTables`): table `ip flannel-ipv4`, a `forward` base chain (filter, priority filter)
 * accepting the cluster network both ways, and a `postrtg` base chain (nat postrouting, priority
 * srcnat) with the masquerade rules. Each chain is written in one transaction that adds, flushes
 * and refills it, so setting up never leaves a window.
 *
 * As released, a goroutine armed at start deletes the whole table when the context ends
 * (SIGTERM): until the next flanneld has started, Pods' new outbound connections leave
 * un-masqueraded, the same window flannel v0.26's iptables manager opened. The fixed variant
 * leaves the table in place on shutdown, as flannel v0.27 does for iptables.
 */
import { isNftExecError, type ControllerContext } from '@netsim/sim';
import { errorMessage } from '../errors.ts';
import type { MasqSetup, TrafficManager } from '../flannel/manager.ts';

export const FLANNEL_NFT_TABLE = 'flannel-ipv4';
export const FLANNEL_NFT_POSTRTG = 'postrtg';
export const FLANNEL_NFT_FORWARD = 'forward';

const T = `ip ${FLANNEL_NFT_TABLE}`;

/** The `postrtg` rules, in flannel's order (kube-proxy's mark first, then the RETURNs, then the masquerades). */
export function nftMasqRules(clusterCidr: string, podCidr: string): string[] {
  const masquerade = 'masquerade fully-random';
  return [
    // Traffic kube-proxy marked is masqueraded by kube-proxy: not twice.
    'meta mark 0x4000 return',
    `ip saddr ${podCidr} ip daddr ${clusterCidr} return`,
    `ip saddr ${clusterCidr} ip daddr ${podCidr} return`,
    `ip saddr != ${podCidr} ip daddr ${clusterCidr} return`,
    `ip saddr ${clusterCidr} ip daddr != 224.0.0.0/4 ${masquerade}`,
    `ip saddr != ${clusterCidr} ip daddr ${clusterCidr} ${masquerade}`,
  ];
}

export class NftablesManager implements TrafficManager {
  readonly release: string;
  readonly #ctx: ControllerContext;
  readonly #teardownOnShutdown: boolean;
  #clusterCidr = '';

  constructor(ctx: ControllerContext, opts: { readonly teardownOnShutdown: boolean; readonly clusterCidr: string }) {
    this.#ctx = ctx;
    this.#teardownOnShutdown = opts.teardownOnShutdown;
    this.#clusterCidr = opts.clusterCidr;
    this.release = opts.teardownOnShutdown ? 'v0.26.7 (nftables)' : 'v0.26.7 (nftables), no teardown';
  }

  /** `initTable`: the table, with its comment; a failure ends flanneld. */
  async init(): Promise<void> {
    this.#ctx.log.info('Starting flannel in nftables mode...');
    await this.#ctx.nft.apply(`add table ${T} { comment "rules for ${FLANNEL_NFT_TABLE}" ; }\n`);
  }

  async setupAndEnsureMasqRules(setup: MasqSetup): Promise<void> {
    await this.#setupForwardRules();
    this.#ctx.log.info('nftables: setting up masking rules (ipv4)');
    const lines = [
      `add chain ${T} ${FLANNEL_NFT_POSTRTG} { type nat hook postrouting priority srcnat ; comment "chain to manage traffic masquerading by flannel" ; }`,
      `flush chain ${T} ${FLANNEL_NFT_POSTRTG}`,
      ...nftMasqRules(setup.clusterCidr, setup.podCidr).map((r) => `add rule ${T} ${FLANNEL_NFT_POSTRTG} ${r}`),
    ];
    await this.#ctx.nft.apply(`${lines.join('\n')}\n`);
  }

  /** `SetupAndEnsureForwardRules`: a failure is logged, not fatal. */
  async #setupForwardRules(): Promise<void> {
    this.#ctx.log.info('Changing default FORWARD chain policy to ACCEPT');
    const lines = [
      `add chain ${T} ${FLANNEL_NFT_FORWARD} { type filter hook forward priority filter ; comment "chain to accept flannel traffic" ; }`,
      `flush chain ${T} ${FLANNEL_NFT_FORWARD}`,
      `add rule ${T} ${FLANNEL_NFT_FORWARD} ip saddr ${this.#clusterCidr} accept`,
      `add rule ${T} ${FLANNEL_NFT_FORWARD} ip daddr ${this.#clusterCidr} accept`,
    ];
    try {
      await this.#ctx.nft.apply(`${lines.join('\n')}\n`);
    } catch (e) {
      if (!isNftExecError(e)) throw e;
      this.#ctx.log.error("nftables: couldn't setup forward rules", { error: errorMessage(e) });
    }
  }

  async shutdown(): Promise<void> {
    if (!this.#teardownOnShutdown) return;
    this.#ctx.log.info('Cleaning-up flannel tables...');
    try {
      await this.#ctx.nft.apply(`delete table ${T}\n`);
    } catch (e) {
      if (!isNftExecError(e)) throw e;
      this.#ctx.log.error('nftables: error while cleaning-up', { error: errorMessage(e) });
    }
  }
}
