/**
 * IPv4 addresses as unsigned 32-bit integers, and CIDR helpers. Shared by every layer.
 */
import type { Cidr, Ipv4 } from './types.ts';

/** Brands a number as an address after checking it is a uint32. */
export function ipv4(n: number): Ipv4 {
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) {
    throw new RangeError(`ipv4: ${n} is not an unsigned 32-bit integer`);
  }
  return n as Ipv4;
}

/** Parses dotted quad `a.b.c.d` strictly (no leading `+`, no empty parts); `undefined` if invalid. */
export function tryParseIpv4(text: string): Ipv4 | undefined {
  // Hand-rolled (no split, no regex): hot in parsing large dumps.
  const len = text.length;
  let n = 0;
  let part = 0;
  let digits = 0;
  let parts = 0;
  for (let i = 0; i <= len; i++) {
    const c = i < len ? text.charCodeAt(i) : 46; /* . */
    if (c === 46) {
      if (digits === 0 || part > 255) return undefined;
      n = n * 256 + part;
      parts++;
      part = 0;
      digits = 0;
      continue;
    }
    if (c < 48 || c > 57 || digits === 3) return undefined;
    part = part * 10 + (c - 48);
    digits++;
  }
  return parts === 4 ? (n as Ipv4) : undefined;
}

/** Parses dotted quad or throws a RangeError naming the input. */
export function parseIpv4(text: string): Ipv4 {
  const a = tryParseIpv4(text);
  if (a === undefined) throw new RangeError(`invalid IPv4 address "${text}"`);
  return a;
}

export function formatIpv4(a: Ipv4 | number): string {
  return `${(a >>> 24) & 255}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}`;
}

/** The netmask of a prefix length as uint32 (`/0` is 0). */
export function prefixMask(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

export function cidr(addr: Ipv4 | number, prefix: number): Cidr {
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > 32) {
    throw new RangeError(`cidr: prefix ${prefix} is not in 0..32`);
  }
  return { addr: ((addr & prefixMask(prefix)) >>> 0) as Ipv4, prefix };
}

/** Parses `a.b.c.d[/n]`; a bare address is `/32`. Returns undefined when invalid. */
export function tryParseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const addr = tryParseIpv4(slash < 0 ? text : text.slice(0, slash));
  if (addr === undefined) return undefined;
  if (slash < 0) return { addr, prefix: 32 };
  const p = text.slice(slash + 1);
  if (!/^[0-9]{1,2}$/.test(p)) return undefined;
  const prefix = Number(p);
  if (prefix > 32) return undefined;
  return cidr(addr, prefix);
}

export function parseCidr(text: string): Cidr {
  const c = tryParseCidr(text);
  if (c === undefined) throw new RangeError(`invalid IPv4 CIDR "${text}"`);
  return c;
}

/** `addr/prefix` always with the prefix, as iptables-save prints (`/32` for hosts). */
export function formatCidr(c: Cidr): string {
  return `${formatIpv4(c.addr)}/${c.prefix}`;
}

export function cidrContains(c: Cidr, a: Ipv4 | number): boolean {
  return ((a & prefixMask(c.prefix)) >>> 0) === c.addr;
}
