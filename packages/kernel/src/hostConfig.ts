/**
 * A host's configuration as immutable data — interfaces, addresses, routes, rules, sysctls and
 * listening sockets — and the pure reducers that change it the way `ip`, `sysctl` and `listen()`
 * would. The {@link Host} holds one value and replaces it on every change.
 */
import { cidrContains, formatIpv4, type Cidr, type Ipv4 } from '@netsim/netfilter';
import { KernelError } from './errors.ts';
import { DEFAULT_RULES, TABLE_LOCAL, TABLE_MAIN, compileFib, type PolicyRule, type Route } from './fib.ts';
import {
  addIfaceAddr,
  delIfaceAddr,
  validateIfaceName,
  type AddrScope,
  type Iface,
  type IfaceConf,
  type IfaceKind,
  type OverlayConf,
} from './iface.ts';
import { parseSysctlKey, parseSysctlValue, withConfField, type Sysctls, defaultSysctls } from './sysctl.ts';

/** A socket listening for connections (TCP) or datagrams (UDP). `addr` 0 is the wildcard. */
export interface Listener {
  readonly proto: 'tcp' | 'udp';
  readonly addr: Ipv4 | 0;
  readonly port: number;
  /** UDP only: `echo` answers each datagram from the socket (the default), `silent` never answers. */
  readonly udpReply?: 'echo' | 'silent';
}

export interface HostConfig {
  readonly name: string;
  /** In ifindex order; `lo` is first. */
  readonly ifaces: readonly Iface[];
  /** Configured routes (kernel routes are derived from addresses, see `fib.ts`). */
  readonly routes: readonly Route[];
  readonly rules: readonly PolicyRule[];
  readonly sysctls: Sysctls;
  readonly listeners: readonly Listener[];
}

/** A host with only `lo` (127.0.0.1/8, up), the default rules and the kernel's sysctls. */
export function newHostConfig(name: string, sysctls: Sysctls = defaultSysctls()): HostConfig {
  const lo: Iface = {
    name: 'lo',
    index: 1,
    kind: 'loopback',
    up: true,
    addrs: [{ addr: 0x7f000001 as Ipv4, prefix: 8, scope: 'host', secondary: false }],
    conf: sysctls.default,
  };
  return { name, ifaces: [lo], routes: [], rules: DEFAULT_RULES, sysctls, listeners: [] };
}

export function findIface(cfg: HostConfig, name: string): Iface {
  const i = cfg.ifaces.find((x) => x.name === name);
  if (i === undefined) throw new KernelError('not-found', `Cannot find device "${name}"`);
  return i;
}

function replaceIface(cfg: HostConfig, iface: Iface): HostConfig {
  return { ...cfg, ifaces: cfg.ifaces.map((x) => (x.name === iface.name ? iface : x)) };
}

export interface AddIfaceOptions {
  readonly up?: boolean;
  readonly master?: string;
  readonly overlay?: OverlayConf;
}

/** `ip link add NAME type KIND`: the new interface takes its conf from `net.ipv4.conf.default`. */
export function addIface(cfg: HostConfig, name: string, kind: IfaceKind, opts: AddIfaceOptions = {}): HostConfig {
  validateIfaceName(name);
  if (cfg.ifaces.some((x) => x.name === name)) throw new KernelError('config', 'RTNETLINK answers: File exists');
  if (kind === 'loopback') throw new KernelError('config', 'a host has exactly one loopback interface, lo');
  if (kind === 'overlay' && opts.overlay === undefined) throw new KernelError('config', `overlay ${name}: vni and port are required`);
  const index = cfg.ifaces.reduce((m, x) => Math.max(m, x.index), 0) + 1;
  let iface: Iface = { name, index, kind, up: opts.up ?? false, addrs: [], conf: { ...cfg.sysctls.default, forwarding: cfg.sysctls.all.forwarding } };
  if (opts.overlay !== undefined) iface = { ...iface, overlay: opts.overlay };
  let next: HostConfig = { ...cfg, ifaces: [...cfg.ifaces, iface] };
  if (opts.master !== undefined) next = setMaster(next, name, opts.master);
  return next;
}

