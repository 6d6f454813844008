/**
 * @internal
 * `-m set` (libxt_set, revision 4), whole: `--match-set NAME src|dst[,…]` with the real tool's
 * checks, the counter options kept as given, the printed words and `-L` text, and evaluation
 * against the host's ipsets (`EvalContext.ipsetHas`); a set the context does not know, or a
 * counter condition, leaves the packet undecided.
 */
import { OptionTable, type ExtensionInstance } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import type { MatchModule } from '../matches.ts';
import { MATCH, NOMATCH, UNDECIDED, undecided, type ModTest } from '../matchers.ts';
import { quoteVerbatim } from '../tokenize.ts';
import type { Match } from '../types.ts';

type SetMatch = Extract<Match, { kind: 'set' }>;

const SET_OPTIONS = new OptionTable([
  { name: 'match-set', aliases: ['set'], args: 2, invert: true },
  { name: 'return-nomatch', args: 0 },
  { name: 'update-counters', args: 0, invert: true },
  { name: 'update-subcounters', args: 0, invert: true },
  { name: 'packets-eq', args: 1, invert: true },
  { name: 'packets-lt', args: 1 },
  { name: 'packets-gt', args: 1 },
  { name: 'bytes-eq', args: 1, invert: true },
  { name: 'bytes-lt', args: 1 },
  { name: 'bytes-gt', args: 1 },
]);

export const SET_MODULE: MatchModule = {
  name: 'set',
  kind: 'set',
  options: SET_OPTIONS,
  create(): ExtensionInstance<Match> {
    let setName: string | undefined;
    let flags: ('src' | 'dst')[] = [];
    let negate = false;
    const extra: string[] = [];
    return {
      name: 'set',
      spec: SET_OPTIONS,
      option(use) {
        if (use.name === 'match-set') {
          if (setName !== undefined) throw paramProblem('--match-set can be specified only once', use.argIndex);
          const name = use.values[0] ?? '';
          const dims = use.values[1] ?? '';
          if (name.length > 31) throw paramProblem(`setname \`${name}' too long, max 31 characters.`, use.argIndex + 1);
          const parts = dims.split(',');
          if (parts.length > 6) throw paramProblem("Can't be more src/dst options than 6.", use.argIndex + 2);
          flags = [];
          for (const p of parts) {
            if (p !== 'src' && p !== 'dst') {
              throw paramProblem("You must specify (the comma separated list of) 'src' or 'dst'.", use.argIndex + 2);
            }
            flags.push(p);
          }
          setName = name;
          negate = use.invert;
          return;
        }
        if (use.invert) extra.push('!');
        extra.push(`--${use.name}`, ...use.values);
      },
      finish() {
        if (setName === undefined) throw paramProblem("You must specify `--match-set' with proper arguments");
        return { kind: 'set', setName, flags, negate, ...(extra.length > 0 && { extra }) };
      },
    };
  },
  save(match, out) {
    const m = match as SetMatch;
    out.push('-m', 'set');
    if (m.negate) out.push('!');
    out.push('--match-set', quoteVerbatim(m.setName), m.flags.join(','));
    if (m.extra) for (const w of m.extra) out.push(quoteVerbatim(w));
  },
  list(match) {
    const m = match as SetMatch;
    let s = `${m.negate ? '! ' : ''}match-set ${m.setName} ${m.flags.join(',')}`;
    if (m.extra) s += ` ${m.extra.map((w) => w.replace(/^--/, '')).join(' ')}`;
    return s;
  },
  compile(match): ModTest {
    const m = match as SetMatch;
    const { setName, flags, negate } = m;
    if (m.extra !== undefined && m.extra.length > 0) return undecided(`set ${m.extra.join(' ')}`);
    const missing = `set "${setName}" (no such ipset)`;
    return {
      test: (w) => {
        const has = w.ctx.ipsetHas?.(setName, flags, w.packet);
        if (has === undefined) {
          w.why = missing;
          return UNDECIDED;
        }
        return has !== negate ? MATCH : NOMATCH;
      },
      sideEffect: false,
      undecidable: true,
    };
  },
};
