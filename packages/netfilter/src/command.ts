/**
 * @internal
 * The `iptables` command line as the real tool reads it (one getopt pass, then final checks),
 * shared by `exec` (argv), `iptables-restore` lines and `parseSave`. The result is a command and,
 * for rule commands, the rule(s) in canonical form: exactly what `iptables-save` would print back.
 *
 * Reading order and messages follow iptables 1.8.9 (nf_tables): options are handled left to right
 * (so `-m multiport --dports 80 -p tcp` fails where the real tool fails), then the extensions' final
 * checks, then the addresses (`-s a,b` makes one rule per address), then the command checks.
 */
import { badArgument, Failure, paramProblem } from './failure.ts';
import type { ExtensionInstance, OptionSpec, OptionTable, ParseEnv } from './extension.ts';
import { xtablesHost, xtablesMask } from './hostAddress.ts';
import { prefixMask } from './ip.ts';
import { IPTABLES_MATCH_NAMES, matchModule, matchModuleOfKind, matchModules } from './matches.ts';
import { lookupProtocol } from './names.ts';
import { IPTABLES_TARGET_NAMES, STANDARD_TARGETS, targetModule, targetModules } from './targets.ts';
import { WordTable } from './tokenize.ts';
import { isTableName } from './ruleset.ts';
import type { Cidr, Counters, ProtoMatch, IfaceMatch, Ipv4, Match, Rule, TableName, Target } from './types.ts';

export type CommandLetter = 'A' | 'C' | 'D' | 'I' | 'R' | 'L' | 'S' | 'F' | 'Z' | 'N' | 'X' | 'P' | 'E';

export interface ParsedCommand {
  readonly command: CommandLetter;
  /** `-L` given together with `-Z`. */
  readonly zero: boolean;
  readonly table: TableName;
  readonly chain?: string;
  readonly ruleNum?: number;
  /** `-E old new`: the new name. */
  readonly newName?: string;
  /** `-P chain target`: the target word. */
  readonly policy?: string;
  /** The rule(s) of `-A/-I/-R/-D/-C` with a rule spec (one per `-s`/`-d` address pair). */
  readonly rules: readonly Rule[];
  /** Set when the kernel would refuse the rule: the errno text (`Invalid argument`). */
  readonly kernelRejects?: string;
  readonly numeric: boolean;
  readonly verbose: boolean;
  readonly exact: boolean;
  readonly lineNumbers: boolean;
  /** argv index of the chain word, for error locations. */
  readonly chainArgIndex?: number;
  /** argv index of the target name word (after `-j`/`-g`), for error locations. */
  readonly targetArgIndex?: number;
  /** Warnings the real tool prints on stderr without failing. */
  readonly warnings: readonly string[];
}

export interface CommandEnv {
  /** `restore` forbids `-t` and takes the table from the `*table` line. */
  readonly mode: 'iptables' | 'restore';
  readonly table?: TableName;
  /**
   * The user chain `name` of `table` as the table spells it (the same string object, so later
   * lookups by it are fast), or undefined when there is none (for `-j`/`-g`).
   */
  userChain(table: TableName, name: string): string | undefined;
  /**
   * Optionally, the `-j`/`-g` target object for an existing user chain, shared by every rule that
   * jumps there (rules are immutable data, so sharing is safe and saves a copy per rule).
   */
  jumpTo?(table: TableName, name: string, isGoto: boolean): Target | undefined;
  /** When given, `-m set --match-set NAME` must name an existing ipset, as on a real host. */
  ipsetExists?(name: string): boolean;
  /**
   * iptables-restore does not check `-j CHAIN` while reading a line: the kernel refuses the jump
   * when the table commits. Returning true accepts the jump (the caller reports it later).
   */
  acceptMissingChain?(name: string): boolean;
  /**
   * iptables-restore announces every chain it reads a `:NAME` line for as "not a target"
   * (libxtables' notargets list): a later `-j NAME` then jumps to the chain even where a target
   * extension has that name (`CLASSIFY`, `LOG`, …). `iptables` argv announces nothing.
   */
  notTarget?(name: string): boolean;
}

interface CoreOption {
  readonly letter: string;
  /** 0: flag; 1: one value; 'opt': an optional value (`-w [secs]`). */
  readonly args: 0 | 1 | 'opt';
}

/** iptables' own long options (the getopt table before extensions merge theirs in). */
const CORE_LONG: ReadonlyMap<string, CoreOption> = new Map<string, CoreOption>([
  ['append', { letter: 'A', args: 1 }],
  ['delete', { letter: 'D', args: 1 }],
  ['check', { letter: 'C', args: 1 }],
  ['insert', { letter: 'I', args: 1 }],
  ['replace', { letter: 'R', args: 1 }],
  ['list', { letter: 'L', args: 'opt' }],
  ['list-rules', { letter: 'S', args: 'opt' }],
  ['flush', { letter: 'F', args: 'opt' }],
  ['zero', { letter: 'Z', args: 'opt' }],
  ['new-chain', { letter: 'N', args: 1 }],
  ['delete-chain', { letter: 'X', args: 'opt' }],
  ['rename-chain', { letter: 'E', args: 1 }],
  ['policy', { letter: 'P', args: 1 }],
  ['source', { letter: 's', args: 1 }],
  ['src', { letter: 's', args: 1 }],
  ['destination', { letter: 'd', args: 1 }],
  ['dst', { letter: 'd', args: 1 }],
  ['protocol', { letter: 'p', args: 1 }],
  ['in-interface', { letter: 'i', args: 1 }],
  ['jump', { letter: 'j', args: 1 }],
  ['table', { letter: 't', args: 1 }],
  ['match', { letter: 'm', args: 1 }],
  ['numeric', { letter: 'n', args: 0 }],
  ['out-interface', { letter: 'o', args: 1 }],
  ['verbose', { letter: 'v', args: 0 }],
  ['wait', { letter: 'w', args: 'opt' }],
  ['wait-interval', { letter: 'W', args: 1 }],
  ['exact', { letter: 'x', args: 0 }],
  ['fragment', { letter: 'f', args: 0 }],
  ['version', { letter: 'V', args: 0 }],
  ['help', { letter: 'h', args: 0 }],
  ['line-numbers', { letter: '0', args: 0 }],
  ['modprobe', { letter: 'M', args: 1 }],
  ['set-counters', { letter: 'c', args: 1 }],
  ['goto', { letter: 'g', args: 1 }],
  ['ipv4', { letter: '4', args: 0 }],
  ['ipv6', { letter: '6', args: 0 }],
]);

