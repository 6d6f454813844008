/**
 * "Where can this packet go?": every outcome of a walk whose rules draw at random
 * (`statistic --mode random`), each with its exact probability, instead of one seeded draw.
 *
 * A walk is any function of a draw source: one hook (`evaluateHook`), one table, a whole host.
 * {@link allBranches} runs it once per combination of draw outcomes, depth first, the matching
 * outcome of each draw before the failing one, so branches come out in rule order (a kube-proxy
 * service chain's endpoints in the order its rules list them). Each draw is compared with the
 * threshold the evaluator passes (`EvalContext.random31(threshold31)`): it is below the threshold
 * with probability `threshold31 / 2^31` — exactly what the kernel's xt_statistic does with a
 * uniform 31-bit draw — so `--probability 0.3333333333` gives `715827882/2147483648`, not 1/3.
 * A threshold of 0 or 2^31 has one outcome only and does not split.
 *
 * `--mode nth` is not random: it depends on the rule's packet counter, which the walk's
 * `EvalState` holds; give each branch the same (fresh or copied) state.
 */
import type { EvalContext, EvalResult, HookEvalOptions, Packet } from './evalTypes.ts';
import { evaluateHook } from './evaluate.ts';
import type { CompiledRuleset } from './compile.ts';
import { createEvalState, STATISTIC_SCALE } from './statistic.ts';
import type { Hook, Ruleset } from './types.ts';

/** An exact probability `num / den`, reduced (`den` > 0). */
export interface Probability {
  readonly num: bigint;
  readonly den: bigint;
}

/** One random draw a branch took: its threshold and whether the draw fell below it (the match side before `!`). */
export interface BranchDraw {
  readonly threshold31: number;
  readonly below: boolean;
}

/** One outcome of the walk. */
export interface Branch<R> {
  readonly probability: Probability;
  /** The draws in the order the walk made them. */
  readonly draws: readonly BranchDraw[];
  readonly result: R;
}

export interface AllBranchesOptions {
  /** Refuse to enumerate more outcomes than this (a `RangeError`); default 4096. */
  readonly maxBranches?: number;
}

/** A draw source for one branch: `threshold31` must be given (the evaluator always passes it). */
export type BranchDrawSource = (threshold31?: number) => number;

const SCALE = BigInt(STATISTIC_SCALE);

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

/** `num / den` reduced. */
export function probability(num: bigint, den: bigint): Probability {
  if (den <= 0n) throw new RangeError('probability: the denominator must be positive');
  const g = gcd(num, den);
  return g === 0n ? { num: 0n, den: 1n } : { num: num / g, den: den / g };
}

/** `1`, `0` or `num/den`. */
export function formatProbability(p: Probability): string {
  return p.den === 1n ? `${p.num}` : `${p.num}/${p.den}`;
}

/** The sum of probabilities (1 for a complete enumeration). */
export function sumProbabilities(ps: readonly Probability[]): Probability {
  let num = 0n;
  let den = 1n;
  for (const p of ps) {
    num = num * p.den + p.num * den;
    den *= p.den;
  }
  return probability(num, den);
}

function branchProbability(draws: readonly BranchDraw[]): Probability {
  let num = 1n;
  let den = 1n;
  for (const d of draws) {
    const t = BigInt(d.threshold31);
    num *= d.below ? t : SCALE - t;
    den *= SCALE;
  }
  return probability(num, den);
}

/**
 * Every outcome of `walk`, each with its probability; the probabilities sum to 1. `walk` must be
 * deterministic given its draws (give it fresh state each time) and pass every draw's threshold.
 *
 * @example
 * const branches = allBranches((random31) => evaluateHook(compiled, 'PREROUTING', packet, { ...ctx, random31 }));
 * branches.map((b) => [formatProbability(b.probability), b.result.nat]);
 */
export function allBranches<R>(walk: (random31: BranchDrawSource) => R, opts: AllBranchesOptions = {}): Branch<R>[] {
  const max = opts.maxBranches ?? 4096;
  const out: Branch<R>[] = [];
  // Prefixes of forced outcomes still to explore; the last pushed is explored first.
  const pending: boolean[][] = [[]];
  for (let prefix = pending.pop(); prefix !== undefined; prefix = pending.pop()) {
    if (out.length >= max) throw new RangeError(`allBranches: more than ${max} outcomes; narrow the packet or raise maxBranches`);
    const draws: BranchDraw[] = [];
    const forced = prefix;
    const random31: BranchDrawSource = (threshold31) => {
      if (threshold31 === undefined) throw new Error('allBranches: a draw without its threshold cannot be enumerated (the walk must pass EvalContext.random31 its threshold)');
      const t = Math.min(Math.max(0, Math.floor(threshold31)), STATISTIC_SCALE);
      const k = draws.length;
      let below: boolean;
      if (k < forced.length) below = forced[k] as boolean;
      else {
        below = t > 0;
        // Both outcomes possible: explore the failing one after everything below this one.
        if (t > 0 && t < STATISTIC_SCALE) pending.push([...draws.map((d) => d.below), false]);
      }
      draws.push({ threshold31: t, below });
      return below ? 0 : STATISTIC_SCALE - 1;
    };
    const result = walk(random31);
    out.push({ probability: branchProbability(draws), draws, result });
  }
  return out;
}

/**
 * Every outcome of one hook's walk (`evaluateHook`) with its probability. Each branch gets a
 * fresh `EvalState` (nth counters at zero) unless `ctx.state` is given, which then must not be
 * advanced by an `nth` rule for the branches to be independent.
 *
 * @example
 * const branches = hookBranches(compile(ruleset), 'PREROUTING', packet, { addrType, conntrack });
 * // [{ probability: { num: 1n, den: 2n }, result: { verdict, nat: { kind: 'DNAT', … } } }, …]
 */
export function hookBranches(
  rs: Ruleset | CompiledRuleset,
  hook: Hook,
  packet: Packet,
  ctx: Omit<EvalContext, 'random31' | 'state'> & { readonly state?: EvalContext['state'] },
  opts: HookEvalOptions & AllBranchesOptions = {},
): Branch<EvalResult>[] {
  return allBranches((random31) => evaluateHook(rs, hook, packet, { ...ctx, state: ctx.state ?? createEvalState(), random31 }, opts), opts);
}
