/**
 * Per-node Pod IP allocation from the node's podCIDR.
 *
 * Two policies, because IP reuse decides whether some controller bugs show at all:
 * - `round-robin`: what the CNI `host-local` IPAM plugin does (flannel, Antrea and kubenet use
 *   it): start after the last reserved address and take the next free one, wrapping around, so a
 *   freed address comes back only after the rest of the range was used. A Pod deleted and
 *   recreated gets a different IP.
 * - `lowest-free`: always the lowest free address, so a freed address is reused at once (IPAMs
 *   that scan a bitmap from the start, and host-local whose last-reserved record was lost). A Pod
 *   deleted and recreated fast may get its old IP back, and a stale rule for an old IP can point
 *   at a different Pod.
 *
 * The network address, the first address (the node's gateway, as flannel and Antrea assign it)
 * and the broadcast address are never handed out.
 */
import { cidrSize, formatIpv4, tryParseCidr4, tryParseIpv4, type Cidr4 } from './ipv4.ts';

export type IpamPolicy = 'round-robin' | 'lowest-free';

export class NodeIpam {
  private readonly cidr: Cidr4;
  private readonly low: number;
  private readonly high: number;
  private readonly owners = new Map<number, string>();
  private lastReserved: number | undefined;

  constructor(
    readonly podCIDR: string,
    readonly policy: IpamPolicy,
  ) {
    const c = tryParseCidr4(podCIDR);
    if (c === undefined) throw new RangeError(`ipam: podCIDR ${JSON.stringify(podCIDR)} is not an IPv4 CIDR`);
    if (c.prefix > 29) throw new RangeError(`ipam: podCIDR ${podCIDR} is too small (at most /29)`);
    if (policy !== 'round-robin' && policy !== 'lowest-free') throw new RangeError(`ipam: unknown policy ${JSON.stringify(policy)}; use 'round-robin' or 'lowest-free'`);
    this.cidr = c;
    this.low = c.base + 2;
    this.high = c.base + cidrSize(c) - 2;
  }

  /** An address for `owner` (a Pod uid), or `undefined` when the range is exhausted. */
  allocate(owner: string): string | undefined {
    const size = this.high - this.low + 1;
    if (this.owners.size >= size) return undefined;
    let start = this.low;
    if (this.policy === 'round-robin' && this.lastReserved !== undefined) {
      start = this.lastReserved >= this.high ? this.low : this.lastReserved + 1;
    }
    for (let k = 0; k < size; k++) {
      const ip = this.low + ((start - this.low + k) % size);
      if (!this.owners.has(ip)) {
        this.owners.set(ip, owner);
        this.lastReserved = ip;
        return formatIpv4(ip);
      }
    }
    return undefined;
  }

  /** Frees an address; returns false when it was not allocated. */
  release(ip: string): boolean {
    const n = tryParseIpv4(ip);
    return n !== undefined && this.owners.delete(n);
  }

  /** Allocated addresses, lowest first, with their owners. */
  allocated(): { ip: string; owner: string }[] {
    return [...this.owners.entries()].sort((a, b) => a[0] - b[0]).map(([ip, owner]) => ({ ip: formatIpv4(ip), owner }));
  }

  /** Addresses left. */
  free(): number {
    return this.high - this.low + 1 - this.owners.size;
  }

  contains(ip: string): boolean {
    const n = tryParseIpv4(ip);
    return n !== undefined && n >= this.cidr.base && n < this.cidr.base + cidrSize(this.cidr);
  }
}