/** Core long options by their whole word (`--append`), with their owner record made once. */
const CORE_LONG_WORD: ReadonlyMap<string, Owner> = new Map(
  [...CORE_LONG].map(([name, opt]) => [`--${name}`, { type: 'core', name, opt } as const]),
);

/** Short options: letter → number of values (getopt's "-A:C:D:R:I:L::S::M:F::Z::N:X::E:P:Vh::o:p:s:d:j:i:fbvw::W::nt:m:xc:g:46"). */
const CORE_SHORT: ReadonlyMap<string, 0 | 1 | 'opt'> = new Map<string, 0 | 1 | 'opt'>([
  ['A', 1], ['C', 1], ['D', 1], ['R', 1], ['I', 1], ['L', 'opt'], ['S', 'opt'], ['M', 1], ['F', 'opt'],
  ['Z', 'opt'], ['N', 1], ['X', 'opt'], ['E', 1], ['P', 1], ['V', 0], ['h', 'opt'], ['o', 1], ['p', 1],
  ['s', 1], ['d', 1], ['j', 1], ['i', 1], ['f', 0], ['v', 0], ['w', 'opt'], ['W', 'opt'], ['n', 0],
  ['t', 1], ['m', 1], ['x', 0], ['c', 1], ['g', 1], ['4', 0], ['6', 0],
]);

/** Option letters checked against the command (iptables' commands_v_options), as bits. */
const OPT_COLUMNS = ['n', 's', 'd', 'p', 'j', 'v', 'x', 'i', 'o', '0', 'c', 'f'] as const;
type OptColumn = (typeof OPT_COLUMNS)[number];
const OPT_BIT: Readonly<Record<string, number>> = Object.fromEntries(OPT_COLUMNS.map((c, k) => [c, 1 << k]));
const OPT_N = 1 << OPT_COLUMNS.indexOf('n');
const OPT_V = 1 << OPT_COLUMNS.indexOf('v');
const OPT_X = 1 << OPT_COLUMNS.indexOf('x');
const OPT_LINE = 1 << OPT_COLUMNS.indexOf('0');

function bitsOf(letters: string): number {
  let bits = 0;
  for (const l of letters.split(' ')) bits |= OPT_BIT[l] ?? 0;
  return bits;
}

/** Per command, the option letters it refuses ("x" in the real table). */
const ILLEGAL_TEXT: Readonly<Record<string, string>> = {
  I: 'n x 0',
  D: 'n x 0 c',
  DNUM: 'n s d p j x i o 0 c f',
  R: 'n x 0',
  A: 'n x 0',
  L: 's d p j i o c f',
  F: 'n s d p j x i o 0 c f',
  Z: 'n s d p j x i o 0 c f',
  N: 'n s d p j x i o 0 c f',
  X: 'n s d p j x i o 0 c f',
  P: 'n s d p j x i o 0 f',
  E: 'n s d p j x i o 0 c f',
  S: 'n s d p j x i o 0 c f',
  C: 'n x 0 c',
};
const ILLEGAL: Readonly<Record<string, number>> = Object.fromEntries(Object.entries(ILLEGAL_TEXT).map(([k, v]) => [k, bitsOf(v)]));

function optName(col: OptColumn): string {
  return col === '0' ? '--line-numbers' : `-${col}`;
}

const NO_WARNINGS: readonly string[] = Object.freeze([]);

// Immutable parts many rules share, made once: rules are data, so sharing them is safe and
// spares the garbage collector a copy per rule.
const ACCEPT: Target = Object.freeze({ kind: 'ACCEPT' });
const DROP: Target = Object.freeze({ kind: 'DROP' });
const RETURN: Target = Object.freeze({ kind: 'RETURN' });
export { ACCEPT as ACCEPT_TARGET, DROP as DROP_TARGET, RETURN as RETURN_TARGET };
const PROTO_MATCHES: readonly ProtoMatch[] = Object.freeze(
  Array.from({ length: 512 }, (_, k) => Object.freeze({ proto: k >> 1, negate: (k & 1) === 1 })),
);

/** The shared `-p` match for protocol number `proto` (0..255). */
export function protoMatch(proto: number, negate: boolean): ProtoMatch {
  return PROTO_MATCHES[proto * 2 + (negate ? 1 : 0)] as ProtoMatch;
}
const NO_ADDRESS: readonly (Cidr | undefined)[] = Object.freeze([undefined]);

/** Chain names may be at most 28 characters (XT_EXTENSION_MAXNAMELEN - 1). */
const CHAIN_NAME_MAX = 28;
const IFNAMSIZ = 16;

/** `--name=value` splits at the first `=` for long options, as getopt_long does. */
function splitLong(word: string): { name: string; inline: string | undefined } {
  const eq = word.indexOf('=');
  return eq < 0 ? { name: word.slice(2), inline: undefined } : { name: word.slice(2, eq), inline: word.slice(eq + 1) };
}

interface LoadedExt<T> {
  readonly instance: ExtensionInstance<T>;
  /** argv index of the extension's name word (`-m tcp`: of `tcp`). */
  readonly at: number;
  /** An older instance of the same extension stops receiving options once a newer one loads. */
  completed: boolean;
}

