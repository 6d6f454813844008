/**
 * Network interfaces and their IPv4 addresses, as `ip link` / `ip addr` see them.
 *
 * Address semantics follow the kernel (`inet_insert_ifa`, `inet_del_ifa`): an address whose prefix
 * length and subnet equal those of an address already on the interface becomes *secondary*;
 * deleting a primary also deletes its secondaries (the default `promote_secondaries=0`).
 * Primaries are listed before secondaries, each group in the order added, as `ip addr` prints them.
 */
import { cidrContains, formatIpv4, prefixMask, type Ipv4 } from '@netsim/netfilter';
import { KernelError } from './errors.ts';

/**
 * `loopback` (`lo`), `physical` (a NIC wired to a segment), `veth` (one end of a pair whose other
 * end may sit on another host), `bridge` (a software switch whose ports are enslaved interfaces),
 * `overlay` (a VXLAN-like device carrying packets to other nodes over their underlay addresses).
 */
export type IfaceKind = 'loopback' | 'physical' | 'veth' | 'bridge' | 'overlay';

/** `ip addr` scopes. Only `global` addresses are chosen as the source of routed traffic. */
export type AddrScope = 'global' | 'link' | 'host';

/** Kernel ordering of scopes (`RT_SCOPE_*`): a smaller number is a wider scope. */
export const SCOPE_RANK: { readonly [S in AddrScope]: number } = { global: 0, link: 253, host: 254 };

export interface IfaceAddr {
  readonly addr: Ipv4;
  readonly prefix: number;
  readonly scope: AddrScope;
  /** Set by the kernel when another address on the interface already covers the same subnet. */
  readonly secondary: boolean;
}

/**
 * Per-interface `net.ipv4.conf.<iface>.*` values, stored as the integers written to `/proc/sys`
 * (the kernel keeps `rp_filter=3` or `forwarding=5` as given; readers test for zero or compare).
 */
export interface IfaceConf {
  /** 0 off, 1 strict, any other value loose (the kernel tests `== 1` for strict). */
  readonly rpFilter: number;
  readonly forwarding: number;
  readonly routeLocalnet: number;
  readonly acceptLocal: number;
  /** Non-zero: rp_filter's reverse lookup uses the packet's fwmark. */
  readonly srcValidMark: number;
}

/**
 * A VXLAN-like device. Packets routed out of it are wrapped in UDP to `port` and sent to the
 * underlay address its forwarding database gives for the next hop (flannel programs one entry per
 * remote node). A host receiving UDP on `port` unwraps the packet and receives it on this device.
 */
export interface OverlayConf {
  readonly vni: number;
  /** UDP destination port (flannel uses 8472, the IANA port is 4789). */
  readonly port: number;
  /** The underlay source address (`local`); when absent the underlay route chooses one. */
  readonly local?: Ipv4;
  /** Next hop on the overlay (a remote node's overlay address) → that node's underlay address. */
  readonly fdb: readonly OverlayFdbEntry[];
}

export interface OverlayFdbEntry {
  readonly nexthop: Ipv4;
  readonly underlay: Ipv4;
}

export interface Iface {
  readonly name: string;
  /** ifindex: creation order, `lo` is 1. */
  readonly index: number;
  readonly kind: IfaceKind;
  readonly up: boolean;
  readonly addrs: readonly IfaceAddr[];
  /** The bridge this interface is a port of (`ip link set X master br0`). */
  readonly master?: string;
  readonly overlay?: OverlayConf;
  readonly conf: IfaceConf;
}

const IFNAMSIZ = 16;

/** Checks an interface name the way `ip link` does (at most 15 bytes, no `/`, `:` or spaces). */
export function validateIfaceName(name: string): void {
  if (name.length === 0 || name.length >= IFNAMSIZ || /[\s/:]/.test(name) || name === '.' || name === '..') {
    throw new KernelError('config', `Error: argument "${name}" is wrong: "dev" not a valid ifname`);
  }
}

/**
 * The address list after `ip addr add addr/prefix dev iface`: the secondary flag is decided here,
 * and the kernel's refusals are reproduced (same local address twice, scope mismatch in a subnet).
 */
export function addIfaceAddr(iface: Iface, addr: Ipv4, prefix: number, scope: AddrScope = 'global'): readonly IfaceAddr[] {
  const mask = prefixMask(prefix);
  let secondary = false;
  for (const a of iface.addrs) {
    if (a.prefix === prefix && ((a.addr & mask) >>> 0) === ((addr & mask) >>> 0)) {
      if (a.addr === addr) throw new KernelError('config', 'Error: ipv4: Address already assigned.');
      if (a.scope !== scope) throw new KernelError('config', 'Error: ipv4: Invalid scope value.');
      secondary = true;
    }
  }
  const added: IfaceAddr = { addr, prefix, scope, secondary };
  if (secondary) return [...iface.addrs, added];
  // A new primary goes after the last primary, before the secondaries.
  const primaries = iface.addrs.filter((a) => !a.secondary);
  const secondaries = iface.addrs.filter((a) => a.secondary);
  return [...primaries, added, ...secondaries];
}

/**
 * The address list after `ip addr del addr/prefix dev iface`. Deleting a primary deletes the
 * secondaries in its subnet, as the kernel does with `promote_secondaries=0`.
 */
export function delIfaceAddr(iface: Iface, addr: Ipv4, prefix: number): readonly IfaceAddr[] {
  const target = iface.addrs.find((a) => a.addr === addr && a.prefix === prefix);
  if (target === undefined) {
    throw new KernelError('config', 'Error: ipv4: Address not found.');
  }
  if (target.secondary) return iface.addrs.filter((a) => a !== target);
  const mask = prefixMask(prefix);
  const net = (addr & mask) >>> 0;
  return iface.addrs.filter(
    (a) => a !== target && !(a.secondary && a.prefix === prefix && ((a.addr & mask) >>> 0) === net),
  );
}

/** The primary address whose subnet holds `addr`, for a secondary's `src` (kernel `inet_ifa_byprefix`). */
export function primaryFor(iface: Iface, a: IfaceAddr): IfaceAddr {
  if (!a.secondary) return a;
  const mask = prefixMask(a.prefix);
  for (const p of iface.addrs) {
    if (!p.secondary && p.prefix === a.prefix && ((p.addr & mask) >>> 0) === ((a.addr & mask) >>> 0)) return p;
  }
  return a;
}

/** Whether `addr` lies in the subnet of interface address `a`. */
export function addrInSubnet(a: IfaceAddr, addr: Ipv4 | number): boolean {
  return cidrContains({ addr: ((a.addr & prefixMask(a.prefix)) >>> 0) as Ipv4, prefix: a.prefix }, addr);
}

/** `198.51.100.1/24` */
export function formatIfaceAddr(a: IfaceAddr): string {
  return `${formatIpv4(a.addr)}/${a.prefix}`;
}
