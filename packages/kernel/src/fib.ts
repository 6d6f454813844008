/**
 * Routing: tables of routes, policy rules (`ip rule`), longest-prefix lookup, and source address
 * selection, following `fib_frontend.c`, `fib_rules.c` and `devinet.c`.
 *
 * - Kernel routes are derived from addresses (`fib_add_ifaddr`): every address gets a `local`
 *   route in table `local` (whatever the link state); an *up* interface's primary addresses get
 *   their connected subnet in `main` and the subnet broadcast in `local`, all with `src` = primary.
 * - Rules are walked by priority; each names a table; a table miss or a `throw` route continues
 *   with the next rule. The defaults are `0: lookup local`, `32766: lookup main`,
 *   `32767: lookup default`.
 * - Within a table the longest prefix wins, then the lowest metric, then the route added first.
 */
import { cidrContains, formatIpv4, prefixMask, type AddrType, type Cidr, type Ipv4 } from '@netsim/netfilter';
import { SCOPE_RANK, addrInSubnet, primaryFor, type AddrScope, type Iface } from './iface.ts';

export const TABLE_LOCAL = 255;
export const TABLE_MAIN = 254;
export const TABLE_DEFAULT = 253;

export type RouteType = 'unicast' | 'local' | 'broadcast' | 'blackhole' | 'unreachable' | 'prohibit' | 'throw';

export interface Route {
  readonly table: number;
  readonly type: RouteType;
  readonly dst: Cidr;
  readonly dev?: string;
  readonly via?: Ipv4;
  /** Preferred source (`src`), used for locally generated packets. */
  readonly src?: Ipv4;
  /** `global` (the kernel's universe), `link` or `host`. */
  readonly scope: AddrScope;
  readonly metric: number;
  readonly proto: 'kernel' | 'boot' | 'static';
  readonly onlink: boolean;
}

/** One `ip rule`. Absent selectors match everything. */
export interface PolicyRule {
  readonly priority: number;
  readonly from?: Cidr;
  readonly to?: Cidr;
  readonly fwmark?: { readonly value: number; readonly mask: number };
  /** `iif`: the incoming interface; locally generated packets have `lo`. */
  readonly iif?: string;
  readonly oif?: string;
  readonly not?: boolean;
  readonly table: number;
}

export const DEFAULT_RULES: readonly PolicyRule[] = [
  { priority: 0, table: TABLE_LOCAL },
  { priority: 32766, table: TABLE_MAIN },
  { priority: 32767, table: TABLE_DEFAULT },
];

/** What a lookup keys on (`struct flowi4`). `src` 0 means "any". */
export interface FlowKey {
  readonly dst: Ipv4;
  readonly src: Ipv4 | 0;
  /** Incoming interface; `lo` for locally generated packets. */
  readonly iif: string;
  /** Outgoing interface constraint (`SO_BINDTODEVICE`), or null. */
  readonly oif: string | null;
  readonly mark: number;
}

export type FibResult =
  | {
      readonly kind: 'route';
      readonly route: Route;
      readonly rulePriority: number;
      /** The next hop: the gateway, or the destination itself for on-link routes. */
      readonly nexthop: Ipv4;
    }
  | {
      /** `unreachable`/`blackhole`/`prohibit` routes, or no route at all (`none`). */
      readonly kind: 'error';
      readonly error: 'unreachable' | 'blackhole' | 'prohibit' | 'none';
      readonly route?: Route;
    };

interface CompiledTable {
  /** Distinct prefix lengths present, longest first. */
  readonly prefixes: number[];
  /** prefix length → masked address → routes ordered by metric, then insertion. */
  readonly byPrefix: Map<number, Map<number, Route[]>>;
}