/** An extension netsim does not model: its words are kept in order, verbatim. */
interface UnknownExt {
  readonly kind: 'match' | 'target';
  readonly name: string;
  readonly args: string[];
}

/** Runs an extension's final check, blaming its name word when the check names no word itself. */
function finishAt<T>(ext: LoadedExt<T>, env: ParseEnv): T {
  try {
    return ext.instance.finish(env);
  } catch (e) {
    if (e instanceof Failure && e.argIndex === undefined) e.argIndex = ext.at;
    throw e;
  }
}

type Owner =
  | { readonly type: 'core'; readonly name: string; readonly opt: CoreOption }
  | { readonly type: 'match'; readonly index: number; readonly spec: OptionSpec }
  | { readonly type: 'target'; readonly spec: OptionSpec };

/**
 * Parses an `iptables` argv (without the program name) into a command. Throws a {@link Failure}
 * whose `argIndex` points at the offending word when one is to blame.
 */
export function parseCommand(args: readonly string[], env: CommandEnv): ParsedCommand {
  // One parser is reused (taken out while in use, so a nested call gets its own): parsing a large
  // dump then allocates little besides what the rules keep.
  const p = spare ?? new CommandParser();
  spare = undefined;
  try {
    p.reset(args, env);
    return p.parse();
  } catch (e) {
    throw p.withWarnings(e);
  } finally {
    // Drop the caller's objects (a restore's environment holds its whole state) before parking.
    p.reset(NO_ARGS, NO_ENV);
    spare = p;
  }
}

let spare: CommandParser | undefined; // tidy-allow: a parser object reused for speed, reset on every call; it carries nothing between calls

const NO_ARGS: readonly string[] = Object.freeze([]);
const NO_ENV: CommandEnv = { mode: 'restore', userChain: () => undefined };

/** Implements the extensions' {@link ParseEnv} itself, so parsing a rule allocates little. */
class CommandParser implements ParseEnv {
  private args: readonly string[] = NO_ARGS;
  private env: CommandEnv = NO_ENV;
  private i = 0;
  private invert = false;
  private command: CommandLetter | undefined = undefined;
  private zero = false;
  private commandArgIndex = 0;
  private chain: string | undefined = undefined;
  private chainArgIndex: number | undefined = undefined;
  private ruleNum: number | undefined = undefined;
  private newName: string | undefined = undefined;
  private policy: string | undefined = undefined;
  table: TableName = 'filter';
  private tableGiven = false;
  /** Option letters given so far, as OPT_BIT bits. */
  private options = 0;
  private srcText: string | undefined = undefined;
  private srcInvert = false;
  private srcArgIndex = 0;
  private dstText: string | undefined = undefined;
  private dstInvert = false;
  private dstArgIndex = 0;
  private inIface: IfaceMatch | undefined = undefined;
  private outIface: IfaceMatch | undefined = undefined;
  proto: number | undefined = undefined;
  protoInvert = false;
  private protoText: string | undefined = undefined;
  private protoLoaded = false;
  private fragment: { negate: boolean } | undefined = undefined;
  private counters: Counters | undefined = undefined;
  /** Matches in load order: typed instances or verbatim unknown ones. */
  private matches: (LoadedExt<Match | null> | UnknownExt)[] = [];
  private target: LoadedExt<Target> | UnknownExt | undefined = undefined;
  /** A target needing no extension: a verdict, a jump or a goto. */
  private fixedTarget: Target | undefined = undefined;
  private targetArgIndex = 0;
  /** The last verbatim extension loaded: unclaimed options go to it. */
  private lastUnknown: UnknownExt | undefined = undefined;
  private kernelRejects: string | undefined = undefined;
  private warnings: readonly string[] = NO_WARNINGS;
  private readonly use: { name: string; invert: boolean; values: string[]; argIndex: number } = { name: '', invert: false, values: [], argIndex: 0 };

  reset(args: readonly string[], env: CommandEnv): void {
    this.args = args;
    this.env = env;
    this.i = 0;
    this.invert = false;
    this.command = undefined;
    this.zero = false;
    this.commandArgIndex = 0;
    this.chain = undefined;
    this.chainArgIndex = undefined;
    this.ruleNum = undefined;
    this.newName = undefined;
    this.policy = undefined;
    this.table = env.table ?? 'filter';
    this.tableGiven = false;
    this.options = 0;
    this.srcText = undefined;
    this.srcInvert = false;
    this.srcArgIndex = 0;
    this.dstText = undefined;
    this.dstInvert = false;
    this.dstArgIndex = 0;
    this.inIface = undefined;
    this.outIface = undefined;
    this.proto = undefined;
    this.protoInvert = false;
    this.protoText = undefined;
    this.protoLoaded = false;
    this.fragment = undefined;
    this.counters = undefined;
    this.matches = [];
    this.target = undefined;
    this.fixedTarget = undefined;
    this.targetArgIndex = 0;
    this.lastUnknown = undefined;
    this.kernelRejects = undefined;
    this.warnings = NO_WARNINGS;
  }

  rejectRule(errno: string): void {
    this.kernelRejects ??= errno;
  }

  warn(text: string): void {
    if (this.warnings === NO_WARNINGS) this.warnings = [];
    (this.warnings as string[]).push(text);
  }

  ipsetMissing(name: string): boolean {
    return this.env.ipsetExists !== undefined && !this.env.ipsetExists(name);
  }

  /** A failure with the warnings printed before it (the real tool prints them as it parses). */
  withWarnings(e: unknown): unknown {
    if (this.warnings.length === 0 || !(e instanceof Failure)) return e;
    return new Failure(e.kind, e.message, { ...(e.argIndex !== undefined && { argIndex: e.argIndex }), bare: e.bare, prefixed: e.prefixed, warning: this.warnings.join('') + e.warning });
  }

