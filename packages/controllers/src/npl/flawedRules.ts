/**
 * The datapath flaws of the mutation suite's NodePortLocal variants, as a subclass of the
 * reference rules so that the reference class keeps no trace of them.
 */
import type { IptablesHandle } from '@netsim/sim';
import type { NplFlaw } from './flaws.ts';
import { IptablesPodPortRules, NPL_JUMP_SPEC, buildRuleForPod } from './rules.ts';
import { NPL_CHAIN, type PodNodePort } from './types.ts';

/** {@link IptablesPodPortRules} with `duplicate-jumps` or `flush-before-refill`. */
export class FlawedPodPortRules extends IptablesPodPortRules {
  readonly #ipt: IptablesHandle;
  readonly #flaw: NplFlaw;

  constructor(ipt: IptablesHandle, flaw: NplFlaw) {
    super(ipt);
    this.#ipt = ipt;
    this.#flaw = flaw;
  }

  override async init(): Promise<void> {
    if (this.#flaw !== 'duplicate-jumps') return super.init();
    // The jumps are appended without the check: every restart adds another pair.
    if (!(await this.#ipt.chainExists('nat', NPL_CHAIN))) await this.#ipt.newChain('nat', NPL_CHAIN);
    await this.#ipt.append('nat', 'PREROUTING', ...NPL_JUMP_SPEC);
    await this.#ipt.append('nat', 'OUTPUT', ...NPL_JUMP_SPEC);
  }

  override async addAllRules(mappings: readonly PodNodePort[]): Promise<void> {
    if (this.#flaw !== 'flush-before-refill') return super.addAllRules(mappings);
    // Flush, then one append per mapping: the chain is empty, then partial, in between.
    await this.#ipt.clearChain('nat', NPL_CHAIN);
    for (const m of mappings) await this.#ipt.append('nat', NPL_CHAIN, ...buildRuleForPod(m.nodePort, `${m.podIP}:${m.podPort}`, m.protocol));
  }
}
