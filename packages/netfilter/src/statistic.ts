/**
 * `-m statistic` as the kernel's xt_statistic evaluates it, and the per-caller state it needs.
 *
 * - `--mode random --probability P`: iptables stores `lround(P * 2^31)` as a 31-bit threshold;
 *   each evaluation of the match draws one 32-bit number and matches when `draw & 0x7fffffff` is
 *   below the threshold. Here the draw comes from the caller's seeded source (`random31`), one draw
 *   per evaluation of the match (a rule whose earlier matches fail draws nothing, as in the kernel,
 *   which stops at the first failing match).
 * - `--mode nth --every N --packet P`: one counter per rule instance; the k-th packet (0-based)
 *   that reaches the match matches when `k mod N == P`. Checked against the kernel: with
 *   `--every 3`, `--packet 0` matched packets 1, 4, 7; `--packet 1` packets 2, 5; `--packet 2`
 *   packets 3, 6.
 * - `!` inverts either mode after the draw or the count.
 */
import { xoroshiro128plusFromState } from 'pure-rand/generator/xoroshiro128plus';
import type { EvalState } from './evalTypes.ts';
import { createRecentLists } from './xt/recent.ts';
import type { Rule } from './types.ts';

/** 2^31: the probability scale of `statistic --mode random`. */
export const STATISTIC_SCALE = 0x80000000;

/**
 * A fresh {@link EvalState}: no `nth` rule has seen a packet yet.
 *
 * @example
 * const state = createEvalState(); // keep one per host, pass it in every EvalContext
 */
export function createEvalState(): EvalState {
  return { nthCounters: new WeakMap<Rule, number>(), recent: createRecentLists() };
}

/**
 * splitmix32: spreads a small seed over 32 well-mixed bits (one step per call). Exported so every
 * seeded generator in netsim fills its state the same way (`@netsim/sim`'s `Prng` does).
 *
 * @example
 * const mix = { x: seed | 0 };
 * const state = [splitmix32(mix), splitmix32(mix), splitmix32(mix), splitmix32(mix) | 1];
 */
export function splitmix32(state: { x: number }): number {
  state.x = (state.x + 0x9e3779b9) | 0;
  let z = state.x;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) | 0;
}

/**
 * A deterministic source of uniform draws in [0, 2^31) for `EvalContext.random31`, from a seed
 * (xoroshiro128+ from pure-rand). The simulator derives its own from the run's PRNG; this one is
 * for tools and tests that have only a seed.
 *
 * The 128-bit state is filled from the seed through splitmix32: seeding xoroshiro128+ with a
 * small integer directly leaves most of its state zero, and its first outputs for seeds 0, 1, 2, …
 * are then all close to 2^31 (a `--probability 0.5` rule would never match on the first packet).
 * Draws take the generator's top 31 bits, the well-mixed ones.
 *
 * @example
 * const random31 = seededRandom31(42);
 * random31(); // the same sequence for the same seed, every run
 */
export function seededRandom31(seed: number): () => number {
  const mix = { x: seed | 0 };
  const rng = xoroshiro128plusFromState([splitmix32(mix), splitmix32(mix), splitmix32(mix), splitmix32(mix) | 1]);
  return () => rng.next() >>> 1;
}

/**
 * The 31-bit threshold iptables stores for `--probability p` (`lround(p * 2^31)`), so that a draw
 * matches with probability `threshold / 2^31`.
 */
export function probabilityThreshold31(probability: number): number {
  if (!(probability >= 0 && probability <= 1)) {
    throw new RangeError(`statistic: probability ${probability} is not in [0, 1]`);
  }
  // lround rounds half away from zero; for non-negative values that is floor(x + 0.5).
  return Math.floor(probability * STATISTIC_SCALE + 0.5);
}

/** One evaluation of `--mode random` given its one draw in [0, 2^31): compares, then applies `!`. */
export function statisticRandomMatches(threshold31: number, negate: boolean, draw31: number): boolean {
  return draw31 < threshold31 !== negate;
}

/**
 * One evaluation of `--mode nth` for `rule`: advances its counter in `state` and says whether
 * this packet is the selected one (then applies `!`).
 */
export function statisticNthMatches(state: EvalState, rule: Rule, every: number, packet: number, negate: boolean): boolean {
  const seen = state.nthCounters.get(rule) ?? 0;
  state.nthCounters.set(rule, seen + 1 === every ? 0 : seen + 1);
  return seen === packet !== negate;
}
