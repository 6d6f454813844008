import { describe, expect, it } from 'vitest';
import { createEvalState, evaluateTable, probabilityThreshold31, seededRandom31, STATISTIC_SCALE } from '../src/index.ts';
import { statisticNthMatches, statisticRandomMatches } from '../src/statistic.ts';
import { ctx, pkt, random, rule, ruleset } from './evalHelpers.ts';

/** The largest deviation from n·p a correct sampler exceeds with probability below 1e-6 (5 sigma). */
function tolerance(n: number, p: number): number {
  return 5 * Math.sqrt(n * p * (1 - p));
}

describe('seededRandom31', () => {
  it('should give the same sequence for the same seed and another for another seed', () => {
    const take = (seed: number) => {
      const r = seededRandom31(seed);
      return Array.from({ length: 8 }, () => r());
    };
    expect(take(42)).toEqual(take(42));
    expect(take(42)).not.toEqual(take(43));
  });

  it('should make the first draws of consecutive seeds uniform (small seeds are mixed, not used raw)', () => {
    const n = 4000;
    for (const k of [0, 1, 2]) {
      let low = 0;
      for (let seed = 0; seed < n; seed++) {
        const r = seededRandom31(seed);
        let v = 0;
        for (let i = 0; i <= k; i++) v = r();
        if (v < STATISTIC_SCALE / 2) low++;
      }
      expect(Math.abs(low - n / 2)).toBeLessThan(tolerance(n, 0.5));
    }
  });

  it('should draw 31-bit non-negative integers', () => {
    const r = seededRandom31(7);
    for (let i = 0; i < 10000; i++) {
      const v = r();
      expect(Number.isInteger(v) && v >= 0 && v < STATISTIC_SCALE).toBe(true);
    }
  });
});

describe('probabilityThreshold31', () => {
  it('should round p * 2^31 to the nearest integer as iptables does (lround)', () => {
    expect(probabilityThreshold31(0.5)).toBe(0x40000000);
    expect(probabilityThreshold31(1)).toBe(0x80000000);
    expect(probabilityThreshold31(0)).toBe(0);
    // kube-proxy's 1/3 prints back as 0.33333333349 because of this rounding.
    expect(probabilityThreshold31(1 / 3)).toBe(715827883);
    expect((715827883 / STATISTIC_SCALE).toFixed(11)).toBe('0.33333333349');
  });

  it('should refuse probabilities outside [0, 1]', () => {
    expect(() => probabilityThreshold31(1.5)).toThrow(/not in \[0, 1\]/);
    expect(() => probabilityThreshold31(Number.NaN)).toThrow(RangeError);
  });
});

describe('statistic --mode random', () => {
  it('should match with the configured probability over many draws, within a computed tolerance', () => {
    for (const p of [0.1, 0.3, 0.5, 0.9]) {
      const threshold = probabilityThreshold31(p);
      const r = seededRandom31(1234);
      const n = 100_000;
      let hits = 0;
      for (let i = 0; i < n; i++) if (statisticRandomMatches(threshold, false, r())) hits++;
      const expected = (n * threshold) / STATISTIC_SCALE;
      expect(Math.abs(hits - expected)).toBeLessThan(tolerance(n, p));
    }
  });

  it('should spread kube-proxy endpoints evenly through 1/(n-i) probabilities', () => {
    // KUBE-SVC-like chain: ep1 with 1/3, ep2 with 1/2, ep3 unconditional; each marks and returns.
    const rs = ruleset({
      mangle: {
        PREROUTING: [rule({ j: 'SVC' })],
        SVC: [
          rule({ m: [random(1 / 3)], j: 'EP1' }),
          rule({ m: [random(1 / 2)], j: 'EP2' }),
          rule({ j: 'EP3' }),
        ],
        EP1: [rule({ j: { kind: 'MARK', value: 1, mask: 0xff } }), rule({ j: 'ACCEPT' })],
        EP2: [rule({ j: { kind: 'MARK', value: 2, mask: 0xff } }), rule({ j: 'ACCEPT' })],
        EP3: [rule({ j: { kind: 'MARK', value: 3, mask: 0xff } }), rule({ j: 'ACCEPT' })],
      },
    });
    const c = ctx({ seed: 99 });
    const n = 30_000;
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < n; i++) {
      const m = evaluateTable(rs, 'mangle', 'PREROUTING', pkt(), c).mark;
      counts[m] = (counts[m] ?? 0) + 1;
    }
    for (const ep of [1, 2, 3]) expect(Math.abs((counts[ep] ?? 0) - n / 3)).toBeLessThan(tolerance(n, 1 / 3));
  });

  it('should give the same matches for the same seed', () => {
    const rs = ruleset({ filter: { INPUT: { policy: 'DROP', rules: [rule({ m: [random(0.5)], j: 'ACCEPT' })] } } });
    const seq = (seed: number) => {
      const c = ctx({ seed });
      return Array.from({ length: 32 }, () => evaluateTable(rs, 'filter', 'INPUT', pkt(), c).verdict.kind).join(',');
    };
    expect(seq(5)).toBe(seq(5));
    expect(seq(5)).not.toBe(seq(6));
  });
});

describe('statistic --mode nth', () => {
  it('should count per rule and wrap at --every', () => {
    const state = createEvalState();
    const a = rule({});
    const b = rule({});
    const got = Array.from({ length: 6 }, () => [statisticNthMatches(state, a, 3, 1, false), statisticNthMatches(state, b, 2, 0, true)]);
    expect(got.map(([x]) => x)).toEqual([false, true, false, false, true, false]);
    // b is inverted: every packet but the 1st, 3rd, 5th.
    expect(got.map(([, y]) => y)).toEqual([false, true, false, true, false, true]);
  });
});
