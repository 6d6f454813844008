/**
 * @internal `-m hashlimit` (libxt_hashlimit, revision 3): per-flow token buckets. The rate is kept
 * as a period in millionths of a second and printed back in the largest unit that keeps it whole
 * (`10/s` prints `10/sec`, `60/min` `1/sec`); `--hashlimit-burst` is always printed;
 * `--hashlimit-htable-expire` defaults to the rate's unit in milliseconds and is printed when it
 * differs from the printed unit; gcinterval, masks and table sizes print when not the defaults.
 * Byte rates (`1kb/s`) are kept as written. `--hashlimit-rate-match` keeps the packet count per
 * interval instead of a period: the rate prints as `COUNT/sec` (`3/day` prints `3/sec`), and
 * `--hashlimit-rate-interval` defaults to the rate's unit in seconds (printed unless 1); without
 * rate matching the interval is not printed.
 */
import { paramProblem } from '../failure.ts';
import { uintBase0, type XtDefinition, type XtState } from './define.ts';

const SCALE = 1_000_000;
const UNITS: readonly (readonly [string, number])[] = [
  ['second', 1],
  ['minute', 60],
  ['hour', 3600],
  ['day', 86400],
];
const PRINT: readonly (readonly [string, number])[] = [
  ['day', 86400],
  ['hour', 3600],
  ['min', 60],
  ['sec', 1],
];
const MODES = ['srcip', 'srcport', 'dstip', 'dstport'] as const;
/** The unit of the rate as given (seconds), remembered for the expire default. */
const givenUnit = new WeakMap<XtState, number>(); // tidy-allow: per-parse scratch, keyed by the parse's own state

/** The period of the packet rate as given, remembered for the kernel's overflow check. */
const givenPeriod = new WeakMap<XtState, number>(); // tidy-allow: per-parse scratch, keyed by the parse's own state

/** The packet count of the rate as given (`10` of `10/min`): what `--hashlimit-rate-match` keeps. */
const givenCount = new WeakMap<XtState, number>(); // tidy-allow: per-parse scratch, keyed by the parse's own state

function badRate(opt: string, text: string, at: number): never {
  throw paramProblem(`hashlimit: Bad value for "--${opt}" option: "${text}"`, at);
}