/** A host's routing state compiled for lookups. Build with {@link compileFib}. */
export interface Fib {
  readonly tables: ReadonlyMap<number, CompiledTable>;
  readonly rules: readonly PolicyRule[];
  /** Every route, kernel-derived and configured, for display (`ip route show table all`). */
  readonly routes: readonly Route[];
  readonly ifaces: ReadonlyMap<string, Iface>;
  /** Local addresses → interface holding them (first one by ifindex). */
  readonly localAddrs: ReadonlyMap<number, Iface>;
  /** Subnet broadcast addresses of up interfaces. */
  readonly broadcastAddrs: ReadonlySet<number>;
}

/** The kernel-derived routes for one interface (`fib_add_ifaddr`). */
export function kernelRoutes(iface: Iface): Route[] {
  const out: Route[] = [];
  for (const a of iface.addrs) {
    const prim = primaryFor(iface, a);
    out.push({
      table: TABLE_LOCAL,
      type: 'local',
      dst: { addr: a.addr, prefix: 32 },
      dev: iface.name,
      src: prim.addr,
      scope: 'host',
      metric: 0,
      proto: 'kernel',
      onlink: false,
    });
    if (!iface.up || a.secondary) continue;
    const mask = prefixMask(a.prefix);
    const net = ((a.addr & mask) >>> 0) as Ipv4;
    // A /32 has no connected route (`prefix != addr || prefixlen < 32` in fib_add_ifaddr).
    if (a.prefix < 32) {
      out.push({
        table: iface.kind === 'loopback' ? TABLE_LOCAL : TABLE_MAIN,
        type: iface.kind === 'loopback' ? 'local' : 'unicast',
        dst: { addr: net, prefix: a.prefix },
        dev: iface.name,
        src: a.addr,
        scope: iface.kind === 'loopback' ? 'host' : 'link',
        metric: 0,
        proto: 'kernel',
        onlink: false,
      });
    }
    if (a.prefix < 31) {
      out.push({
        table: TABLE_LOCAL,
        type: 'broadcast',
        dst: { addr: ((net | ~mask) >>> 0) as Ipv4, prefix: 32 },
        dev: iface.name,
        src: a.addr,
        scope: 'link',
        metric: 0,
        proto: 'kernel',
        onlink: false,
      });
    }
  }
  return out;
}

/**
 * Compiles interfaces, configured routes and rules into a {@link Fib}. Routes through an
 * interface that is down are left out (the kernel deletes them when the link goes down).
 */
export function compileFib(ifaces: readonly Iface[], routes: readonly Route[], rules: readonly PolicyRule[]): Fib {
  const all: Route[] = [];
  const byName = new Map<string, Iface>();
  const localAddrs = new Map<number, Iface>();
  const broadcastAddrs = new Set<number>();
  for (const i of ifaces) {
    byName.set(i.name, i);
    for (const r of kernelRoutes(i)) {
      all.push(r);
      if (r.type === 'broadcast') broadcastAddrs.add(r.dst.addr);
    }
    for (const a of i.addrs) if (!localAddrs.has(a.addr)) localAddrs.set(a.addr, i);
  }
  for (const r of routes) {
    if (r.dev !== undefined && byName.get(r.dev)?.up !== true) continue;
    all.push(r);
  }
  const tables = new Map<number, CompiledTable>();
  for (const r of all) {
    let t = tables.get(r.table);
    if (t === undefined) {
      t = { prefixes: [], byPrefix: new Map() };
      tables.set(r.table, t);
    }
    let m = t.byPrefix.get(r.dst.prefix);
    if (m === undefined) {
      m = new Map();
      t.byPrefix.set(r.dst.prefix, m);
      t.prefixes.push(r.dst.prefix);
    }
    const list = m.get(r.dst.addr);
    if (list === undefined) m.set(r.dst.addr, [r]);
    else {
      // Stable: equal metrics keep insertion order.
      let i = list.length;
      while (i > 0 && (list[i - 1]?.metric ?? 0) > r.metric) i--;
      list.splice(i, 0, r);
    }
  }
  for (const t of tables.values()) t.prefixes.sort((a, b) => b - a);
  const sortedRules = [...rules].sort((a, b) => a.priority - b.priority);
  return { tables, rules: sortedRules, routes: all, ifaces: byName, localAddrs, broadcastAddrs };
}

