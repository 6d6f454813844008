/**
 * @netsim/kernel — One Linux host datapath and the links between hosts: interfaces, routes, rp_filter, conntrack, NAT.
 *
 * @packageDocumentation
 */
export { KernelError, isKernelError, type KernelErrorCode, type KernelSourceLocation } from './errors.ts';
export type { AddrScope, Iface, IfaceAddr, IfaceConf, IfaceKind, OverlayConf, OverlayFdbEntry } from './iface.ts';
export {
  DEFAULT_RULES,
  TABLE_DEFAULT,
  TABLE_LOCAL,
  TABLE_MAIN,
  formatRoute,
  formatRule,
  type FibResult,
  type FlowKey,
  type PolicyRule,
  type Route,
  type RouteType,
} from './fib.ts';
export {
  DEFAULT_CT_TIMEOUTS,
  defaultSysctls,
  effectiveRpFilter,
  type ConntrackTimeouts,
  type RpFilterMode,
  type Sysctls,
} from './sysctl.ts';
export {
  ConntrackTable,
  formatCtEntry,
  type CtDir,
  type CtEntry,
  type CtHit,
  type TcpCtState,
  type Tuple,
} from './conntrack.ts';
export type { RandomSource } from './nat.ts';
export type { HostConfig, Listener, RouteSpec } from './hostConfig.ts';
export { Host, parseHostCidr, type HostSnapshot } from './host.ts';
export { runHostCommand } from './ipCommand.ts';
export {
  Network,
  formatConnectResult,
  type ConnectOptions,
  type ConnectResult,
  type ConnectionRef,
  type DropInfo,
  type Endpoint,
  type NetworkOptions,
  type SendDataResult,
  type UdpResult,
} from './network.ts';
export { formatPacketView, type PacketView } from './packet.ts';
export { formatStep, formatTrace, type DropSite, type MatchedRule, type TraceStep } from './trace.ts';
export { conntrackCommand, type CliResult } from './conntrackCli.ts';
export { parseHostFile, type ReadFile } from './hostFile.ts';
export { formatHostTrace, traceHostPacket, type Egress, type HostTraceOptions, type HostTraceResult } from './hostTrace.ts';
export type { CloseResult } from './network.ts';
