/**
 * @internal
 * Extensions netsim reads and prints but does not evaluate, each defined in one file of this
 * directory as libxt_*.c defines it in iptables: its option table (so that abbreviations resolve
 * within the module, as getopt does once the module is loaded), how each value is read and
 * printed back, the order `iptables-save` prints the options in, the defaults it prints, the final
 * checks with the tool's messages, and the `iptables -L` text. A definition becomes a match
 * (`-m name`) or target (`-j NAME`) module through {@link xtMatchModule}/{@link xtTargetModule};
 * `index.ts` lists them for the registries in `matches.ts` and `targets.ts`.
 *
 * The parsed form is the `unknown` match or target: its `args` are the canonical words, unquoted.
 */
import { OptionTable, OptionTracker, type ExtensionInstance, type OptionSpec, type OptionUse, type ParseEnv } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import type { MatchModule } from '../matches.ts';
import type { TargetModule } from '../targets.ts';
import { undecided, type ModTest } from '../matchers.ts';
import { quoteAlways, quoteVerbatim } from '../tokenize.ts';
import type { Hook, Match, Rule, TableName, Target } from '../types.ts';

/** One option of an extension. */
export interface XtOption extends OptionSpec {
  /**
   * The canonical value printed back (throws a param Failure on a bad one). Gets the value words
   * and the state so far (for options that depend on others).
   */
  readonly parse?: (values: readonly string[], at: number, s: XtState, env: ParseEnv) => readonly string[];
  /** Stored (and printed) as this other option: an alternative spelling of one field. */
  readonly as?: string;
}

/** One option as given: canonical values and `!`. */
export interface XtValue {
  invert: boolean;
  values: readonly string[];
  readonly argIndex: number;
}

export interface XtDefinition {
  /** `-m` name or `-j` target name. */
  readonly name: string;
  readonly options: readonly XtOption[];
  /** Order `iptables-save` prints options in (names); default: the options' order. */
  readonly order?: readonly string[];
  /** Options whose value is always printed in double quotes (string-typed in the real tool). */
  readonly quoted?: readonly string[];
  /** Final checks and defaults once the whole argv is read; may change `s`. */
  readonly finish?: (s: XtState, env: ParseEnv) => void;
  /** `iptables -L` text from the canonical words; default: the words without dashes. */
  readonly list?: (args: readonly string[], numeric: boolean) => string;
  /** The `-L` text follows the previous column without the usual blank. */
  readonly listGlued?: boolean;
  /** Tables the kernel accepts the extension in (all when absent). */
  readonly tables?: readonly TableName[];
  /** Hooks the kernel accepts the extension from, given its canonical words (all when absent). */
  readonly hooks?: (args: readonly string[]) => readonly Hook[] | undefined;
  /** iptables-save's own spacing: words printed for one option (default `--name value…`). */
  readonly saveWords?: (name: string, values: readonly string[], out: string[]) => void;
  /**
   * Evaluation from the canonical words: the closure, null for a match that always matches, or
   * undefined where netsim cannot decide it (default: every packet is undecided).
   */
  readonly compile?: (args: readonly string[], rule: Rule) => ModTest | null | undefined;
}

/** Options given so far, by canonical name. */
export class XtState {
  readonly given = new Map<string, XtValue>();
  constructor(readonly ext: string) {}
  has(name: string): boolean {
    return this.given.has(name);
  }
  get(name: string): XtValue | undefined {
    return this.given.get(name);
  }
  value(name: string): string | undefined {
    return this.given.get(name)?.values[0];
  }
  set(name: string, values: readonly string[], invert = false): void {
    const old = this.given.get(name);
    this.given.set(name, { invert, values, argIndex: old?.argIndex ?? -1 });
  }
  delete(name: string): void {
    this.given.delete(name);
  }
  /** The framework's message for a mandatory option that was not given. */
  missing(name: string): never {
    throw paramProblem(`${this.ext}: option "--${name}" must be specified\n`);
  }
}

class XtInstance<T> extends OptionTracker implements ExtensionInstance<T> {
  readonly state: XtState;
  constructor(
    readonly def: XtDefinition,
    readonly spec: OptionTable,
    private readonly make: (args: string[]) => T,
  ) {
    super(def.name, spec);
    this.state = new XtState(def.name);
  }
  get name(): string {
    return this.def.name;
  }
  option(use: OptionUse, env: ParseEnv): void {
    const spec = this.spec.exact(use.name) as XtOption;
    this.use(use, spec);
    const values = spec.parse === undefined ? [...use.values] : spec.parse(use.values, use.argIndex + 1, this.state, env);
    this.state.given.set(spec.as ?? spec.name, { invert: use.invert, values, argIndex: use.argIndex });
  }
  finish(env: ParseEnv): T {
    this.def.finish?.(this.state, env);
    return this.make(xtWords(this.def, this.state));
  }
}

/** The canonical words for the options in `s`, in the printed order. */
function xtWords(def: XtDefinition, s: XtState): string[] {
  const args: string[] = [];
  const order = def.order ?? def.options.filter((o) => o.as === undefined).map((o) => o.name);
  for (const name of order) {
    const v = s.given.get(name);
    if (v === undefined) continue;
    if (v.invert) args.push('!');
    args.push(`--${name}`, ...v.values);
  }
  return args;
}

const tables = new WeakMap<XtDefinition, OptionTable>(); // tidy-allow: one option table per definition, built once

function tableOf(def: XtDefinition): OptionTable {
  let t = tables.get(def);
  if (t === undefined) {
    t = new OptionTable(def.options);
    tables.set(def, t);
  }
  return t;
}

export interface XtMatchModule extends MatchModule {
  readonly def: XtDefinition;
}