function ruleMatches(rule: PolicyRule, flow: FlowKey): boolean {
  let m = true;
  if (rule.from !== undefined && !cidrContains(rule.from, flow.src)) m = false;
  else if (rule.to !== undefined && !cidrContains(rule.to, flow.dst)) m = false;
  else if (rule.fwmark !== undefined && ((flow.mark & rule.fwmark.mask) >>> 0) !== rule.fwmark.value) m = false;
  else if (rule.iif !== undefined && rule.iif !== flow.iif) m = false;
  else if (rule.oif !== undefined && rule.oif !== flow.oif) m = false;
  return rule.not === true ? !m : m;
}

function tableLookup(t: CompiledTable, flow: FlowKey): Route | undefined {
  for (const p of t.prefixes) {
    const list = t.byPrefix.get(p)?.get((flow.dst & prefixMask(p)) >>> 0);
    if (list === undefined) continue;
    for (const r of list) {
      if (flow.oif !== null && r.dev !== undefined && r.dev !== flow.oif && r.type === 'unicast') continue;
      return r;
    }
  }
  return undefined;
}

/** `fib_lookup`: the policy rules in order, then longest prefix in the rule's table. */
export function fibLookup(fib: Fib, flow: FlowKey): FibResult {
  for (const rule of fib.rules) {
    if (!ruleMatches(rule, flow)) continue;
    const t = fib.tables.get(rule.table);
    if (t === undefined) continue;
    const r = tableLookup(t, flow);
    if (r === undefined || r.type === 'throw') continue;
    switch (r.type) {
      case 'unreachable':
      case 'blackhole':
      case 'prohibit':
        return { kind: 'error', error: r.type, route: r };
      case 'unicast':
      case 'local':
      case 'broadcast':
        return { kind: 'route', route: r, rulePriority: rule.priority, nexthop: r.via ?? flow.dst };
    }
  }
  return { kind: 'error', error: 'none' };
}

/**
 * `inet_select_addr(dev, dst, scope)`: a primary address of `dev` whose scope is within `scope`,
 * preferring one whose subnet holds `dst`; when `dev` has none, the first suitable primary of
 * any other interface in ifindex order (never link-scoped ones). 0 when nothing qualifies.
 */
export function selectSourceAddr(fib: Fib, dev: string | undefined, dst: Ipv4 | 0, scope: AddrScope): Ipv4 | 0 {
  const limit = SCOPE_RANK[scope];
  const iface = dev === undefined ? undefined : fib.ifaces.get(dev);
  if (iface !== undefined) {
    let first: Ipv4 | 0 = 0;
    for (const a of iface.addrs) {
      if (a.secondary || SCOPE_RANK[a.scope] > limit) continue;
      if (dst === 0 || addrInSubnet(a, dst)) return a.addr;
      if (first === 0) first = a.addr;
    }
    if (first !== 0) return first;
  }
  for (const other of fib.ifaces.values()) {
    for (const a of other.addrs) {
      if (a.secondary || a.scope === 'link' || SCOPE_RANK[a.scope] > limit) continue;
      return a.addr;
    }
  }
  return 0;
}

/**
 * The source address a locally generated packet gets from its route: the route's `src`, else
 * `inet_select_addr` on the route's device toward the next hop.
 */
export function routeSource(fib: Fib, r: FibResult & { kind: 'route' }): Ipv4 | 0 {
  if (r.route.src !== undefined) return r.route.src;
  return selectSourceAddr(fib, r.route.dev, r.route.via ?? 0, r.route.scope === 'host' ? 'host' : r.route.scope);
}

const ROUTE_ADDR_TYPE: { readonly [T in RouteType]: AddrType } = {
  unicast: 'UNICAST',
  local: 'LOCAL',
  broadcast: 'BROADCAST',
  blackhole: 'BLACKHOLE',
  unreachable: 'UNREACHABLE',
  prohibit: 'PROHIBIT',
  throw: 'THROW',
};

