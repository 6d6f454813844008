/**
 * @netsim/nftables — nftables rulesets as data: the `nft -f` transaction language (parse, apply
 * whole or not at all, the kernel's commit checks), `nft list` output byte for byte, and packet
 * evaluation through base chains. IPv4 only (`ip` and `inet` families).
 *
 * @packageDocumentation
 */
export type * from './types.ts';
export { DEFAULT_NFT_VERSION, emptyRuleset } from './types.ts';
export { NftError, isNftError, type Diagnostic, type NftErrorCode, type Span } from './errors.ts';
export { nftApply, tryNftApply, type ApplyOptions, type ApplyResult } from './transaction.ts';
export { formatRuleset, formatTable, formatChainListing, formatRule, formatPriority, type ListOptions } from './listing.ts';
export { diffRulesets, formatRulesetDiff, type RulesetChange } from './diff.ts';
export { withCounters, pruneCounts } from './counters.ts';
export {
  baseChainsAt,
  createNftEvalState,
  evaluateBaseChain,
  evaluateHook,
  formatNftPacket,
  formatNftTrace,
  hookSchedule,
  iptablesPriority,
  type CtStateName,
  type HookStep,
  type IptablesTableName,
  type NftBaseChainRef,
  type NftChainResult,
  type NftConntrackView,
  type NftCount,
  type NftEvalContext,
  type NftEvalState,
  type NftHookResult,
  type NftNatRequest,
  type NftPacket,
  type NftTraceEntry,
  type NftVerdictKind,
} from './evaluate.ts';
