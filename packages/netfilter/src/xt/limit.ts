/**
 * @internal
 * `-m limit`, as libxt_limit reads and prints it (checked against iptables 1.8.9): the rate is
 * stored as a period (`10000 · seconds-per-unit / n`) and printed back in the largest unit that
 * keeps it whole (`60/min` prints `1/sec`, `10/minute` `10/min`); `--limit-burst` is printed only
 * when it is not the default 5. The match is parsed and printed, not evaluated (its token bucket
 * runs on real time in the kernel).
 */
import { OptionTable, OptionTracker, type ExtensionInstance, type OptionUse } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import { xtablesStrtoui } from '../hostAddress.ts';
import type { MatchModule } from '../matches.ts';
import type { Match } from '../types.ts';

const LIMIT_OPTIONS = new OptionTable([
  { name: 'limit', args: 1 },
  { name: 'limit-burst', args: 1 },
]);

/** XT_LIMIT_SCALE: the period is in 1/10000 s. */
const SCALE = 10000;
const DEFAULT_PERIOD = (SCALE * 3600) / 3;
const DEFAULT_BURST = 5;

const UNITS: readonly (readonly [string, number])[] = [
  ['second', 1],
  ['minute', 60],
  ['hour', 3600],
  ['day', 86400],
];

/** parse_rate: `N[/unit]`, the unit any prefix of second, minute, hour or day (any case). */
function parseRate(text: string, argIndex: number): number {
  const slash = text.indexOf('/');
  let mult = 1;
  if (slash >= 0) {
    const unit = text.slice(slash + 1).toLowerCase();
    const found = unit === '' ? undefined : UNITS.find(([name]) => name.startsWith(unit));
    if (found === undefined) throw paramProblem(`bad rate "${text}"'`, argIndex);
    mult = found[1];
  }
  // atoi: leading blanks, a sign, digits; anything after is ignored.
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(text);
  const r = m === null ? 0 : Number(m[1]) | 0;
  if (r === 0) throw paramProblem(`bad rate "${text}"'`, argIndex);
  const period = Math.floor((SCALE * mult) / r) >>> 0;
  if (period === 0) throw paramProblem(`Rate too fast "${text}"`, argIndex);
  return period;
}

const RATES: readonly (readonly [string, number])[] = [
  ['day', SCALE * 86400],
  ['hour', SCALE * 3600],
  ['min', SCALE * 60],
  ['sec', SCALE],
];

/** print_rate: the period in the largest unit that divides it evenly enough. */
export function formatRate(period: number): string {
  let i = 1;
  for (; i < RATES.length; i++) {
    const mult = (RATES[i] as readonly [string, number])[1];
    if (period > mult || Math.floor(mult / period) < mult % period) break;
  }
  const [name, mult] = RATES[i - 1] as readonly [string, number];
  return `${Math.floor(mult / period)}/${name}`;
}

class LimitInstance extends OptionTracker implements ExtensionInstance<Match> {
  readonly name = 'limit';
  readonly spec = LIMIT_OPTIONS;
  private period = DEFAULT_PERIOD;
  private burst = DEFAULT_BURST;
  constructor() {
    super('limit', LIMIT_OPTIONS);
  }
  option(use: OptionUse): void {
    this.use(use, LIMIT_OPTIONS.exact(use.name)!);
    const v = use.values[0] ?? '';
    if (use.name === 'limit') this.period = parseRate(v, use.argIndex + 1);
    else {
      const n = xtablesStrtoui(v, 10000);
      if (n === undefined) throw paramProblem('limit: bad value for option "--limit-burst", or out of range (0-10000).\n', use.argIndex + 1);
      // nf_tables stores a burst of 0 as no burst: it reads back as the default.
      this.burst = n === 0 ? DEFAULT_BURST : n;
    }
  }
  finish(): Match {
    const args = ['--limit', formatRate(this.period)];
    if (this.burst !== DEFAULT_BURST) args.push('--limit-burst', String(this.burst));
    return { kind: 'unknown', module: 'limit', args };
  }
}

/** The value after `--name` in the canonical words. */
function valueOf(args: readonly string[], name: string): string | undefined {
  const k = args.indexOf(name);
  return k < 0 ? undefined : args[k + 1];
}

/** The `-m limit` module for the registry. */
export const LIMIT_MODULE: MatchModule = {
  name: 'limit',
  options: LIMIT_OPTIONS,
  create: (): ExtensionInstance<Match> => new LimitInstance(),
  list: (m) => {
    const args = (m as Extract<Match, { kind: 'unknown' }>).args;
    return `limit: avg ${valueOf(args, '--limit') ?? '3/hour'} burst ${valueOf(args, '--limit-burst') ?? String(DEFAULT_BURST)}`;
  },
};
