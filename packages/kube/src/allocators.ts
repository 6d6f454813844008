/**
 * The API server's own allocators: Service cluster IPs and node ports (random pick, then scan
 * forward to the first free one, as kube-apiserver's bitmap allocators do), and node pod CIDRs
 * (round-robin over the cluster CIDR, as kube-controller-manager's range allocator does).
 */
import { KubeError } from './errors.ts';
import { cidrSize, formatCidr4, formatIpv4, tryParseCidr4, tryParseIpv4, type Cidr4 } from './ipv4.ts';
import type { RandomSource } from './runtime.ts';

/** A bitmap over `[0, size)` with kube-apiserver's random-offset scan. */
class RandomScanBitmap {
  private readonly used: Uint8Array;
  private count = 0;

  constructor(readonly size: number) {
    this.used = new Uint8Array(size);
  }

  has(i: number): boolean {
    return this.used[i] === 1;
  }

  take(i: number): void {
    if (this.used[i] === 1) return;
    this.used[i] = 1;
    this.count++;
  }

  release(i: number): void {
    if (this.used[i] !== 1) return;
    this.used[i] = 0;
    this.count--;
  }

  allocateNext(random: RandomSource): number | undefined {
    if (this.count >= this.size) return undefined;
    const offset = random.int(this.size);
    for (let k = 0; k < this.size; k++) {
      const at = (offset + k) % this.size;
      if (this.used[at] !== 1) {
        this.take(at);
        return at;
      }
    }
    return undefined;
  }
}

export class ServiceIpAllocator {
  private readonly cidr: Cidr4;
  private readonly bits: RandomScanBitmap;

  constructor(
    readonly range: string,
    private readonly random: RandomSource,
  ) {
    const c = tryParseCidr4(range);
    if (c === undefined || c.prefix > 30) throw new RangeError(`serviceCIDR: ${JSON.stringify(range)} is not an IPv4 CIDR with room for addresses (prefix at most /30)`);
    this.cidr = c;
    // The network and broadcast addresses are never handed out.
    this.bits = new RandomScanBitmap(cidrSize(c) - 2);
  }

  /** Takes a given address; returns an error message (kube-apiserver's) when it cannot. */
  take(ip: string): string | undefined {
    const n = tryParseIpv4(ip);
    const idx = n === undefined ? -1 : n - this.cidr.base - 1;
    if (idx < 0 || idx >= this.bits.size) return `failed to allocate IP ${ip}: the provided IP (${ip}) is not in the valid range. The range of valid IPs is ${formatCidr4(this.cidr)}`;
    if (this.bits.has(idx)) return `failed to allocate IP ${ip}: provided IP is already allocated`;
    this.bits.take(idx);
    return undefined;
  }

  allocate(): string {
    const i = this.bits.allocateNext(this.random);
    if (i === undefined) throw new KubeError('InternalError', 'Internal error occurred: failed to allocate a serviceIP: range is full');
    return formatIpv4(this.cidr.base + 1 + i);
  }

  release(ip: string): void {
    const n = tryParseIpv4(ip);
    if (n === undefined) return;
    const idx = n - this.cidr.base - 1;
    if (idx >= 0 && idx < this.bits.size) this.bits.release(idx);
  }
}

export class NodePortAllocator {
  private readonly bits: RandomScanBitmap;

  constructor(
    readonly min: number,
    readonly max: number,
    private readonly random: RandomSource,
  ) {
    if (!Number.isInteger(min) || !Number.isInteger(max) || min < 1 || max > 65535 || min > max) throw new RangeError(`nodePortRange: invalid range ${min}-${max}`);
    this.bits = new RandomScanBitmap(max - min + 1);
  }

  take(port: number): string | undefined {
    if (port < this.min || port > this.max) return `provided port is not in the valid range. The range of valid ports is ${this.min}-${this.max}`;
    if (this.bits.has(port - this.min)) return 'provided port is already allocated';
    this.bits.take(port - this.min);
    return undefined;
  }

  allocate(): number {
    const i = this.bits.allocateNext(this.random);
    if (i === undefined) throw new KubeError('InternalError', 'Internal error occurred: failed to allocate a nodePort: range is full');
    return this.min + i;
  }

  release(port: number): void {
    if (port >= this.min && port <= this.max) this.bits.release(port - this.min);
  }
}

export class NodeCidrAllocator {
  private readonly cluster: Cidr4;
  private readonly count: number;
  private readonly used = new Set<number>();
  private nextCandidate = 0;

  constructor(
    readonly clusterCIDR: string,
    readonly maskSize: number,
  ) {
    const c = tryParseCidr4(clusterCIDR);
    if (c === undefined) throw new RangeError(`clusterCIDR: ${JSON.stringify(clusterCIDR)} is not an IPv4 CIDR`);
    if (!Number.isInteger(maskSize) || maskSize < c.prefix || maskSize > 30) throw new RangeError(`nodeCIDRMaskSize: ${maskSize} must be between the cluster prefix /${c.prefix} and /30`);
    this.cluster = c;
    this.count = 2 ** (maskSize - c.prefix);
  }

  /** Marks a node-supplied podCIDR as used when it is one of the cluster's subnets. */
  occupy(cidr: string): void {
    const i = this.indexOf(cidr);
    if (i !== undefined) this.used.add(i);
  }

  /** The next free subnet, round-robin; `undefined` when the cluster CIDR is exhausted. */
  allocate(): string | undefined {
    for (let k = 0; k < this.count; k++) {
      const candidate = this.nextCandidate;
      this.nextCandidate = (this.nextCandidate + 1) % this.count;
      if (!this.used.has(candidate)) {
        this.used.add(candidate);
        return formatCidr4({ base: this.cluster.base + candidate * 2 ** (32 - this.maskSize), prefix: this.maskSize });
      }
    }
    return undefined;
  }

  release(cidr: string): void {
    const i = this.indexOf(cidr);
    if (i !== undefined) this.used.delete(i);
  }

  private indexOf(cidr: string): number | undefined {
    const c = tryParseCidr4(cidr);
    if (c === undefined || c.prefix !== this.maskSize) return undefined;
    const off = c.base - this.cluster.base;
    if (off < 0 || off >= cidrSize(this.cluster)) return undefined;
    return off / 2 ** (32 - this.maskSize);
  }
}
