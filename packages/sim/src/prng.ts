/**
 * The one seeded source of randomness. Every choice the simulator makes (tie-breaks, ids, fault
 * decisions, the kernel's random draws) comes from a {@link Prng} derived from the run's seed.
 *
 * xoroshiro128+ from pure-rand, used mutably for speed: `int()` advances the generator in place.
 * Independent streams come from the generator's `jump()` (2^64 steps apart), so drawing more ids
 * never shifts the tie-breaks, which keeps shrunk histories close to the originals.
 *
 * The seed is mixed before it becomes the generator's state (splitmix32, the same mixing as
 * `@netsim/netfilter`'s `seededRandom31`): pure-rand's `xoroshiro128plus(seed)` puts the seed in
 * the state almost as is, so small neighbouring seeds (1, 2, 3 …, what fuzz campaigns use as
 * seed + i) gave nearly the same, near-maximal first draws and alike runs.
 */
import { splitmix32 } from '@netsim/netfilter';
import { xoroshiro128plusFromState } from 'pure-rand/generator/xoroshiro128plus';
import type { JumpableRandomGenerator } from 'pure-rand/types/JumpableRandomGenerator';
import { SimError } from './errors.ts';

/** What lower layers take: a uniform integer in `[0, maxExclusive)`. */
export interface RandomSource {
  int(maxExclusive: number): number;
}

const TWO_POW_32 = 4294967296;

/** A xoroshiro128+ generator whose 128-bit state is the seed (reduced to 32 bits) spread by splitmix32. */
function seededGenerator(seed: number): JumpableRandomGenerator {
  const mix = { x: seed | 0 };
  // The last word is forced odd so the state is never all zero (xoroshiro's one fixed point).
  return xoroshiro128plusFromState([splitmix32(mix), splitmix32(mix), splitmix32(mix), splitmix32(mix) | 1]);
}

/**
 * A seeded pseudo-random generator.
 *
 * @example
 * ```ts
 * const rng = new Prng(42);
 * const die = rng.int(6) + 1;        // 1..6
 * const coin = rng.chance(1, 2);     // integer ratios, never floats
 * ```
 */
export class Prng implements RandomSource {
  readonly #g: JumpableRandomGenerator;

  /** `seed` is any safe integer; it is reduced to 32 bits as fast-check does. */
  constructor(seed: number | JumpableRandomGenerator) {
    if (typeof seed === 'number') {
      if (!Number.isSafeInteger(seed)) {
        throw new SimError('invalid-argument', `Prng: the seed must be a safe integer, got ${String(seed)}`);
      }
      this.#g = seededGenerator(seed);
    } else {
      this.#g = seed;
    }
  }

  /** A generator resumed from {@link Prng.state}. */
  static fromState(state: readonly number[]): Prng {
    return new Prng(xoroshiro128plusFromState(state));
  }

  /** The generator's internal state, enough to resume it with {@link Prng.fromState}. */
  state(): readonly number[] {
    return this.#g.getState();
  }

  /** A uniform integer in `[0, maxExclusive)`; `maxExclusive` is an integer in `[1, 2^32]`. */
  int(maxExclusive: number): number {
    if (!Number.isInteger(maxExclusive) || maxExclusive < 1 || maxExclusive > TWO_POW_32) {
      throw new SimError('invalid-argument', `Prng.int: maxExclusive must be an integer in [1, 2^32], got ${String(maxExclusive)}`);
    }
    if (maxExclusive === 1) return 0;
    // Rejection sampling over 32 bits: the largest multiple of maxExclusive below 2^32 keeps
    // every residue equally likely.
    const allowed = Math.floor(TWO_POW_32 / maxExclusive) * maxExclusive;
    let v = this.#g.next() + 2147483648;
    while (v >= allowed) v = this.#g.next() + 2147483648;
    return v % maxExclusive;
  }

  /** True with probability `numerator / denominator` (integers, `0 <= numerator <= denominator`). */
  chance(numerator: number, denominator: number): boolean {
    if (!Number.isInteger(numerator) || !Number.isInteger(denominator) || denominator < 1 || numerator < 0 || numerator > denominator) {
      throw new SimError('invalid-argument', `Prng.chance: expected integers 0 <= numerator <= denominator, got ${numerator}/${denominator}`);
    }
    if (numerator === 0) return false;
    if (numerator === denominator) return true;
    return this.int(denominator) < numerator;
  }

  /** One element of a non-empty array, uniformly. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new SimError('invalid-argument', 'Prng.pick: the array is empty');
    return items[this.int(items.length)] as T;
  }

  /** A uniformly shuffled copy (Fisher–Yates). */
  shuffle<T>(items: readonly T[]): T[] {
    const out = items.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const tmp = out[i] as T;
      out[i] = out[j] as T;
      out[j] = tmp;
    }
    return out;
  }

  /** 32 random bits as an unsigned integer. */
  uint32(): number {
    return this.#g.next() >>> 0;
  }
}

/** The independent streams of one run, in a fixed order so a seed always maps to the same streams. */
export const STREAM_NAMES = ['schedule', 'ids', 'world', 'faults', 'kube', 'kernel'] as const;
export type StreamName = (typeof STREAM_NAMES)[number];

/**
 * Derive the run's independent streams from one seed: stream k is the seed's generator jumped
 * k + 1 times.
 */
export function deriveStreams(seed: number): { readonly [K in StreamName]: Prng } {
  if (!Number.isSafeInteger(seed)) {
    throw new SimError('invalid-argument', `the seed must be a safe integer, got ${String(seed)}`);
  }
  const base = seededGenerator(seed);
  const out: Partial<Record<StreamName, Prng>> = {};
  for (const name of STREAM_NAMES) {
    base.jump();
    out[name] = new Prng(base.clone());
  }
  return out as { readonly [K in StreamName]: Prng };
}
