/**
 * The few IPv4 helpers kube needs for IPAM and validation. Kube knows nothing of packets and
 * imports no other netsim package, so it carries its own small parser.
 */

/** An IPv4 address as an unsigned 32-bit integer. */
export type Ipv4Num = number;

export interface Cidr4 {
  /** The network address (host bits cleared). */
  readonly base: Ipv4Num;
  readonly prefix: number;
}

const OCTET = /^(0|[1-9][0-9]{0,2})$/;

export function tryParseIpv4(s: string): Ipv4Num | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const p of parts) {
    if (!OCTET.test(p)) return undefined;
    const v = Number(p);
    if (v > 255) return undefined;
    n = n * 256 + v;
  }
  return n;
}

export function formatIpv4(n: Ipv4Num): string {
  return `${Math.floor(n / 16777216) % 256}.${Math.floor(n / 65536) % 256}.${Math.floor(n / 256) % 256}.${n % 256}`;
}

export function tryParseCidr4(s: string): Cidr4 | undefined {
  const slash = s.indexOf('/');
  if (slash < 0) return undefined;
  const ip = tryParseIpv4(s.slice(0, slash));
  const ps = s.slice(slash + 1);
  if (ip === undefined || !/^(0|[1-9][0-9]?)$/.test(ps)) return undefined;
  const prefix = Number(ps);
  if (prefix > 32) return undefined;
  const size = 2 ** (32 - prefix);
  return { base: ip - (ip % size), prefix };
}

export function cidrSize(c: Cidr4): number {
  return 2 ** (32 - c.prefix);
}

export function cidrContains(c: Cidr4, ip: Ipv4Num): boolean {
  return ip >= c.base && ip < c.base + cidrSize(c);
}

export function formatCidr4(c: Cidr4): string {
  return `${formatIpv4(c.base)}/${c.prefix}`;
}
