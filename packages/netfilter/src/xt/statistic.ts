/**
 * @internal
 * `-m statistic` (libxt_statistic), whole: `--mode random --probability P` (stored as the 31-bit
 * threshold `lround(P · 2^31)` and printed `%.11f`), `--mode nth --every N --packet P`, the real
 * tool's checks and messages, the printed words and `-L` text, and evaluation: one seeded draw or
 * one step of the rule's counter per evaluation (see statistic.ts for the state).
 */
import { OptionTable, OptionTracker, excludes, type ExtensionInstance } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import type { FastMatchReader } from '../fastCursor.ts';
import type { MatchModule } from '../matches.ts';
import { MATCH, NOMATCH, undecided, type ModTest } from '../matchers.ts';
import { parseUintBase0 } from '../names.ts';
import * as S from '../statistic.ts';
import type { Match } from '../types.ts';

type StatisticMatch = Extract<Match, { kind: 'statistic' }>;

// Local copies: module transforms turn each access to an imported function into a getter call.
const statisticNthMatches = S.statisticNthMatches;
const statisticRandomMatches = S.statisticRandomMatches;

const STATISTIC_OPTIONS = new OptionTable([
  { name: 'mode', args: 1 },
  { name: 'probability', args: 1, invert: true },
  { name: 'every', args: 1, invert: true },
  { name: 'packet', args: 1 },
]);

const TWO_31 = 0x80000000;
const probabilityTexts = new Map<number, string>(); // tidy-allow: memo of a pure function of the threshold

/**
 * The text `iptables-save` prints for a 31-bit probability threshold: `%.11f` of threshold/2^31,
 * rounded half to even on exact ties as glibc's printf does.
 */
export function probabilityText(threshold31: number): string {
  let text = probabilityTexts.get(threshold31);
  if (text !== undefined) return text;
  // threshold/2^31 * 10^11 = threshold * 5^11 / 2^20 exactly.
  const num = BigInt(threshold31) * 48828125n;
  let q = num >> 20n;
  const rem = num & 0xfffffn;
  const half = 0x80000n;
  if (rem > half || (rem === half && (q & 1n) === 1n)) q += 1n;
  const digits = q.toString().padStart(12, '0');
  text = `${digits.slice(0, -11)}.${digits.slice(-11)}`;
  if (probabilityTexts.size < 100_000) probabilityTexts.set(threshold31, text);
  return text;
}

/** The kernel threshold for a probability, as iptables computes it: lround(2^31 * p). */
export function probabilityThreshold(p: number): number {
  return Math.round(TWO_31 * p);
}

function parseProbability(text: string): number | undefined {
  // strtod: leading blanks, decimal or exponent form, "nan"/"inf" words; nothing may follow.
  const trimmed = text.replace(/^[ \t\n\v\f\r]+/, '');
  if (trimmed === '') return undefined;
  const lower = trimmed.toLowerCase();
  if (lower === 'nan' || lower.startsWith('nan(')) return Number.NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(trimmed) && !/^[+-]?(inf|infinity)$/i.test(trimmed)) {
    return trimmed.startsWith('0x') || trimmed.startsWith('0X') ? hexFloat(trimmed) : undefined;
  }
  return /inf/i.test(trimmed) ? (trimmed.startsWith('-') ? -Infinity : Infinity) : Number(trimmed);
}

function hexFloat(text: string): number | undefined {
  const n = Number(text);
  return Number.isNaN(n) ? undefined : n;
}

/** The fast reader's `--mode random --probability P`, P a plain decimal in [0, 1]; one match per probability. */
function fastStatistic(): FastMatchReader {
  const seen = new Map<number, Match>();
  return (c) => {
    if (!c.word('--mode') || !c.word('random') || !c.word('--probability')) return undefined;
    const end = c.wordEnd();
    if (end < 0) return undefined;
    const s = c.s;
    // d.ddd…: what iptables-save prints (other spellings go through the general parser's strtod).
    const c0 = s.charCodeAt(c.p);
    if ((c0 !== 48 && c0 !== 49) || s.charCodeAt(c.p + 1) !== 46 || end - c.p < 3) return undefined;
    for (let i = c.p + 2; i < end; i++) {
      const d = s.charCodeAt(i);
      if (d < 48 || d > 57) return undefined;
    }
    const p = Number(s.slice(c.p, end));
    if (!(p >= 0 && p <= 1)) return undefined;
    c.next(end);
    const threshold31 = probabilityThreshold(p);
    let m = seen.get(threshold31);
    if (m === undefined) {
      m = { kind: 'statistic', mode: 'random', probability: { text: probabilityText(threshold31), threshold31 }, negate: false };
      seen.set(threshold31, m);
    }
    return m;
  };
}

