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
import { getaddrinfoV4 } from '../hostAddress.ts';

import type { Hook, Ipv4, Match, Rule, TableName, Target } from '../types.ts';

/** One option of an extension. */
export interface XtOption extends OptionSpec {
  /**
   * The canonical value printed back (throws a param Failure on a bad one). Gets the value words
   * and the state so far (for options that depend on others).
   */
  readonly parse?: (values: readonly string[], at: number, s: XtState, env: ParseEnv) => readonly string[];
  /** Stored (and printed) as this other option: an alternative spelling of one field. */
  readonly as?: string;
  /** XTOPT_MAND: the framework's final check requires it (after the extension's own). */
  readonly mand?: boolean;
  /** The options (names) it cannot be used with, checked by the framework's final check. */
  readonly excl?: readonly string[];
  /** The options (names) it needs, checked by the framework's final check. */
  readonly also?: readonly string[];
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
  /**
   * The old parse API (a `parse` callback instead of an xt_option_entry table): the framework checks
   * neither repeats nor `!`, which the module ignores unless its option's `parse` reads it.
   */
  readonly legacy?: boolean;
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
  /** For an old-API module: whether `!` preceded the option being parsed. */
  inverted = false;
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
    if (this.def.legacy !== true) this.use(use, spec);
    else this.state.inverted = use.invert;
    const values = spec.parse === undefined ? [...use.values] : spec.parse(use.values, use.argIndex + 1, this.state, env);
    this.state.given.set(spec.as ?? spec.name, { invert: use.invert && this.def.legacy !== true, values, argIndex: use.argIndex });
  }
  finish(env: ParseEnv): T {
    const given = new Set(this.state.given.keys());
    this.def.finish?.(this.state, env);
    xtFinalCheck(this.def, given);
    return this.make(xtWords(this.def, this.state));
  }
}

/**
 * The framework's final check (xtables_options_fcheck), run after the extension's own: options in
 * table order, each mandatory one given, then its `also` and `excl` partners in table order.
 */