function rate(opt: string): (v: readonly string[], at: number, s: XtState) => readonly string[] {
  return (v, at, s) => {
    const text = v[0] ?? '';
    if (/b\//i.test(text)) return [text];
    const slash = text.indexOf('/');
    let mult = 1;
    if (slash >= 0) {
      const unit = text.slice(slash + 1).toLowerCase();
      const found = unit === '' ? undefined : UNITS.find(([name]) => name.startsWith(unit));
      if (found === undefined) badRate(opt, text, at);
      mult = found[1];
    }
    const m = /^\s*\+?(\d+)/.exec(text);
    const r = m === null ? 0 : Number(m[1]);
    if (r === 0) badRate(opt, text, at);
    const period = Math.floor((SCALE * mult) / r);
    if (period === 0) throw paramProblem(`Rate too fast "${text}"`, at);
    givenUnit.set(s, mult);
    givenPeriod.set(s, period);
    givenCount.set(s, r);
    return [formatRate(period)];
  };
}

const U64 = (1n << 64n) - 1n;
/** CONFIG_HZ of the recorded kernel. */
const HZ = 250n;
/** CREDITS_PER_JIFFY for revisions 2 and 3: the power of two below 2^64 / (HZ · one day). */
const CREDITS_PER_JIFFY = ((): bigint => {
  const max = U64 / (HZ * 86400n);
  let p = 1n;
  while (p * 2n <= max) p *= 2n;
  return p;
})();

/** user2credits (revision 3) in u64 arithmetic. */
function userToCredits(user: bigint): bigint {
  const scale = BigInt(SCALE);
  const hzCpj = HZ * CREDITS_PER_JIFFY;
  return scale >= hzCpj ? user / (scale / hzCpj) : (user * (hzCpj / scale)) & U64;
}

/**
 * hashlimit_mt_check_common: a packet rate whose burst of credits overflows 64 bits is refused
 * (`3/day` with the default burst: "Numerical result out of range").
 */
function creditsOverflow(period: number, burst: number): boolean {
  const avg = BigInt(period);
  return userToCredits((avg * BigInt(burst)) & U64) < userToCredits(avg);
}

/** The rate text for a period, and the unit it is printed in (seconds). */
function printRate(period: number): { text: string; mult: number } {
  let i = 1;
  for (; i < PRINT.length; i++) {
    const mult = (PRINT[i] as readonly [string, number])[1] * SCALE;
    if (period > mult || Math.floor(mult / period) < mult % period) break;
  }
  const [name, unit] = PRINT[i - 1] as readonly [string, number];
  return { text: `${Math.floor((unit * SCALE) / period)}/${name}`, mult: unit };
}

function formatRate(period: number): string {
  return printRate(period).text;
}

function unitOf(text: string): number {
  const name = text.slice(text.indexOf('/') + 1);
  return (PRINT.find(([n]) => n === name) ?? ['sec', 1])[1];
}

const num = (opt: string, max: number) => (v: readonly string[], at: number): readonly string[] => {
  const n = uintBase0(v[0] ?? '');
  if (n === undefined || n > max) throw paramProblem(`hashlimit: bad value for option "--${opt}", or out of range (0-${max}).\n`, at);
  return [String(n)];
};

export const HASHLIMIT: XtDefinition = {
  name: 'hashlimit',
  options: [
    { name: 'hashlimit', args: 1, as: 'hashlimit-upto', parse: rate('hashlimit') },
    { name: 'hashlimit-upto', args: 1, parse: rate('hashlimit-upto') },
    { name: 'hashlimit-above', args: 1, parse: rate('hashlimit-above') },
    {
      name: 'hashlimit-burst',
      args: 1,
      // libxt_hashlimit's own check and words (no "hashlimit:" prefix).
      parse: (v, at) => {
        const n = uintBase0(v[0] ?? '');
        if (n === undefined || n < 1 || n > 1_000_000) throw paramProblem('bad value for option "--hashlimit-burst", or out of range (1-1000000).', at);
        return [String(n)];
      },
    },
    {
      name: 'hashlimit-mode',
      args: 1,
      parse: (v, at) => {
        const set = new Set<string>();
        for (const p of (v[0] ?? '').split(',')) {
          if (!(MODES as readonly string[]).includes(p)) throw paramProblem(`hashlimit: bad value for option "--hashlimit-mode", or out of range (${v[0] ?? ''}).\n`, at);
          set.add(p);
        }
        return [MODES.filter((m) => set.has(m)).join(',')];
      },
    },
    { name: 'hashlimit-name', args: 1 },
    { name: 'hashlimit-htable-size', args: 1, parse: num('hashlimit-htable-size', 0xffffffff) },
    { name: 'hashlimit-htable-max', args: 1, parse: num('hashlimit-htable-max', 0xffffffff) },
    { name: 'hashlimit-htable-gcinterval', args: 1, parse: num('hashlimit-htable-gcinterval', 0xffffffff) },
    { name: 'hashlimit-htable-expire', args: 1, parse: num('hashlimit-htable-expire', 0xffffffff) },
    { name: 'hashlimit-srcmask', args: 1, parse: num('hashlimit-srcmask', 32) },
    { name: 'hashlimit-dstmask', args: 1, parse: num('hashlimit-dstmask', 32) },
    { name: 'hashlimit-rate-match', args: 0 },
    {
      name: 'hashlimit-rate-interval',
      args: 1,
      // Seconds, in decimal, 1 to 2^31 - 1 (2^31 and 2^32 - 1 are refused as 0 is).
      parse: (v, at) => {
        const text = v[0] ?? '';
        const n = /^\+?[0-9]+$/.test(text) ? Number(text) : 0;
        if (n < 1 || n > 0x7fffffff) badRate('hashlimit-rate-interval', text, at);
        return [String(n)];
      },
    },
  ],
  order: [
    'hashlimit-upto',
    'hashlimit-above',
    'hashlimit-burst',
    'hashlimit-mode',
    'hashlimit-name',
    'hashlimit-htable-size',
    'hashlimit-htable-max',
    'hashlimit-htable-gcinterval',
    'hashlimit-htable-expire',
    'hashlimit-srcmask',
    'hashlimit-dstmask',
    'hashlimit-rate-match',
    'hashlimit-rate-interval',
  ],
  finish(s, env) {
    const r = s.value('hashlimit-upto') ?? s.value('hashlimit-above');
    if (r === undefined) throw paramProblem('You have to specify --hashlimit');
    if (!s.has('hashlimit-name')) s.missing('hashlimit-name');
    const bytes = /b\//i.test(r);
    const rateMatch = s.has('hashlimit-rate-match');
    if (!rateMatch) {
      // Kept by the kernel (and counted by `-L`) but not printed: not modelled.
      s.delete('hashlimit-rate-interval');
    } else if (!bytes) {
      // Rate matching keeps the count per interval: printed as `COUNT/sec`, the interval the
      // rate's unit in seconds unless given, printed unless 1.
      const which = s.has('hashlimit-upto') ? 'hashlimit-upto' : 'hashlimit-above';
      s.set(which, [`${givenCount.get(s) ?? 1}/sec`]);
      if (!s.has('hashlimit-rate-interval')) s.set('hashlimit-rate-interval', [String(givenUnit.get(s) ?? 1)]);
    }
    if (s.value('hashlimit-rate-interval') === '1') s.delete('hashlimit-rate-interval');
    const printedRate = s.value('hashlimit-upto') ?? s.value('hashlimit-above') ?? r;
    if (!bytes && !s.has('hashlimit-burst')) s.set('hashlimit-burst', ['5']);
    const period = givenPeriod.get(s);
    if (!bytes && !s.has('hashlimit-rate-match') && period !== undefined && creditsOverflow(period, Number(s.value('hashlimit-burst')))) {
      env.rejectRule('Numerical result out of range');
    }
    if (!bytes) {
      const printed = unitOf(printedRate) * 1000;
      const expire = s.has('hashlimit-htable-expire') ? Number(s.value('hashlimit-htable-expire')) : (givenUnit.get(s) ?? 1) * 1000;
      if (expire === printed) s.delete('hashlimit-htable-expire');
      else s.set('hashlimit-htable-expire', [String(expire)]);
    }
    if (s.value('hashlimit-htable-gcinterval') === '1000') s.delete('hashlimit-htable-gcinterval');
    if (s.value('hashlimit-srcmask') === '32') s.delete('hashlimit-srcmask');
    if (s.value('hashlimit-dstmask') === '32') s.delete('hashlimit-dstmask');
    if (s.value('hashlimit-htable-size') === '0') s.delete('hashlimit-htable-size');
    if (s.value('hashlimit-htable-max') === '0') s.delete('hashlimit-htable-max');
  },
  list(args) {
    const parts = ['limit:'];
    const at = args.indexOf('--hashlimit-rate-interval');
    const interval = at < 0 ? 1 : Number(args[at + 1]);
    const rateMatch = args.includes('--hashlimit-rate-match');
    // With rate matching, `-L` prints COUNT per interval as a rate (10 per 7 s: `123428/day`).
    const rate = (v: string): string => {
      if (!rateMatch || /b\//i.test(v)) return v;
      const count = Number(v.slice(0, v.indexOf('/')));
      return formatRate(Math.floor((interval * SCALE) / count));
    };
    // `-L` prints the expiry when it differs from the unit of the rate it prints, which with rate
    // matching is not the unit saved (`/sec`): it is decided again here.
    let expire: string | undefined;
    let listed = '';
    for (let i = 0; i < args.length; i++) {
      const w = (args[i] ?? '').replace(/^--hashlimit-/, '');
      const v = args[i + 1] ?? '';
      if (rateMatch && expire !== undefined && (w === 'htable-expire' || w === 'srcmask' || w === 'dstmask' || w === 'rate-match')) {
        if (Number(expire) !== unitOf(listed) * 1000) parts.push('htable-expire', expire);
        expire = undefined;
        if (w === 'htable-expire') {
          i++;
          continue;
        }
      }
      if (w === 'upto' || w === 'above') {
        listed = rate(v);
        parts.push(w === 'upto' ? 'up to' : 'above', listed);
        if (rateMatch && !/b\//i.test(v)) {
          const e = args.indexOf('--hashlimit-htable-expire');
          expire = e < 0 ? '1000' : (args[e + 1] ?? '1000');
        }
      } else if (w === 'mode') parts.push('mode', v.replace(/,/g, '-'));
      else if (w === 'name') {
        i++;
        continue;
      } else if (w === 'rate-match') {
        parts.push('rate-match');
        continue;
      } else parts.push(w, v);
      i++;
    }
    return parts.join(' ');
  },
};
