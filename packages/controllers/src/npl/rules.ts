/**
 * The datapath side of NodePortLocal: the `ANTREA-NODE-PORT-LOCAL` chain, the jumps to it and
 * one DNAT rule per mapping, written through the node's `iptables` handle the way Antrea's
 * `rules/iptable_rule.go` does it with its go-iptables wrapper:
 *
 * - `EnsureChain` is `-S chain 1` (does it exist?) then `-N`;
 * - `AppendRule` is `-C` then `-A` when missing;
 * - `DeleteRule` is `-C` then `-D` when present (so it is idempotent);
 * - the restart path writes the whole chain with one `iptables-restore --noflush`, whose
 *   `:ANTREA-NODE-PORT-LOCAL - [0:0]` line flushes the chain in the same commit.
 */
import type { IptablesHandle } from '@netsim/sim';
import { NPL_CHAIN, type PodNodePort } from './types.ts';

/** The rule spec of the jumps from PREROUTING and OUTPUT. */
export const NPL_JUMP_SPEC: readonly string[] = ['-p', 'all', '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', NPL_CHAIN];

/** `-p tcp -m tcp --dport 61000 -j DNAT --to-destination 198.18.0.5:8080` (no comment, as Antrea writes it). */
export function buildRuleForPod(nodePort: number, podAddr: string, protocol: string): string[] {
  return ['-p', protocol, '-m', protocol, '--dport', String(nodePort), '-j', 'DNAT', '--to-destination', podAddr];
}

/** What the port table needs from the datapath (Antrea's `rules.PodPortRules`). */
export interface PodPortRules {
  /** Create the chain and the jumps to it. */
  init(): Promise<void>;
  addRule(nodePort: number, podIP: string, podPort: number, protocol: string): Promise<void>;
  deleteRule(nodePort: number, podIP: string, podPort: number, protocol: string): Promise<void>;
  /** Replace the chain's content with exactly these mappings, atomically. */
  addAllRules(mappings: readonly PodNodePort[]): Promise<void>;
}

/** {@link PodPortRules} on iptables. */
export class IptablesPodPortRules implements PodPortRules {
  readonly #ipt: IptablesHandle;

  constructor(ipt: IptablesHandle) {
    this.#ipt = ipt;
  }

  async init(): Promise<void> {
    if (!(await this.#ipt.chainExists('nat', NPL_CHAIN))) await this.#ipt.newChain('nat', NPL_CHAIN);
    // Appended after a check, so kube-proxy's own jumps (inserted at the top) stay above these.
    await this.#ipt.appendUnique('nat', 'PREROUTING', ...NPL_JUMP_SPEC);
    await this.#ipt.appendUnique('nat', 'OUTPUT', ...NPL_JUMP_SPEC);
  }

  async addRule(nodePort: number, podIP: string, podPort: number, protocol: string): Promise<void> {
    await this.#ipt.appendUnique('nat', NPL_CHAIN, ...buildRuleForPod(nodePort, `${podIP}:${podPort}`, protocol));
  }

  async deleteRule(nodePort: number, podIP: string, podPort: number, protocol: string): Promise<void> {
    await this.#ipt.deleteIfExists('nat', NPL_CHAIN, ...buildRuleForPod(nodePort, `${podIP}:${podPort}`, protocol));
  }

  async addAllRules(mappings: readonly PodNodePort[]): Promise<void> {
    const lines = ['*nat', `:${NPL_CHAIN} - [0:0]`];
    for (const m of mappings) lines.push(['-A', NPL_CHAIN, ...buildRuleForPod(m.nodePort, `${m.podIP}:${m.podPort}`, m.protocol)].join(' '));
    lines.push('COMMIT', '');
    await this.#ipt.restore(lines.join('\n'), { noflush: true });
  }
}
