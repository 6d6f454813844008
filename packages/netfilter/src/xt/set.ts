/**
 * @internal
 * `-m set` (libxt_set, revision 4), whole: `--match-set NAME src|dst[,…]` with the real tool's
 * checks, the counter options kept as given, the printed words and `-L` text, and evaluation
 * against the host's ipsets (`EvalContext.ipsetHas`); a set the context does not know, or a
 * counter condition, leaves the packet undecided.
 */
import { OptionTable, type ExtensionInstance, type ParseEnv } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import type { MatchModule } from '../matches.ts';
import { MATCH, NOMATCH, UNDECIDED, undecided, type ModTest } from '../matchers.ts';
import { quoteVerbatim } from '../tokenize.ts';
import type { Match } from '../types.ts';
import { strtoumax, uintMax } from './define.ts';

type SetMatch = Extract<Match, { kind: 'set' }>;

// The old (non-guided) option API: every option may follow `!` as far as the framework goes; the
// module refuses it where it has no meaning.
const SET_OPTIONS = new OptionTable([
  { name: 'match-set', args: 2, invert: true },
  { name: 'set', args: 2, invert: true, multi: true },
  { name: 'return-nomatch', args: 0, invert: true, multi: true },
  { name: 'update-counters', args: 0, invert: true, multi: true },
  { name: 'packets-eq', args: 1, invert: true, multi: true },
  { name: 'packets-lt', args: 1, invert: true, multi: true },
  { name: 'packets-gt', args: 1, invert: true, multi: true },
  { name: 'bytes-eq', args: 1, invert: true, multi: true },
  { name: 'bytes-lt', args: 1, invert: true, multi: true },
  { name: 'bytes-gt', args: 1, invert: true, multi: true },
  { name: 'update-subcounters', args: 0, invert: true, multi: true },
]);

/** The set checks libxt_set.h shares between the match and the SET target, as they run. */
export function setNameChecks(name: string, at: number, env: ParseEnv): void {
  if (name.length > 31) throw paramProblem(`setname \`${name}' too long, max 31 characters.`, at);
  if (env.ipsetMissing(name)) throw paramProblem(`Set ${name} doesn't exist.\n`, at);
}

/** parse_dirs: up to six words, each starting `src` or `dst` (the rest of the word ignored). */
export function setDirs(text: string, at: number): ('src' | 'dst')[] {
  const parts = text.split(',');
  const flags: ('src' | 'dst')[] = [];
  for (const p of parts.slice(0, 6)) {
    if (p.startsWith('src')) flags.push('src');
    else if (p.startsWith('dst')) flags.push('dst');
    else throw paramProblem("You must spefify (the comma separated list of) 'src' or 'dst'.", at);
  }
  if (parts.length > 6) throw paramProblem("Can't be more src/dst options than 6.", at);
  return flags;
}

/** parse_counter: a whole unsigned 64-bit number. */
function counter(text: string, at: number): string {
  const r = strtoumax(text);
  if (r === undefined || r.end !== text.length || r.value > uintMax(64)) throw paramProblem(`Cannot parse ${text} as a counter value`, at);
  return String(r.value);
}

export const SET_MODULE: MatchModule = {
  name: 'set',
  kind: 'set',
  options: SET_OPTIONS,
  create(): ExtensionInstance<Match> {
    let setName: string | undefined;
    let flags: ('src' | 'dst')[] = [];
    let negate = false;
    let nomatch = false;
    let skipCounters = false;
    let skipSubcounters = false;
    const counters: { packets?: string[]; bytes?: string[] } = {};
    return {
      name: 'set',
      spec: SET_OPTIONS,
      option(use, env) {
        const at = use.argIndex;
        switch (use.name) {
          case 'set':
          case 'match-set': {
            if (use.name === 'set') env.warn('--set option deprecated, please use --match-set\n');
            if (setName !== undefined) throw paramProblem('--match-set can be specified only once', at);
            const name = use.values[0] ?? '';
            setNameChecks(name, at + 1, env);
            flags = setDirs(use.values[1] ?? '', at + 2);
            setName = name;
            negate = use.invert;
            return;
          }
          case 'return-nomatch':
            if (use.invert) throw paramProblem('--return-nomatch flag cannot be inverted', at);
            nomatch = true;
            return;
          case 'update-counters':
            if (use.invert) skipCounters = true;
            return;
          case 'update-subcounters':
            if (use.invert) skipSubcounters = true;
            return;
          default: {
            const [what, op] = use.name.split('-') as ['packets' | 'bytes', string];
            if (counters[what] !== undefined) throw paramProblem(`only one of the --${what}-[eq|lt|gt] is allowed`, at);
            if (use.invert && op !== 'eq') throw paramProblem(`--${use.name} option cannot be inverted`, at);
            counters[what] = [...(use.invert ? ['!'] : []), `--${use.name}`, counter(use.values[0] ?? '', at + 1)];
          }
        }
      },
      finish() {
        if (setName === undefined) throw paramProblem("You must specify `--match-set' with proper arguments");
        // The order iptables-save prints them in.
        const extra = [
          ...(nomatch ? ['--return-nomatch'] : []),
          ...(skipCounters ? ['!', '--update-counters'] : []),
          ...(skipSubcounters ? ['!', '--update-subcounters'] : []),
          ...(counters.packets ?? []),
          ...(counters.bytes ?? []),
        ];
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
