/**
 * @netsim/kernel — one Linux host's datapath and the wires between hosts: interfaces and
 * addresses, routing with policy rules, sysctls, rp_filter, conntrack with NAT, the netfilter
 * hooks in the kernel's order, a host's TCP/UDP stack, and exchanges played across a network.
 *
 * Start with {@link Network}: add hosts, configure them with `ip`/`sysctl` commands
 * (`Host.run`), give them rulesets (`Host.setRuleset`), wire them, and `connect`. See
 * docs/datapath.md.
 *
 * @example
 * const net = new Network({ rng });
 * net.addHost('client').run('ip link add eth0 type veth', 'ip link set eth0 up', 'ip addr add 192.0.2.10/24 dev eth0');
 * net.addHost('server').run('ip link add eth0 type veth', 'ip link set eth0 up', 'ip addr add 192.0.2.20/24 dev eth0', 'listen tcp 80');
 * net.wire('client/eth0', 'server/eth0');
 * net.connect('client', '192.0.2.20', 80, { nowMs: 0 }).kind; // 'established'
 *
 * @packageDocumentation
 */

// The network and its exchanges.
export {
  Network,
  formatConnectResult,
  type CloseResult,
  type ConnectOptions,
  type ConnectResult,
  type ConnectionRef,
  type DropInfo,
  type Endpoint,
  type NetworkOptions,
  type SendDataResult,
  type UdpResult,
} from './network.ts';
export type { RandomSource } from './nat.ts';

// One host.
export { Host, parseHostCidr, type ConntrackMode, type HostSnapshot } from './host.ts';
export { runHostCommand } from './ipCommand.ts';
export type { HostConfig, Listener, RouteSpec } from './hostConfig.ts';
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

// Conntrack.
export { ConntrackTable, formatCtEntry, type CtDir, type CtEntry, type CtHit, type TcpCtState, type Tuple } from './conntrack.ts';
export { rulesetNeedsConntrack } from './conntrackNeed.ts';
export { conntrackCommand, type CliResult } from './conntrackCli.ts';

// Traces.
export { formatStep, formatTrace, type DropSite, type MatchedRule, type TraceStep } from './trace.ts';
export { formatPacketView, type PacketView } from './packet.ts';

// One packet through one host (`netsim trace --host`).
export { parseHostFile, type ReadFile } from './hostFile.ts';
export { formatHostTrace, traceHostPacket, type Egress, type HostPacket, type HostTraceOptions, type HostTraceResult } from './hostTrace.ts';

// Errors.
export { KernelError, isKernelError, type KernelErrorCode, type KernelSourceLocation } from './errors.ts';