export const STATISTIC_MODULE: MatchModule = {
  name: 'statistic',
  kind: 'statistic',
  options: STATISTIC_OPTIONS,
  create(): ExtensionInstance<Match> {
    const t: OptionTracker = new OptionTracker('statistic', STATISTIC_OPTIONS);
    let mode: 'random' | 'nth' | undefined;
    let probability: { text: string; threshold31: number } | undefined;
    let every: number | undefined;
    let packet: number | undefined;
    let negate = false;
    return {
      name: 'statistic',
      spec: STATISTIC_OPTIONS,
      option(use) {
        t.use(use, STATISTIC_OPTIONS.exact(use.name)!);
        const v = use.values[0] ?? '';
        switch (use.name) {
          case 'mode':
            if (v !== 'random' && v !== 'nth') throw paramProblem(`Bad mode "${v}"`, use.argIndex + 1);
            mode = v;
            return;
          case 'probability': {
            if (t.has('every')) excludes('statistic', STATISTIC_OPTIONS, 'probability', 'every', use.argIndex);
            const p = parseProbability(v);
            if (p === undefined || p < 0 || p > 1) {
              throw paramProblem('statistic: bad value for option "--probability", or out of range (0-1).\n', use.argIndex + 1);
            }
            // NaN passes the range check in C as here; lround(NaN) is 0 on x86-64 glibc builds
            // that saturate, which is what iptables 1.8.9 printed.
            const threshold31 = Number.isNaN(p) ? 0 : probabilityThreshold(p);
            probability = { text: probabilityText(threshold31), threshold31 };
            if (use.invert) negate = true;
            return;
          }
          case 'every': {
            if (t.has('probability')) excludes('statistic', STATISTIC_OPTIONS, 'probability', 'every', use.argIndex);
            const n = parseUintBase0(v);
            if (n === undefined || n < 1 || n > 0xffffffff) {
              throw paramProblem('statistic: bad value for option "--every", or out of range (1-4294967295).\n', use.argIndex + 1);
            }
            every = n;
            if (use.invert) negate = true;
            return;
          }
          case 'packet': {
            const n = parseUintBase0(v);
            if (n === undefined || n > 0xffffffff) {
              throw paramProblem('statistic: bad value for option "--packet", or out of range (0-4294967295).\n', use.argIndex + 1);
            }
            packet = n;
            return;
          }
        }
      },
      finish() {
        // statistic_check runs before the framework's check of --mode, with the mode's default (random).
        if (mode === undefined && probability === undefined) throw paramProblem('--probability must be specified when using random mode');
        if (mode === undefined) t.missing('mode');
        if (every !== undefined && packet === undefined) {
          throw paramProblem('statistic: option "--every" also requires "--packet".\n');
        }
        if (mode === 'random') {
          if (probability === undefined) throw paramProblem('--probability must be specified when using random mode');
          if (every !== undefined || packet !== undefined) throw paramProblem('--every and --packet can only be used in nth mode');
          return { kind: 'statistic', mode, probability, negate };
        }
        if (every === undefined || packet === undefined) {
          throw paramProblem('--every and --packet must be specified when using nth mode');
        }
        if (probability !== undefined) throw paramProblem('--probability can only be used in random mode');
        if (packet > every - 1) throw paramProblem('the --packet p must be 0 <= p <= n-1');
        return { kind: 'statistic', mode, every, packet, negate };
      },
    };
  },
  save(match, out) {
    const m = match as StatisticMatch;
    out.push('-m', 'statistic', '--mode', m.mode);
    if (m.negate) out.push('!');
    if (m.mode === 'random') out.push('--probability', m.probability?.text ?? '0.00000000000');
    else out.push('--every', String(m.every ?? 1), '--packet', String(m.packet ?? 0));
  },
  list(match) {
    const m = match as StatisticMatch;
    if (m.mode === 'random') return `statistic mode random ${m.negate ? '! ' : ''}probability ${m.probability?.text ?? ''}`;
    return `statistic mode nth ${m.negate ? '! ' : ''}every ${m.every ?? 1}${m.packet ? ` packet ${m.packet}` : ''}`;
  },
  compile(match, rule): ModTest {
    const m = match as StatisticMatch;
    const negate = m.negate;
    if (m.mode === 'random') {
      if (m.probability === undefined) return undecided('statistic --mode random without --probability');
      const threshold = m.probability.threshold31;
      return {
        test: (w) => (statisticRandomMatches(threshold, negate, w.ctx.random31(threshold)) ? MATCH : NOMATCH),
        sideEffect: true,
        undecidable: false,
      };
    }
    const every = m.every ?? 0;
    const packet = m.packet ?? 0;
    if (every < 1) return undecided('statistic --mode nth without a valid --every');
    return {
      test: (w) => (statisticNthMatches(w.ctx.state, rule, every, packet, negate) ? MATCH : NOMATCH),
      sideEffect: true,
      undecidable: false,
    };
  },
  // A draw or a count: rules after it cannot be indexed past it.
  barrier: true,
  fast: fastStatistic,
};
