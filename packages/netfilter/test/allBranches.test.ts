import { describe, expect, it } from 'vitest';
import {
  allBranches,
  compile,
  formatProbability,
  hookBranches,
  makePacket,
  parseIpv4,
  parseSave,
  probabilityThreshold31,
  sumProbabilities,
  type ConntrackView,
} from '@netsim/netfilter';

const NEW: ConntrackView = { state: 'NEW', dnat: false, snat: false, ctmark: 0 };
const ctx = { addrType: () => 'UNICAST' as const, conntrack: NEW };

/** A kube-proxy service chain with three endpoints, as kube-proxy writes it (1/3, then 1/2, then the rest). */
const THREE = `*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SVC-A - [0:0]
-A PREROUTING -d 198.18.0.10/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-A
-A KUBE-SVC-A -p tcp -m statistic --mode random --probability 0.33333333349 -j DNAT --to-destination 203.0.113.1:8080
-A KUBE-SVC-A -p tcp -m statistic --mode random --probability 0.50000000000 -j DNAT --to-destination 203.0.113.2:8080
-A KUBE-SVC-A -p tcp -j DNAT --to-destination 203.0.113.3:8080
COMMIT
`;

const packet = makePacket({ src: parseIpv4('192.0.2.7'), dst: parseIpv4('198.18.0.10'), dport: 80, inIface: 'eth0' });

describe('allBranches', () => {
  it('should give every endpoint of a service chain in rule order with the exact probability of the kernel draw', () => {
    const branches = hookBranches(compile(parseSave(THREE)), 'PREROUTING', packet, ctx);
    const t1 = BigInt(probabilityThreshold31(0.33333333349));
    const scale = 2n ** 31n;
    expect(branches.map((b) => (b.result.nat?.kind === 'DNAT' ? b.result.nat.to?.minIp : undefined))).toEqual(['203.0.113.1', '203.0.113.2', '203.0.113.3'].map(parseIpv4));
    const reduce = (n: bigint, d: bigint) => {
      let [a, b] = [n, d];
      while (b !== 0n) [a, b] = [b, a % b];
      return `${n / a}/${d / a}`;
    };
    expect(branches.map((b) => formatProbability(b.probability))).toEqual([reduce(t1, scale), reduce(scale - t1, 2n * scale), reduce(scale - t1, 2n * scale)]);
    expect(formatProbability(sumProbabilities(branches.map((b) => b.probability)))).toBe('1');
    expect(branches.map((b) => b.draws.map((d) => d.below))).toEqual([[true], [false, true], [false, false]]);
  });

  it('should not split on a probability of 0 or 1, and give one branch of probability 1 when nothing draws', () => {
    const rs = parseSave(THREE.replace('0.33333333349', '0.00000000000').replace('0.50000000000', '1.00000000000'));
    const branches = hookBranches(compile(rs), 'PREROUTING', packet, ctx);
    expect(branches.map((b) => [formatProbability(b.probability), b.result.nat?.kind === 'DNAT' ? b.result.nat.to?.minIp : undefined])).toEqual([['1', parseIpv4('203.0.113.2')]]);
    const none = hookBranches(compile(rs), 'PREROUTING', { ...packet, dport: 81 }, ctx);
    expect(none.map((b) => [formatProbability(b.probability), b.draws.length, b.result.nat])).toEqual([['1', 0, undefined]]);
  });

  it('should enumerate nested draws depth first and refuse more outcomes than asked for', () => {
    const walk = (r: (t?: number) => number) => [r(2 ** 30) < 2 ** 30, r(2 ** 29) < 2 ** 29];
    const b = allBranches(walk);
    expect(b.map((x) => [x.result, formatProbability(x.probability)])).toEqual([
      [[true, true], '1/8'],
      [[true, false], '3/8'],
      [[false, true], '1/8'],
      [[false, false], '3/8'],
    ]);
    expect(() => allBranches(walk, { maxBranches: 3 })).toThrow(RangeError);
    expect(() => allBranches((r) => r())).toThrow('a draw without its threshold');
  });
});