/** `ip link set NAME master BRIDGE` (`null`: nomaster). */
export function setMaster(cfg: HostConfig, name: string, master: string | null): HostConfig {
  const iface = findIface(cfg, name);
  if (master === null) {
    const { master: _old, ...rest } = iface;
    return replaceIface(cfg, rest);
  }
  const br = findIface(cfg, master);
  if (br.kind !== 'bridge') throw new KernelError('config', `Error: ${master} is not a bridge`);
  if (iface.kind === 'bridge' || iface.kind === 'loopback') throw new KernelError('config', `Error: ${name} cannot be enslaved to a bridge`);
  return replaceIface(cfg, { ...iface, master });
}

/**
 * `ip link set NAME up|down`. Going down removes the configured routes through the interface
 * (the kernel flushes their dead nexthops; they do not come back on up); kernel routes follow the
 * link state on their own.
 */
export function setLinkUp(cfg: HostConfig, name: string, up: boolean): HostConfig {
  const iface = findIface(cfg, name);
  if (iface.kind === 'loopback' && !up) throw new KernelError('config', 'netsim keeps lo up: taking it down is not modelled');
  let next = replaceIface(cfg, { ...iface, up });
  if (!up) next = { ...next, routes: next.routes.filter((r) => r.dev !== name) };
  return next;
}

/** `ip addr add ADDR/PREFIX dev NAME [scope S]`. */
export function addAddr(cfg: HostConfig, name: string, addr: Ipv4, prefix: number, scope: AddrScope = 'global'): HostConfig {
  const iface = findIface(cfg, name);
  return replaceIface(cfg, { ...iface, addrs: addIfaceAddr(iface, addr, prefix, scope) });
}

/** `ip addr del ADDR/PREFIX dev NAME`; routes whose `src` or gateway no longer fits go too. */
export function delAddr(cfg: HostConfig, name: string, addr: Ipv4, prefix: number): HostConfig {
  const iface = findIface(cfg, name);
  const next = replaceIface(cfg, { ...iface, addrs: delIfaceAddr(iface, addr, prefix) });
  // The kernel flushes routes whose preferred source vanished from the host.
  const stillLocal = new Set(next.ifaces.flatMap((i) => i.addrs.map((a) => a.addr as number)));
  return { ...next, routes: next.routes.filter((r) => r.src === undefined || stillLocal.has(r.src)) };
}

/** What `ip route add` takes. */
export interface RouteSpec {
  readonly dst: Cidr;
  readonly type?: Route['type'];
  readonly dev?: string;
  readonly via?: Ipv4;
  readonly src?: Ipv4;
  readonly scope?: AddrScope;
  readonly metric?: number;
  readonly table?: number;
  readonly onlink?: boolean;
  readonly proto?: Route['proto'];
}

/**
 * `ip route add`: validates like the kernel (the device exists and is up, the gateway is on a
 * connected subnet of the device unless `onlink`, `src` is a local address, no duplicate) and
 * fills in the device from the gateway's connected route when only `via` is given.
 */