  parse(): ParsedCommand {
    const args = this.args;
    while (this.i < args.length) {
      const word = args[this.i] as string;
      const at = this.i;
      if (word === '!') {
        if (this.invert) throw paramProblem('multiple consecutive ! not allowed', at);
        this.invert = true;
        this.i++;
        continue;
      }
      if (word.length > 1 && word.charCodeAt(0) === 45 /* - */) {
        if (word.charCodeAt(1) === 45) this.longOption(word, at);
        else this.shortOptions(word, at);
        continue;
      }
      throw badArgument(word, at);
    }
    return this.finish();
  }

  // -------------------------------------------------------------------------------------------
  // Option dispatch

  private longOption(word: string, at: number): void {
    // Most words are whole option names: look them up as they are, slicing only when needed.
    let owner = this.resolveWord(word);
    let name: string | undefined;
    let inline: string | undefined;
    if (owner === undefined) {
      ({ name, inline } = splitLong(word));
      owner = this.resolveLong(name);
    }
    if (owner === undefined && this.loadProtoFor(name ?? word.slice(2))) owner = this.resolveLong(name ?? word.slice(2));
    if (owner === undefined) {
      if (this.lastUnknown !== undefined || this.loadUnknownProto()) {
        this.unknownOption(word, at);
        return;
      }
      throw paramProblem(`unknown option "${word}"`, at);
    }
    this.i++;
    if (owner.type === 'core') {
      const value = this.takeValue(owner.opt.args, inline, word, at);
      this.core(owner.opt.letter, value, at, word);
      return;
    }
    this.extensionOption(owner, inline, word, at);
  }

  private shortOptions(word: string, at: number): void {
    this.i++;
    if (word.length === 2) {
      // The usual case, "-A": no bundle, no attached value.
      const letter = word[1] as string;
      const args = CORE_SHORT.get(letter);
      if (args === undefined) throw paramProblem(`unknown option "${word}"`, at);
      this.core(letter, args === 0 ? undefined : this.takeValue(args, undefined, word, at), at, word);
      return;
    }
    // getopt bundles: "-nvL" is -n -v -L; a letter taking a value takes the rest of the word.
    for (let k = 1; k < word.length; k++) {
      const letter = word[k] as string;
      const args = CORE_SHORT.get(letter);
      if (args === undefined) throw paramProblem(`unknown option "${k === 1 ? word : `-${letter}`}"`, at);
      const rest = word.slice(k + 1);
      if (args !== 0 && rest !== '') {
        this.core(letter, rest, at, `-${letter}`);
        return;
      }
      const value = args === 0 ? undefined : this.takeValue(args, undefined, `-${letter}`, at);
      this.core(letter, value, at, `-${letter}`);
    }
  }

  /** The value word of an option: inline (`--x=v`), the next word, or none for optional ones. */
  private takeValue(args: 0 | 1 | 'opt', inline: string | undefined, shown: string, at: number): string | undefined {
    if (args === 0) return undefined;
    if (inline !== undefined) return inline;
    if (args === 'opt') return undefined;
    if (this.i >= this.args.length) throw paramProblem(`option "${shown}" requires an argument`, at);
    return this.args[this.i++];
  }

  /** The next word if it is not an option (iptables' optional command arguments). */
  private optionalWord(): string | undefined {
    const w = this.args[this.i];
    if (w !== undefined && w.charCodeAt(0) !== 45 && w !== '!') {
      this.i++;
      return w;
    }
    return undefined;
  }

  /** Exact lookup of a whole `--name` word (no `=value`): core, the target, then the matches. */
  private resolveWord(word: string): Owner | undefined {
    const core = CORE_LONG_WORD.get(word);
    if (core !== undefined) return core;
    const t = this.target;
    if (t !== undefined && 'instance' in t) {
      const spec = t.instance.spec.exactWord(word);
      if (spec !== undefined) return { type: 'target', spec };
    }
    for (let k = this.matches.length - 1; k >= 0; k--) {
      const m = this.matches[k] as LoadedExt<Match | null> | UnknownExt;
      if (!('instance' in m) || m.completed) continue;
      const spec = m.instance.spec.exactWord(word);
      if (spec !== undefined) return { type: 'match', index: k, spec };
    }
    return undefined;
  }

  private resolveLong(name: string): Owner | undefined {
    // Exact names first: core, then the target, then the latest instance of each match.
    const core = CORE_LONG.get(name);
    if (core !== undefined) return { type: 'core', name, opt: core };
    const t = this.target;
    if (t !== undefined && 'instance' in t) {
      const spec = t.instance.spec.exact(name);
      if (spec !== undefined) return { type: 'target', spec };
    }
    for (let k = this.matches.length - 1; k >= 0; k--) {
      const m = this.matches[k] as LoadedExt<Match | null> | UnknownExt;
      if (!('instance' in m) || m.completed) continue;
      const spec = m.instance.spec.exact(name);
      if (spec !== undefined) return { type: 'match', index: k, spec };
    }
    // Then unambiguous prefixes across everything loaded.
    const found: Owner[] = [];
    const seen = new Set<unknown>();
    for (const [n, opt] of CORE_LONG) {
      if (n.startsWith(name) && !seen.has(opt.letter)) {
        seen.add(opt.letter);
        found.push({ type: 'core', name: n, opt });
      }
    }
    if (t !== undefined && 'instance' in t) {
      for (const spec of t.instance.spec.prefixed(name)) found.push({ type: 'target', spec });
    }
    for (let k = 0; k < this.matches.length; k++) {
      const m = this.matches[k] as LoadedExt<Match | null> | UnknownExt;
      if (!('instance' in m) || m.completed) continue;
      for (const spec of m.instance.spec.prefixed(name)) found.push({ type: 'match', index: k, spec });
    }
    return found.length === 1 ? found[0] : undefined;
  }