export interface XtTargetModule extends TargetModule {
  readonly def: XtDefinition;
}

type Words = Extract<Match, { kind: 'unknown' }>;

export function xtMatchModule(def: XtDefinition): XtMatchModule {
  const options = tableOf(def);
  const { list, hooks, compile } = def;
  return {
    name: def.name,
    options,
    def,
    create: () => new XtInstance<Match>(def, options, (args) => ({ kind: 'unknown', module: def.name, args })),
    save: (m, out) => {
      out.push('-m', def.name);
      xtSaveWords(def, (m as Words).args, out, quoteVerbatim, quoteAlways);
    },
    list: list === undefined ? (m) => plainList(def.name, (m as Words).args) : (m, numeric) => list((m as Words).args, numeric),
    ...(hooks !== undefined && { hooks: (m: Match) => hooks((m as Words).args) }),
    ...(def.listGlued === true && { listGlued: true }),
    ...(compile !== undefined && {
      compile: (m: Match, rule: Rule) => {
        const t = compile((m as Words).args, rule);
        return t === undefined ? undecided(def.name) : t;
      },
    }),
  };
}

type TargetWords = Extract<Target, { kind: 'unknown' }>;

export function xtTargetModule(def: XtDefinition): XtTargetModule {
  const options = tableOf(def);
  const { list, hooks } = def;
  return {
    name: def.name,
    options,
    def,
    ...(def.tables !== undefined && { tables: def.tables }),
    ...(hooks !== undefined && { hooks: (t: Target) => hooks((t as TargetWords).args) }),
    create: () => new XtInstance<Target>(def, options, (args) => ({ kind: 'unknown', name: def.name, args })),
    save: (t, out) => xtSaveWords(def, (t as TargetWords).args, out, quoteVerbatim, quoteAlways),
    list: list === undefined ? (t) => (t as TargetWords).args.map((a) => a.replace(/^--/, '')).join(' ') : (t, numeric) => list((t as TargetWords).args, numeric),
  };
}

// ---------------------------------------------------------------------------------------------
// Value readers shared by the definitions (xtables' parsers and their messages)

/** strtoul with base 0 as xtables_strtoui reads it: decimal, 0x hex or 0 octal, the whole word. */
export function uintBase0(text: string): number | undefined {
  const m = /^[ \t\n\v\f\r]*\+?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)$/.exec(text);
  if (m === null) return undefined;
  const t = m[1] as string;
  const n = t.length > 1 && t[0] === '0' && (t[1] === 'x' || t[1] === 'X') ? parseInt(t.slice(2), 16) : t.length > 1 && t[0] === '0' ? parseInt(t, 8) : Number(t);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** An unsigned option in [min, max] with the framework's range message. */
export function uintIn(ext: string, min: number, max: number, opt: string): (v: readonly string[], at: number) => readonly string[] {
  return (v, at) => [String(uintValue(ext, v, at, min, max, opt))];
}

export function uintValue(ext: string, v: readonly string[], at: number, min: number, max: number, opt?: string): number {
  const n = uintBase0(v[0] ?? '');
  if (n === undefined || n < min || n > max) {
    throw paramProblem(`${ext}: bad value for option "--${opt ?? '?'}", or out of range (${min}-${max}).\n`, at);
  }
  return n;
}

/** `0x%x`. */
export function hexOf(n: number): string {
  return `0x${(n >>> 0).toString(16)}`;
}

/** `0x%02x`. */
export function hex2(n: number): string {
  return `0x${(n >>> 0).toString(16).padStart(2, '0')}`;
}

/** `0x%08x`. */
export function hex8(n: number): string {
  return `0x${(n >>> 0).toString(16).padStart(8, '0')}`;
}

/** `value[/mask]` (xtables_parse_mark_mask): unsigned 32-bit numbers, the mask defaulting to all ones. */
export function markMask(text: string): { value: number; mask: number } | undefined {
  const slash = text.indexOf('/');
  const value = uintBase0(slash < 0 ? text : text.slice(0, slash));
  if (value === undefined || value > 0xffffffff) return undefined;
  if (slash < 0) return { value, mask: 0xffffffff };
  const mask = uintBase0(text.slice(slash + 1));
  if (mask === undefined || mask > 0xffffffff) return undefined;
  return { value, mask };
}

/** The value after option `--name` in canonical words, and whether a `!` preceded it. */
export function argOf(args: readonly string[], name: string): { value: string; invert: boolean } | undefined {
  const k = args.indexOf(`--${name}`);
  if (k < 0) return undefined;
  return { value: args[k + 1] ?? '', invert: args[k - 1] === '!' };
}

/** The list text most extensions print in `iptables -L`: the words without leading dashes. */
export function plainList(name: string, args: readonly string[]): string {
  return [name, ...args.map((a) => a.replace(/^--/, ''))].join(' ');
}

/**
 * The words `iptables-save` prints for an extension's canonical words: string-typed values quoted
 * always, others only when they could not be read back as one word.
 */
export function xtSaveWords(def: XtDefinition, args: readonly string[], out: string[], quoteWord: (w: string) => string, quoteAlways: (w: string) => string): void {
  const table = tableOf(def);
  for (let i = 0; i < args.length; i++) {
    const w = args[i] as string;
    if (w === '!' || !w.startsWith('--')) {
      out.push(quoteWord(w));
      continue;
    }
    const name = w.slice(2);
    const n = table.exact(name)?.args ?? 0;
    const values = args.slice(i + 1, i + 1 + n);
    i += n;
    if (def.saveWords !== undefined) {
      def.saveWords(name, values, out);
      continue;
    }
    out.push(w);
    const always = def.quoted?.includes(name) === true;
    for (const v of values) out.push(always ? quoteAlways(v) : quoteWord(v));
  }
}