function xtFinalCheck(def: XtDefinition, given: ReadonlySet<string>): void {
  for (const o of def.options) {
    const name = o.as ?? o.name;
    if (o.as !== undefined && o.mand !== true && o.excl === undefined && o.also === undefined) continue;
    if (!given.has(name)) {
      if (o.mand === true) throw paramProblem(`${def.name}: option "--${o.name}" must be specified\n`);
      continue;
    }
    for (const other of def.options) {
      if (other === o) continue;
      if (o.also?.includes(other.name) === true && !given.has(other.name)) {
        throw paramProblem(`${def.name}: option "--${o.name}" also requires "--${other.name}".\n`);
      }
      if (o.excl?.includes(other.name) === true && given.has(other.name)) {
        throw paramProblem(`${def.name}: option "--${o.name}" cannot be used together with "--${other.name}".\n`);
      }
    }
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

// ---------------------------------------------------------------------------------------------
// The xtables framework's typed option readers (xtoptions.c), each with the framework's messages.
// An option declares its type by using one of these in its `parse`.

function isSpaceCode(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13);
}

function digitOf(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const l = c | 0x20;
  return l >= 97 && l <= 102 ? l - 87 : 99;
}

const U64_MAX = 0xffffffffffffffffn;

/**
 * `strtoumax(text + from, &end, 0)` as xtables_strtoul calls it: blanks and one `+` skipped, a
 * leading `-` refused, `0x` hex or `0` octal; a value past 2^64-1 saturates above `U64_MAX` (ERANGE).
 * Undefined when no digit was read.
 */
export function strtoumax(text: string, from = 0): { value: bigint; end: number } | undefined {
  let i = from;
  while (i < text.length && isSpaceCode(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) === 45) return undefined;
  if (text.charCodeAt(i) === 43) i++;
  let base = 10;
  if (text.charCodeAt(i) === 48) {
    if ((text.charCodeAt(i + 1) | 0x20) === 120 && digitOf(text.charCodeAt(i + 2)) < 16) {
      base = 16;
      i += 2;
    } else base = 8;
  }
  const start = i;
  let v = 0n;
  const b = BigInt(base);
  for (; i < text.length; i++) {
    const d = digitOf(text.charCodeAt(i));
    if (d >= base) break;
    if (v <= U64_MAX) v = v * b + BigInt(d);
  }
  if (i === start) return undefined;
  return { value: v > U64_MAX ? U64_MAX + 1n : v, end: i };
}

/** The largest value of an XTTYPE_UINT* of `bits`. */
export function uintMax(bits: 8 | 16 | 32 | 64): bigint {
  return (1n << BigInt(bits)) - 1n;
}

/** XTTYPE_UINT8/16/32/64 (xtopt_parse_int): the whole word a number in [min, max]. */
export function xtInt(ext: string, opt: string, text: string, min: bigint, max: bigint, at?: number): bigint {
  const r = strtoumax(text);
  if (r === undefined || r.end !== text.length || r.value < min || r.value > max) {
    throw paramProblem(`${ext}: bad value for option "--${opt}", or out of range (${min}-${max}).\n`, at);
  }
  return r.value;
}

/** An XTTYPE_UINT* option's `parse`, printing the value in decimal. */
export function xtIntOption(ext: string, opt: string, bits: 8 | 16 | 32 | 64, min = 0n, max = uintMax(bits)): (v: readonly string[], at: number) => readonly string[] {
  return (v, at) => [String(xtInt(ext, opt, v[0] ?? '', min, max, at))];
}

/**
 * XTTYPE_UINT*RC (xtopt_parse_mint): up to `maxiter` numbers separated by `:`, an empty first
 * field 0 and an empty second the type's maximum.
 */
export function xtMint(ext: string, opt: string, text: string, lmax: bigint, at?: number, maxiter = 2): bigint[] {
  const out: bigint[] = [];
  let arg = 0;
  for (;;) {
    if (out.length === maxiter) throw paramProblem(`${ext}: Too many components for option "--${opt}" (max: ${maxiter})\n`, at);
    let end: number;
    let value: bigint;
    if (arg >= text.length || text[arg] === ':') {
      end = arg;
      value = out.length === 1 ? lmax : 0n;
    } else {
      const r = strtoumax(text, arg);
      if (r === undefined || r.value > lmax) {
        throw paramProblem(`${ext}: bad value for option "--${opt}" near "${text.slice(arg)}", or out of range (0-${lmax}).\n`, at);
      }
      end = r.end;
      value = r.value;
      if (end < text.length && text[end] !== ':') {
        throw paramProblem(`${ext}: Argument to "--${opt}" has unexpected characters near "${text.slice(end)}".\n`, at);
      }
    }
    out.push(value);
    if (end >= text.length) return out;
    arg = end + 1;
  }
}

/**
 * xtables_parse_val_mask (XTTYPE_MARKMASK32 and the `value[/mask]` options): unsigned 32-bit
 * numbers, the mask defaulting to all ones; a name from `names` (an lmap file) for the value.
 */
export function xtValMask(ext: string, opt: string, text: string, at?: number, names?: ReadonlyMap<string, number>): { value: number; mask: number } {
  const bad = (): never => {
    throw paramProblem(`${ext}: bad integer value for option "--${opt}", or out of range.\n`, at);
  };
  const byName = (): { value: number; mask: number } => {
    const n = names?.get(text);
    if (n === undefined) throw paramProblem(`${ext}: could not map name ${text} to an integer value for option "--${opt}".\n`, at);
    return { value: n, mask: 0xffffffff };
  };
  const garbage = (): never => {
    throw paramProblem(`${ext}: trailing garbage after value for option "--${opt}".\n`, at);
  };
  const v = strtoumax(text);
  if (v === undefined || v.value > 0xffffffffn) return names !== undefined ? byName() : bad();
  if (v.end === text.length) return { value: Number(v.value), mask: 0xffffffff };
  if (text[v.end] !== '/') return names !== undefined ? byName() : garbage();
  const m = strtoumax(text, v.end + 1);
  if (m === undefined || m.value > 0xffffffffn) return bad();
  if (m.end !== text.length) return garbage();
  return { value: Number(v.value), mask: Number(m.value) };
}

/** xtables_print_val_mask: `0x%x/0x%x`, or the value's name, or `0x%x`. */
export function valMaskText(value: number, mask: number, names?: ReadonlyMap<string, number>): string {
  if (mask >>> 0 !== 0xffffffff) return `${hexOf(value)}/${hexOf(mask)}`;
  if (names !== undefined) for (const [name, id] of names) if (id === value) return name;
  return hexOf(value);
}

/** XTTYPE_HOST (xtopt_parse_host): a numeric address or a hosts entry, netsim hosts having no DNS. */
export function xtHost(text: string, at?: number): Ipv4 {
  const a = getaddrinfoV4(text);
  if (a === undefined) throw paramProblem('getaddrinfo: Name or service not known\n', at);
  return a;
}

/**
 * An extension the kernel registers for one protocol (`.proto` of its xt_match/xt_target): the
 * nf_tables kernel refuses the rule unless `-p` names that protocol, not negated.
 */
export function kernelProto(env: ParseEnv, proto: number): void {
  if (env.proto !== proto || env.protoInvert) env.rejectRule('Invalid argument');
}