  /** iptables loads the `-p` protocol's match when an option is not understood (`-p tcp --dport`). */
  private loadProtoFor(name: string): boolean {
    if (this.protoLoaded || this.protoText === undefined) return false;
    const mod = matchModule(this.protoModuleName());
    if (mod === undefined) return false;
    const table: OptionTable = mod.options;
    if (table.exact(name) === undefined && table.prefixed(name).length === 0) return false;
    this.protoLoaded = true;
    this.loadMatch(mod.name);
    return true;
  }

  /** The implicit match of a protocol netsim does not model (sctp, dccp, …), loaded verbatim. */
  private loadUnknownProto(): boolean {
    if (this.protoLoaded || this.protoText === undefined) return false;
    const name = this.protoModuleName();
    if (!IPTABLES_MATCH_NAMES.has(name) || matchModule(name) !== undefined) return false;
    this.protoLoaded = true;
    this.loadMatch(name);
    return true;
  }

  private protoModuleName(): string {
    return this.proto === undefined ? '' : (PROTO_MODULES.get(this.proto) ?? this.protoText ?? '');
  }

  private unknownOption(word: string, at: number): void {
    const ext = this.lastUnknown as UnknownExt;
    if (this.invert) {
      ext.args.push('!');
      this.invert = false;
    }
    ext.args.push(word);
    this.i = at + 1;
    // The option's values: following words that are not options themselves.
    while (this.i < this.args.length) {
      const w = this.args[this.i] as string;
      if (w === '!' || (w.length > 1 && w.charCodeAt(0) === 45 && !/^-[0-9]/.test(w))) break;
      ext.args.push(w);
      this.i++;
    }
  }

