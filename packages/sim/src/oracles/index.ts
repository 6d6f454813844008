/**
 * The built-in, controller-agnostic invariants: defined from the world (Pods, Services, the
 * nodes' kernels) and from what each controller declares about itself. Each counts what it
 * examined, so a run can tell an invariant that held from one that had nothing to look at.
 */
import type { InvariantSource } from '../invariants.ts';
import { agentsStayLive, AGENTS_LIVE } from './liveness.ts';
import { noDuplicateRulesAnywhere, NO_DUPLICATE_RULES } from './duplicates.ts';
import { publishedMappingsServed, MAPPINGS_SERVED } from './mappings.ts';
import { datapathProbes, DATAPATH_PROBES } from './probes.ts';
import { ownedChainsStayProgrammed, OWNED_CHAINS } from './ownedChains.ts';
import { resyncChangesNothing, RESYNC_FIXPOINT } from './fixpoint.ts';
import { staleDnatAnywhere, NO_STALE_DNAT } from './staleDnat.ts';

export { agentsStayLive, AGENTS_LIVE } from './liveness.ts';
export { isCounting, type CountingInvariant } from './counting.ts';
export { noDuplicateRulesAnywhere, NO_DUPLICATE_RULES } from './duplicates.ts';
export { publishedMappingsServed, MAPPINGS_SERVED } from './mappings.ts';
export { datapathProbes, isProbing, DATAPATH_PROBES, type ProbeWorld, type ProbingInvariant } from './probes.ts';
export { ownedChainsStayProgrammed, OWNED_CHAINS } from './ownedChains.ts';
export { resyncChangesNothing, RESYNC_FIXPOINT } from './fixpoint.ts';
export { staleDnatAnywhere, NO_STALE_DNAT } from './staleDnat.ts';
export { reachableChains } from './reachable.ts';

/** The names of the built-in invariants, safety first, liveness last. */
export const BUILTIN_INVARIANT_NAMES: readonly string[] = [NO_STALE_DNAT, NO_DUPLICATE_RULES, OWNED_CHAINS, MAPPINGS_SERVED, DATAPATH_PROBES, AGENTS_LIVE, RESYNC_FIXPOINT];

/**
 * Every built-in invariant, safety first and liveness last (VOPR's order).
 *
 * @example
 * ```ts
 * const report = await runScenario(scenario, { controllers, invariants: builtinInvariants() });
 * ```
 */
export function builtinInvariants(opts: { readonly settleMs?: number } = {}): InvariantSource[] {
  const s = opts.settleMs !== undefined ? { settleMs: opts.settleMs } : {};
  return [staleDnatAnywhere(s), noDuplicateRulesAnywhere(s), ownedChainsStayProgrammed(), publishedMappingsServed(s), datapathProbes(s), agentsStayLive(s), resyncChangesNothing(s)];
}
