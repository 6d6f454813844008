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
export { BUILTIN_CHAINS, HOOKS, TABLE_NAMES } from './types.ts';
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
export { compile, type CompileOptions, type CompiledRuleset } from './compile.ts';
export { evaluateHook, evaluateTable, HOOK_TABLES, MAX_CHAIN_LEVEL, rewriteToRangeStart } from './evaluate.ts';
export { createEvalState, probabilityThreshold31, seededRandom31, STATISTIC_SCALE } from './statistic.ts';
export { ipsetLookup, type IpSetLookup } from './ipset.ts';
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
export { emptyRuleset, emptyTable, isBuiltinChain, isTableName } from './ruleset.ts';
export { NetfilterError, isNetfilterError, type NetfilterErrorCode, type SourceLocation } from './errors.ts';