  private extensionOption(owner: Exclude<Owner, { type: 'core' }>, inline: string | undefined, word: string, at: number): void {
    const spec = owner.spec;
    // One mutable option record serves every call: extensions read it and keep nothing of it.
    const use = this.use;
    const values = use.values;
    values.length = 0;
    if (spec.args >= 1) {
      if (inline !== undefined) values.push(inline);
      else {
        if (this.i >= this.args.length) throw paramProblem(`option "${word}" requires an argument`, at);
        values.push(this.args[this.i++] as string);
      }
    }
    if (spec.args === 2) {
      const w = this.args[this.i];
      if (w === undefined || w.charCodeAt(0) === 45 || w.charCodeAt(0) === 33) {
        throw paramProblem(spec.pairMessage ?? `--${spec.name} requires two args.`, at);
      }
      values.push(w);
      this.i++;
    }
    use.name = spec.name;
    use.invert = this.invert;
    use.argIndex = at;
    this.invert = false;
    if (owner.type === 'target') {
      const t = this.target as LoadedExt<Target>;
      t.instance.option(use, this);
    } else {
      const m = this.matches[owner.index] as LoadedExt<Match | null>;
      m.instance.option(use, this);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Core options

  private setCommand(letter: CommandLetter, at: number): void {
    if (this.command !== undefined) {
      const pair = `${this.command}${letter}`;
      if (pair === 'LZ' || pair === 'ZL') {
        this.command = 'L';
        this.zero = true;
        return;
      }
      throw paramProblem(`Cannot use -${letter} with -${this.command}`, at);
    }
    this.command = letter;
    this.commandArgIndex = at;
  }

  private noInvert(letter: string, at: number): void {
    if (this.invert) {
      throw paramProblem(letter === 'm' ? 'unexpected ! flag before --match' : `cannot have ! before -${letter}`, at);
    }
  }

  private once(letter: string, at: number): void {
    const bit = OPT_BIT[letter] ?? 0;
    if ((this.options & bit) !== 0) throw paramProblem(`multiple -${letter} flags not allowed`, at);
    this.options |= bit;
  }

  private core(letter: string, value: string | undefined, at: number, shown: string): void {
    switch (letter) {
      case 'A':
      case 'C':
      case 'N':
      case 'E':
      case 'P':
      case 'D':
      case 'I':
      case 'R':
        this.noInvert(letter, at);
        this.setCommand(letter, at);
        this.chain = value;
        this.chainArgIndex = this.args[at] === shown ? at + 1 : at;
        if (letter === 'N') this.checkNewChainName(value ?? '', at + 1);
        if (letter === 'E') {
          const w = this.optionalWord();
          if (w === undefined) throw paramProblem('-E requires old-chain-name and new-chain-name', at);
          this.newName = w;
        } else if (letter === 'P') {
          const w = this.optionalWord();
          if (w === undefined) throw paramProblem('-P requires a chain and a policy', at);
          this.policy = w;
        } else if (letter === 'D' || letter === 'I') {
          const w = this.optionalWord();
          if (w !== undefined) this.ruleNum = this.parseRuleNum(w, this.i - 1);
        } else if (letter === 'R') {
          const w = this.optionalWord();
          if (w === undefined) throw paramProblem('-R requires a rule number', at);
          this.ruleNum = this.parseRuleNum(w, this.i - 1);
        }
        return;
      case 'L':
      case 'S':
      case 'F':
      case 'Z':
      case 'X': {
        this.noInvert(letter, at);
        this.setCommand(letter, at);
        const chain = value ?? this.optionalWord();
        if (chain !== undefined) {
          this.chain = chain;
          this.chainArgIndex = value !== undefined ? at : this.i - 1;
          if (letter === 'L' || letter === 'S' || letter === 'Z') {
            const w = this.optionalWord();
            if (w !== undefined) this.ruleNum = this.parseRuleNum(w, this.i - 1);
          }
        }
        return;
      }
      case 't':
        this.noInvert(letter, at);
        if (this.env.mode === 'restore') throw paramProblem('The -t option cannot be used in iptables-restore.\n', at);
        if (this.tableGiven) throw paramProblem('multiple -t flags not allowed', at);
        this.tableGiven = true;
        if (!isTableName(value ?? '')) {
          throw new Failure('version', `table '${value ?? ''}' does not exist\nPerhaps iptables or your kernel needs to be upgraded.`, { argIndex: at + 1 });
        }
        this.table = value as TableName;
        return;
      case 's':
      case 'd':
        this.once(letter, at);
        if (letter === 's') {
          this.srcText = value;
          this.srcInvert = this.invert;
          this.srcArgIndex = at + 1;
        } else {
          this.dstText = value;
          this.dstInvert = this.invert;
          this.dstArgIndex = at + 1;
        }
        this.invert = false;
        return;
      case 'i':
      case 'o': {
        this.once(letter, at);
        const iface = parseIface(value ?? '', this.invert, at + 1);
        if (letter === 'i') this.inIface = iface;
        else this.outIface = iface;
        this.invert = false;
        return;
      }
      case 'p': {
        this.once(letter, at);
        const text = (value ?? '').toLowerCase();
        const proto = lookupProtocol(text);
        if (proto === undefined) throw paramProblem(`unknown protocol "${value ?? ''}" specified`, at + 1);
        if (proto === 0 && this.invert) throw paramProblem('rule would never match protocol', at + 1);
        this.proto = proto;
        this.protoText = text;
        this.protoInvert = this.invert;
        this.invert = false;
        return;
      }
      case 'f':
        this.once(letter, at);
        this.fragment = { negate: this.invert };
        this.invert = false;
        return;
      case 'j':
      case 'g':
        this.noInvert(letter, at);
        if ((this.options & (OPT_BIT['j'] ?? 0)) !== 0) throw paramProblem('multiple -j flags not allowed', at);
        this.options |= OPT_BIT['j'] ?? 0;
        this.loadTarget(value ?? '', letter === 'g', at + 1);
        return;
      case 'm':
        this.noInvert(letter, at);
        this.loadMatch(value ?? '', at + 1);
        return;
      case 'n':
      case 'v':
      case 'x':
      case '0':
        this.noInvert(letter, at);
        this.options |= OPT_BIT[letter] ?? 0;
        return;
      case 'c': {
        this.once(letter, at);
        const bytesText = this.args[this.i];
        if (bytesText === undefined || bytesText.charCodeAt(0) === 45 || bytesText === '!') {
          throw paramProblem('-c requires packet and byte counter', at);
        }
        this.i++;
        const packets = parseCounter(value ?? '');
        if (packets === undefined) throw paramProblem('-c packet counter not numeric', at + 1);
        const bytes = parseCounter(bytesText);
        if (bytes === undefined) throw paramProblem('-c byte counter not numeric', at + 2);
        this.counters = { packets, bytes };
        this.invert = false;
        return;
      }
      case 'w':
        // Waiting for the xtables lock means nothing in a simulation; an optional seconds value.
        if (value === undefined && /^[0-9]+$/.test(this.args[this.i] ?? '')) this.i++;
        return;
      case 'W':
      case 'M':
      case '4':
        return;
      case '6':
        throw paramProblem('This is the IPv4 version of iptables.', at);
      case 'V':
      case 'h':
        throw paramProblem(`option "${shown}" is not supported by netsim`, at);
    }
    throw paramProblem(`unknown option "${shown}"`, at);
  }

  private parseRuleNum(text: string, at: number): number {
    const n = /^[0-9]+$/.test(text) ? Number(text) : 0;
    if (n <= 0 || !Number.isSafeInteger(n)) throw paramProblem(`Invalid rule number \`${text}'`, at);
    return n;
  }

  private checkNewChainName(name: string, at: number): void {
    if (name.length > CHAIN_NAME_MAX) {
      throw paramProblem(`chain name \`${name}' too long (must be under ${CHAIN_NAME_MAX + 1} chars)`, at);
    }
    if (name.startsWith('-')) throw paramProblem("chain name not allowed to start with `-'", at);
    if (name.startsWith('!')) throw paramProblem("chain name not allowed to start with `!'", at);
    if (STANDARD_TARGETS.has(name) || IPTABLES_TARGET_NAMES.has(name)) {
      throw paramProblem('chain name may not clash with target name', at);
    }
    if (/[ \t\n]/.test(name)) throw paramProblem(`Invalid chain name \`${name}'`, at);
  }

  private loadMatch(name: string, at = this.i): void {
    const mod = matchModule(name);
    if (mod !== undefined) {
      for (const m of this.matches) if ('instance' in m && m.instance.name === name) m.completed = true;
      this.matches.push({ instance: mod.create(), completed: false, at });
      if (PROTO_MODULES.get(this.proto ?? -1) === name) this.protoLoaded = true;
      return;
    }
    if (!IPTABLES_MATCH_NAMES.has(name)) {
      throw paramProblem(`Couldn't load match \`${name}':No such file or directory\n`, at);
    }
    const ext: UnknownExt = { kind: 'match', name, args: [] };
    this.matches.push(ext);
    this.lastUnknown = ext;
    if (this.protoText === name) this.protoLoaded = true;
  }

  private loadTarget(name: string, isGoto: boolean, at: number): void {
    this.targetArgIndex = at;
    if (!isGoto) {
      if (STANDARD_TARGETS.has(name)) {
        this.fixedTarget = name === 'ACCEPT' ? ACCEPT : name === 'DROP' ? DROP : RETURN;
        return;
      }
      const announced = this.env.notTarget?.(name) === true;
      const mod = announced ? undefined : targetModule(name);
      if (mod !== undefined) {
        this.target = { instance: mod.create(), completed: false, at };
        return;
      }
      if (!announced && IPTABLES_TARGET_NAMES.has(name)) {
        const ext: UnknownExt = { kind: 'target', name, args: [] };
        this.target = ext;
        this.lastUnknown = ext;
        return;
      }
    }
    const shared = name === '' ? undefined : this.env.jumpTo?.(this.table, name, isGoto);
    if (shared !== undefined) {
      this.fixedTarget = shared;
      return;
    }
    let chain = name === '' ? undefined : this.env.userChain(this.table, name);
    if (chain === undefined) {
      if (name === '' || this.env.acceptMissingChain?.(name) !== true) throw paramProblem(`Chain '${name}' does not exist`, at);
      chain = name;
    }
    this.fixedTarget = isGoto ? { kind: 'goto', chain } : { kind: 'jump', chain };
  }

  // -------------------------------------------------------------------------------------------
  // Final checks

  private finish(): ParsedCommand {
    if (this.command === undefined) throw paramProblem('no command specified');
    if (this.invert) throw paramProblem('nothing appropriate following !');
    const command = this.command;

    // Extensions' final checks, matches in order then the target.
    const matches: Match[] = [];
    for (const m of this.matches) {
      if ('instance' in m) {
        const done = finishAt(m, this);
        if (done !== null) mergeMatch(matches, done);
      } else {
        matches.push({ kind: 'unknown', module: m.name, args: m.args });
      }
    }
    let target: Target | undefined = this.fixedTarget;
    const t = this.target;
    if (t !== undefined) {
      if ('instance' in t) target = finishAt(t, this);
      else {
        target = { kind: 'unknown', name: t.name, args: t.args };
      }
    }

    const srcs = this.srcText === undefined ? NO_ADDRESS : parseAddresses(this.srcText, this.srcArgIndex);
    const dsts = this.dstText === undefined ? NO_ADDRESS : parseAddresses(this.dstText, this.dstArgIndex);

    const cmdKey = (command === 'D' && this.ruleNum !== undefined) || (command === 'Z' && this.ruleNum !== undefined) ? `${command}NUM` : command;
    let illegal = ILLEGAL[cmdKey === 'ZNUM' ? 'Z' : cmdKey] ?? 0;
    // With -L and -Z together an option is legal when either command allows it.
    if (this.zero) illegal &= ILLEGAL['Z'] ?? 0;
    if ((this.options & illegal) !== 0) {
      for (const col of OPT_COLUMNS) {
        if ((this.options & illegal & (OPT_BIT[col] ?? 0)) !== 0) {
          throw paramProblem(`Illegal option \`${optName(col)}' with this command`, this.wordOf(col));
        }
      }
    }
    if (this.chain !== undefined && this.chain.length > CHAIN_NAME_MAX) {
      throw paramProblem(`chain name \`${this.chain}' too long (must be under ${CHAIN_NAME_MAX + 1} chars)`, this.chainArgIndex);
    }
    const ruleCommand = command === 'A' || command === 'I' || command === 'R' || command === 'C' || (command === 'D' && this.ruleNum === undefined);
    if (ruleCommand && this.chain !== undefined) {
      if ((this.chain === 'PREROUTING' || this.chain === 'INPUT') && this.outIface !== undefined) {
        throw paramProblem(`Can't use -o with ${this.chain}\n`, this.wordOf('o'));
      }
      if ((this.chain === 'POSTROUTING' || this.chain === 'OUTPUT') && this.inIface !== undefined) {
        throw paramProblem(`Can't use -i with ${this.chain}\n`, this.wordOf('i'));
      }
    }
    if (this.table === 'nat' && ((ruleCommand && target?.kind === 'DROP') || (command === 'P' && this.policy === 'DROP'))) {
      throw paramProblem(
        '\nThe "nat" table is not intended for filtering, the use of DROP is therefore inhibited.\n\n',
        command === 'P' ? this.commandArgIndex + 2 : this.targetArgIndex,
      );
    }

    const rules: Rule[] = [];
    if (ruleCommand) {
      if (srcs.length === 1 && dsts.length === 1) rules.push(this.buildRule(srcs[0], dsts[0], matches, target));
      else for (const s of srcs) for (const d of dsts) rules.push(this.buildRule(s, d, matches, target));
    }
    const out: { -readonly [K in keyof ParsedCommand]: ParsedCommand[K] } = {
      command,
      zero: this.zero,
      table: this.table,
      rules,
      numeric: (this.options & OPT_N) !== 0,
      verbose: (this.options & OPT_V) !== 0,
      exact: (this.options & OPT_X) !== 0,
      lineNumbers: (this.options & OPT_LINE) !== 0,
      warnings: this.warnings,
    };
    if (this.chain !== undefined) out.chain = this.chain;
    if (this.ruleNum !== undefined) out.ruleNum = this.ruleNum;
    if (this.newName !== undefined) out.newName = this.newName;
    if (this.policy !== undefined) out.policy = this.policy;
    if (this.kernelRejects !== undefined) out.kernelRejects = this.kernelRejects;
    if (this.chainArgIndex !== undefined) out.chainArgIndex = this.chainArgIndex;
    if (this.target !== undefined || this.fixedTarget !== undefined) out.targetArgIndex = this.targetArgIndex;
    return out;
  }

  /** argv index of the word giving option `col` (only for error messages, so a scan is fine). */
  private wordOf(col: OptColumn): number | undefined {
    const long = col === '0' ? '--line-numbers' : undefined;
    for (let k = 0; k < this.args.length; k++) {
      const w = this.args[k] as string;
      if (w === long || (w.length >= 2 && w[0] === '-' && w[1] !== '-' && w.includes(col))) return k;
      if (w.startsWith('--')) {
        const opt = CORE_LONG.get(splitLong(w).name);
        if (opt?.letter === col) return k;
      }
    }
    return undefined;
  }

  /** argv index of the `--match-set` word of a set match, for error locations. */
  private matchAt(m: Match): number | undefined {
    const name = m.kind === 'set' ? m.setName : undefined;
    for (let k = 0; k < this.args.length - 1; k++) {
      if ((this.args[k] === '--match-set' || this.args[k] === '--set') && this.args[k + 1] === name) return k + 1;
    }
    return undefined;
  }

  private buildRule(s: Cidr | undefined, d: Cidr | undefined, matches: readonly Match[], target: Target | undefined): Rule {
    // nf_tables cannot express "! -s 0.0.0.0/0" and the kernel refuses the rule.
    if ((s !== undefined && s.prefix === 0 && this.srcInvert) || (d !== undefined && d.prefix === 0 && this.dstInvert)) {
      this.kernelRejects ??= 'Invalid argument';
    }
    const rule: { -readonly [K in keyof Rule]: Rule[K] } = { matches };
    if (s !== undefined && (s.prefix !== 0 || this.srcInvert)) rule.src = { cidr: s, negate: this.srcInvert };
    if (d !== undefined && (d.prefix !== 0 || this.dstInvert)) rule.dst = { cidr: d, negate: this.dstInvert };
    const i = this.inIface;
    if (i !== undefined && !(i.name === '' && i.wildcard && !i.negate)) rule.inIface = i;
    const o = this.outIface;
    if (o !== undefined && !(o.name === '' && o.wildcard && !o.negate)) rule.outIface = o;
    if (this.proto !== undefined && this.proto !== 0) rule.proto = protoMatch(this.proto, this.protoInvert);
    if (this.fragment !== undefined) rule.fragment = this.fragment;
    if (target !== undefined) rule.target = target;
    if (this.counters !== undefined) rule.counters = this.counters;
    return rule;
  }

}

/** Modules a protocol loads implicitly, by protocol number. */
const PROTO_MODULES: ReadonlyMap<number, string> = new Map([
  [6, 'tcp'],
  [17, 'udp'],
  [1, 'icmp'],
  [132, 'sctp'],
  [33, 'dccp'],
  [50, 'esp'],
  [51, 'ah'],
]);


/**
 * nf_tables folds a repeated match into one expression set when its module says so (tcp, udp),
 * which reads back as a single match where the first stood, later options replacing earlier ones.
 */
function mergeMatch(into: Match[], m: Match): void {
  const merge = m.kind === 'unknown' ? undefined : matchModuleOfKind(m.kind)?.merge;
  if (merge !== undefined) {
    const k = into.findIndex((x) => x.kind === m.kind);
    if (k >= 0) {
      into[k] = merge(into[k] as Match, m);
      return;
    }
  }
  into.push(m);
}

function parseIface(text: string, negate: boolean, at: number): IfaceMatch {
  if (text.length >= IFNAMSIZ) {
    throw paramProblem(`interface name \`${text}' must be shorter than IFNAMSIZ (${IFNAMSIZ - 1})`, at);
  }
  if (text.endsWith('+')) return { name: text.slice(0, -1), wildcard: true, negate };
  if (text === '') return { name: '', wildcard: true, negate };
  return { name: text, wildcard: false, negate };
}

function parseCounter(text: string): number | undefined {
  if (!/^[0-9]+$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** `-s`/`-d`: comma-separated `addr[/prefix|/mask]`, each masked to its prefix. */
function parseAddresses(text: string, at: number): Cidr[] {
  // Nearly always one address: no split then.
  if (text.indexOf(',') < 0) return [parseAddress(text, at)];
  return text.split(',').map((part) => parseAddress(part, at));
}

function parseAddress(part: string, at: number): Cidr {
  const slash = part.indexOf('/');
  const hostText = slash < 0 ? part : part.slice(0, slash);
  let prefix = 32;
  if (slash >= 0) {
    const maskText = part.slice(slash + 1);
    const mask = parseMask(maskText);
    if (mask === undefined) throw paramProblem(`invalid mask \`${maskText}' specified`, at);
    // Non-contiguous masks (accepted by the real tool) are not modelled: see docs/fidelity.md.
    if (mask < 0) throw paramProblem(`non-contiguous mask \`${maskText}' is not supported by netsim`, at);
    prefix = mask;
  }
  const addr = xtablesHost(hostText);
  if (addr === undefined) throw paramProblem(`host/network \`${hostText}' not found`, at);
  return { addr: ((addr & prefixMask(prefix)) >>> 0) as Ipv4, prefix };
}

/** A prefix length or a dotted netmask, as xtables reads them (see hostAddress.ts); -1 when not contiguous. */
function parseMask(text: string): number | undefined {
  const len = text.length;
  if (len === 1 || (len === 2 && text.charCodeAt(0) !== 48)) {
    const a = text.charCodeAt(0) - 48;
    const b = len === 2 ? text.charCodeAt(1) - 48 : 0;
    if (a >= 0 && a <= 9 && b >= 0 && b <= 9) {
      const n = len === 2 ? a * 10 + b : a;
      return n <= 32 ? n : undefined;
    }
  }
  const m = xtablesMask(text);
  if (m === undefined) return undefined;
  if ('prefix' in m) return m.prefix;
  for (let p = 0; p <= 32; p++) if (prefixMask(p) === m.dotted) return p;
  return -1;
}

/**
 * The words every rule repeats — options, module and target names, protocols — for the
 * tokenizer to share rather than copy (see {@link WordTable}).
 */
export const COMMON_WORDS: WordTable = new WordTable(
  (function* (): Generator<string> {
    yield '!';
    for (const name of CORE_LONG.keys()) yield `--${name}`;
    for (const letter of CORE_SHORT.keys()) yield `-${letter}`;
    for (const m of matchModules()) {
      yield m.name;
      for (const n of m.options.allNames) yield `--${n}`;
    }
    for (const t of targetModules()) {
      yield t.name;
      for (const n of t.options.allNames) yield `--${n}`;
    }
    yield* STANDARD_TARGETS;
    yield* IPTABLES_MATCH_NAMES;
    yield* IPTABLES_TARGET_NAMES;
    yield* ['tcp', 'udp', 'icmp', 'sctp', 'all', 'random', 'nth', 'LOCAL', 'NEW', 'ESTABLISHED', 'RELATED,ESTABLISHED', 'src', 'dst'];
    yield* ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING', '0x4000/0x4000', '0x4000/0x0', 'icmp-port-unreachable'];
  })(),
);
