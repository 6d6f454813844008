/**
 * Test helpers: a small seeded random source (the simulator injects its own) and address sugar.
 */
import { parseIpv4, type Ipv4 } from '@netsim/netfilter';
import type { RandomSource } from '../src/nat.ts';

/** splitmix32: a tiny deterministic generator, enough for tests. */
export function seeded(seed: number): RandomSource & { random31(): number; draws: number } {
  let s = seed >>> 0;
  const next = (): number => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  const r = {
    draws: 0,
    int(maxExclusive: number): number {
      r.draws++;
      return Math.floor((next() / 0x100000000) * maxExclusive);
    },
    random31(): number {
      r.draws++;
      return next() >>> 1;
    },
  };
  return r;
}

/** A random source that always returns the given values in turn (then 0). */
export function scripted(values: readonly number[]): RandomSource & { calls: number[] } {
  let i = 0;
  const calls: number[] = [];
  return {
    calls,
    int(maxExclusive: number): number {
      calls.push(maxExclusive);
      const v = values[i++] ?? 0;
      return v % maxExclusive;
    },
  };
}

export const ip = (s: string): Ipv4 => parseIpv4(s);

/** The host-file lines of node-a that several tests share: eth0 uplink, eth1 veth, default route, forwarding on, sshd. */
export const NODE_A_LINKS = `ip link add eth0 type physical
ip link set eth0 up
ip addr add 198.51.100.10/24 dev eth0
ip link add eth1 type veth
ip link set eth1 up
ip addr add 203.0.113.1/24 dev eth1
ip route add default via 198.51.100.254
sysctl -w net.ipv4.ip_forward=1
listen tcp 22
`;