export function addRoute(cfg: HostConfig, spec: RouteSpec): HostConfig {
  const type = spec.type ?? 'unicast';
  const table = spec.table ?? TABLE_MAIN;
  let dev = spec.dev;
  if (dev !== undefined) {
    const iface = findIface(cfg, dev);
    if (!iface.up && type === 'unicast') throw new KernelError('config', 'Error: Nexthop device is not up.');
  }
  if (type === 'unicast' && spec.via !== undefined && spec.onlink !== true) {
    // fib_check_nh: the gateway must be reachable through a link-scoped route (a connected subnet
    // or a device route), on the given device if one was named.
    const via = spec.via;
    const fib = compileFib(cfg.ifaces, cfg.routes, cfg.rules);
    let best: Route | undefined;
    for (const r of fib.routes) {
      if (r.table !== TABLE_MAIN && r.table !== table) continue;
      if (r.type !== 'unicast' || r.scope === 'global' || r.via !== undefined || !cidrContains(r.dst, via)) continue;
      if (best === undefined || r.dst.prefix > best.dst.prefix) best = r;
    }
    if (best === undefined || (dev !== undefined && best.dev !== dev)) throw new KernelError('config', 'Error: Nexthop has invalid gateway.');
    dev = best.dev;
  }
  if (type === 'unicast' && dev === undefined) throw new KernelError('config', 'Error: Device for nexthop is not up.');
  if (spec.src !== undefined) {
    const src = spec.src;
    if (!cfg.ifaces.some((i) => i.addrs.some((a) => a.addr === src))) {
      throw new KernelError('config', 'Error: Invalid prefsrc address.');
    }
  }
  const scope: AddrScope = spec.scope ?? (type === 'local' ? 'host' : spec.via !== undefined || type !== 'unicast' ? 'global' : 'link');
  const route: Route = {
    table,
    type,
    dst: spec.dst,
    ...(dev !== undefined && type === 'unicast' ? { dev } : spec.dev !== undefined ? { dev: spec.dev } : {}),
    ...(spec.via !== undefined ? { via: spec.via } : {}),
    ...(spec.src !== undefined ? { src: spec.src } : {}),
    scope,
    metric: spec.metric ?? 0,
    proto: spec.proto ?? 'boot',
    onlink: spec.onlink ?? false,
  };
  if (
    cfg.routes.some(
      (r) => r.table === route.table && r.dst.addr === route.dst.addr && r.dst.prefix === route.dst.prefix && r.metric === route.metric,
    )
  ) {
    throw new KernelError('config', 'RTNETLINK answers: File exists');
  }
  return { ...cfg, routes: [...cfg.routes, route] };
}

/** `ip route del DST [table T] [metric M]`: the first configured route that matches. */
export function delRoute(cfg: HostConfig, dst: Cidr, table: number = TABLE_MAIN, metric?: number): HostConfig {
  const i = cfg.routes.findIndex(
    (r) => r.table === table && r.dst.addr === dst.addr && r.dst.prefix === dst.prefix && (metric === undefined || r.metric === metric),
  );
  if (i < 0) throw new KernelError('config', 'RTNETLINK answers: No such process');
  return { ...cfg, routes: cfg.routes.filter((_, j) => j !== i) };
}

/** `ip rule add`. Without a priority the kernel picks one below the lowest non-zero existing rule. */
export function addRule(cfg: HostConfig, rule: Omit<PolicyRule, 'priority'> & { readonly priority?: number }): HostConfig {
  let priority = rule.priority;
  if (priority === undefined) {
    const nonZero = cfg.rules.map((r) => r.priority).filter((p) => p > 0);
    priority = nonZero.length === 0 ? 0 : Math.max(0, Math.min(...nonZero) - 1);
  }
  const full: PolicyRule = { ...rule, priority };
  return { ...cfg, rules: [...cfg.rules, full].sort((a, b) => a.priority - b.priority) };
}

/** `ip rule del priority N`. */
export function delRule(cfg: HostConfig, priority: number): HostConfig {
  const i = cfg.rules.findIndex((r) => r.priority === priority);
  if (i < 0) throw new KernelError('config', 'RTNETLINK answers: No such file or directory');
  return { ...cfg, rules: cfg.rules.filter((_, j) => j !== i) };
}

/** `bridge fdb`-like: the underlay address behind an overlay next hop. */
export function setOverlayPeer(cfg: HostConfig, name: string, nexthop: Ipv4, underlay: Ipv4): HostConfig {
  const iface = findIface(cfg, name);
  if (iface.overlay === undefined) throw new KernelError('config', `${name} is not an overlay device`);
  const fdb = [...iface.overlay.fdb.filter((e) => e.nexthop !== nexthop), { nexthop, underlay }];
  return replaceIface(cfg, { ...iface, overlay: { ...iface.overlay, fdb } });
}

