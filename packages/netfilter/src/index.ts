/**
 * @netsim/netfilter — iptables rules as data: tables, chains, matches and targets; the
 * `iptables-save`/`iptables-restore` text; `iptables` argv semantics; chain evaluation.
 *
 * @packageDocumentation
 */
export type {
  AddrMatch,
  AddrType,
  AddrTypeSel,
  Chain,
  Cidr,
  Counters,
  CtState,
  Hook,
  IfaceMatch,
  IpSet,
  Ipv4,
  Match,
  MatchKind,
  NatRange,
  Negatable,
  Policy,
  PortMatch,
  PortRange,
  ProtoMatch,
  RecentMatch,
  RejectWith,
  Rule,
  Ruleset,
  Table,
  TableName,
  Target,
  TargetKind,
  TcpFlag,
  TcpFlagsMatch,
} from './types.ts';
export { BUILTIN_CHAINS, HOOKS, REJECT_ICMP_CODE, TABLE_NAMES } from './types.ts';
export type {
  ConntrackView,
  EvalContext,
  EvalOptions,
  EvalResult,
  EvalState,
  EvalTraceEntry,
  HookEvalOptions,
  NatRequest,
  Packet,
  RuleOutcome,
  RuleRef,
  UnknownPolicy,
  Verdict,
} from './evalTypes.ts';
export { makePacket, type PacketInit } from './packet.ts';
export { formatNatRange } from './targets.ts';
export { compile, type CompileOptions, type CompiledRuleset } from './compile.ts';
export { evaluateHook, evaluateTable, HOOK_TABLES, MAX_CHAIN_LEVEL, rewriteToRangeStart, unknownModuleOf } from './evaluate.ts';
export { createEvalState, probabilityThreshold31, seededRandom31, splitmix32, STATISTIC_SCALE } from './statistic.ts';
export { ipsetLookup, type IpSetLookup } from './ipset.ts';
export { createRecentLists, formatRecentProc, jiffiesAt, RECENT_HZ, recentListNames, writeRecentProc, type RecentLists } from './xt/recent.ts';
export {
  cidr,
  cidrContains,
  formatCidr,
  formatIpv4,
  ipv4,
  parseCidr,
  parseIpv4,
  prefixMask,
  tryParseCidr,
  tryParseIpv4,
} from './ip.ts';
export { emptyRuleset, emptyTable, freshRuleset, isBuiltinChain, isTableName } from './ruleset.ts';
export { NetfilterError, isNetfilterError, type NetfilterErrorCode, type SourceLocation } from './errors.ts';
export { parseSave, formatSave, writeSave, SAVE_TABLE_ORDER, type ParseSaveOptions, type FormatSaveOptions } from './save.ts';
export { restore, tryRestore, type RestoreOptions, type RestoreFailure } from './restore.ts';
export { formatCanonical, formatCanonicalBytes, type FormatCanonicalOptions } from './canonicalFmt.ts';
export { exec, type ExecOptions, type ExecResult } from './exec.ts';
export { parseRuleSpec, formatRuleSpec, ruleSpecWords, ruleKey, type ParseRuleSpecOptions } from './ruleSpec.ts';
export { listTable, listRules, type ListOptions, type ListRulesOptions } from './listing.ts';
export { splitRestoreLine, quoteSaveString, type LineWords } from './tokenize.ts';
export { DEFAULT_IPTABLES_VERSION, type IptablesVersion } from './failure.ts';
export { diff, formatDiff, type RulesetChange } from './diff.ts';
export { allBranches, formatProbability, hookBranches, probability, sumProbabilities, type AllBranchesOptions, type Branch, type BranchDraw, type BranchDrawSource, type Probability } from './allBranches.ts';