/**
 * How `addrtype` classifies an address on this host (`inet_dev_addr_type`): `0.0.0.0/8` and
 * `255.255.255.255` are BROADCAST, `224.0.0.0/4` MULTICAST, anything else the type of its route
 * in table `local` (LOCAL for the host's addresses and `127.0.0.0/8`, BROADCAST for its subnet
 * broadcasts), UNICAST when table `local` has none. With `dev` (`--limit-iface-in/out`) a route
 * on another device does not count: another interface's address or subnet broadcast is UNICAST.
 */
export function addrTypeOf(fib: Fib, addr: number, dev: string | null = null): AddrType {
  if (addr >>> 24 === 0 || addr === 0xffffffff) return 'BROADCAST';
  if (addr >>> 28 === 14) return 'MULTICAST';
  const local = fib.tables.get(TABLE_LOCAL);
  const r = local === undefined ? undefined : tableLookup(local, { dst: addr as Ipv4, src: 0, iif: 'lo', oif: null, mark: 0 });
  if (r === undefined) return 'UNICAST';
  if (dev !== null && r.dev !== dev) return 'UNICAST';
  return ROUTE_ADDR_TYPE[r.type];
}

function scopeText(r: Route): string {
  if (r.scope === 'global') return '';
  return ` scope ${r.scope}`;
}

const TABLE_NAMES: { readonly [id: number]: string } = { 255: 'local', 254: 'main', 253: 'default' };

/** One line as `ip route show table all` prints it. */
export function formatRoute(r: Route): string {
  const parts: string[] = [];
  if (r.type !== 'unicast') parts.push(r.type);
  parts.push(r.dst.prefix === 0 && r.dst.addr === 0 ? 'default' : r.dst.prefix === 32 ? formatIpv4(r.dst.addr) : `${formatIpv4(r.dst.addr)}/${r.dst.prefix}`);
  if (r.via !== undefined) parts.push(`via ${formatIpv4(r.via)}`);
  if (r.dev !== undefined) parts.push(`dev ${r.dev}`);
  if (r.table !== TABLE_MAIN) parts.push(`table ${TABLE_NAMES[r.table] ?? String(r.table)}`);
  if (r.proto !== 'boot') parts.push(`proto ${r.proto}`);
  let s = parts.join(' ') + scopeText(r);
  if (r.src !== undefined) s += ` src ${formatIpv4(r.src)}`;
  if (r.metric !== 0) s += ` metric ${r.metric}`;
  if (r.onlink) s += ' onlink';
  return s;
}

/** One line as `ip rule` prints it. */
export function formatRule(rule: PolicyRule): string {
  const sel: string[] = [];
  if (rule.not === true) sel.push('not');
  sel.push(rule.from === undefined ? 'from all' : `from ${rule.from.prefix === 32 ? formatIpv4(rule.from.addr) : `${formatIpv4(rule.from.addr)}/${rule.from.prefix}`}`);
  if (rule.to !== undefined) sel.push(`to ${rule.to.prefix === 32 ? formatIpv4(rule.to.addr) : `${formatIpv4(rule.to.addr)}/${rule.to.prefix}`}`);
  if (rule.fwmark !== undefined) {
    sel.push(rule.fwmark.mask === 0xffffffff ? `fwmark 0x${rule.fwmark.value.toString(16)}` : `fwmark 0x${rule.fwmark.value.toString(16)}/0x${rule.fwmark.mask.toString(16)}`);
  }
  if (rule.iif !== undefined) sel.push(`iif ${rule.iif}`);
  if (rule.oif !== undefined) sel.push(`oif ${rule.oif}`);
  return `${rule.priority}:\t${sel.join(' ')} lookup ${TABLE_NAMES[rule.table] ?? String(rule.table)}`;
}