/** `sysctl -w key=value`, with the kernel's propagation rules for `forwarding`. */
export function setSysctl(cfg: HostConfig, key: string, value: string): HostConfig {
  const target = parseSysctlKey(
    key,
    cfg.ifaces.map((i) => i.name),
  );
  const v = parseSysctlValue(target, key, value);
  const s = cfg.sysctls;
  switch (target.kind) {
    case 'ip_forward':
      return setForwardingEverywhere(cfg, v as number);
    case 'local_port_range':
      return { ...cfg, sysctls: { ...s, localPortRange: v as readonly [number, number] } };
    case 'tcp_syn_retries':
      return { ...cfg, sysctls: { ...s, tcpSynRetries: v as number } };
    case 'tcp_loose':
      return { ...cfg, sysctls: { ...s, tcpLoose: v as number } };
    case 'ct':
      return { ...cfg, sysctls: { ...s, ctTimeouts: { ...s.ctTimeouts, [target.field]: v as number } } };
    case 'conf': {
      const n = v as number;
      if (target.scope === 'all') {
        if (target.field === 'forwarding') return setForwardingEverywhere(cfg, n);
        return { ...cfg, sysctls: { ...s, all: withConfField(s.all, target.field, n) } };
      }
      if (target.scope === 'default') return { ...cfg, sysctls: { ...s, default: withConfField(s.default, target.field, n) } };
      const iface = findIface(cfg, target.scope.iface);
      return replaceIface(cfg, { ...iface, conf: withConfField(iface.conf, target.field, n) });
    }
  }
}

function setForwardingEverywhere(cfg: HostConfig, n: number): HostConfig {
  const s = cfg.sysctls;
  const on = (c: IfaceConf): IfaceConf => ({ ...c, forwarding: n });
  return {
    ...cfg,
    sysctls: { ...s, all: on(s.all), default: on(s.default) },
    ifaces: cfg.ifaces.map((i) => ({ ...i, conf: on(i.conf) })),
  };
}

/** `sysctl -n key`: the value as `/proc/sys` prints it. */
export function getSysctl(cfg: HostConfig, key: string): string {
  const target = parseSysctlKey(
    key,
    cfg.ifaces.map((i) => i.name),
  );
  const s = cfg.sysctls;
  switch (target.kind) {
    case 'ip_forward':
      return String(s.all.forwarding);
    case 'local_port_range':
      return `${s.localPortRange[0]}\t${s.localPortRange[1]}`;
    case 'tcp_syn_retries':
      return String(s.tcpSynRetries);
    case 'tcp_loose':
      return String(s.tcpLoose);
    case 'ct':
      return String(s.ctTimeouts[target.field]);
    case 'conf': {
      const conf = target.scope === 'all' ? s.all : target.scope === 'default' ? s.default : findIface(cfg, target.scope.iface).conf;
      return String(conf[target.field]);
    }
  }
}

/** Opens a listening socket; a second listener on the same address and port fails like bind(2). */
export function addListener(cfg: HostConfig, l: Listener): HostConfig {
  const clash = cfg.listeners.some((x) => x.proto === l.proto && x.port === l.port && (x.addr === 0 || l.addr === 0 || x.addr === l.addr));
  if (clash) throw new KernelError('config', `bind ${l.proto} ${l.addr === 0 ? '0.0.0.0' : formatIpv4(l.addr)}:${l.port}: Address already in use`);
  return { ...cfg, listeners: [...cfg.listeners, l] };
}

export function removeListener(cfg: HostConfig, proto: 'tcp' | 'udp', port: number): HostConfig {
  return { ...cfg, listeners: cfg.listeners.filter((x) => !(x.proto === proto && x.port === port)) };
}

/** Every local address of the host, for quick membership tests. */
export function localAddresses(cfg: HostConfig): readonly Ipv4[] {
  return cfg.ifaces.flatMap((i) => i.addrs.map((a) => a.addr));
}

export { TABLE_LOCAL, TABLE_MAIN };
