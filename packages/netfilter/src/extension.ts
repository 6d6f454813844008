/**
 * @internal
 * The shape shared by match modules (`-m name`) and target extensions (`-j NAME`): the options
 * each one understands, and how an instance collects them while an argv is parsed.
 *
 * iptables merges the options of every loaded extension into one getopt table; an option is looked
 * up exactly first, then by unambiguous prefix (`--to` for `--to-destination`, `--dp` for
 * `--dport`). Modules register themselves in `matches.ts` and `targets.ts`.
 */
import type { TableName } from './types.ts';
import { paramProblem } from './failure.ts';

export interface OptionSpec {
  /** Canonical long name without `--`. */
  readonly name: string;
  /** Other spellings accepted for the same option (`sport` for `source-port`). */
  readonly aliases?: readonly string[];
  /** Number of value words the option takes. */
  readonly args: 0 | 1 | 2;
  /** May be preceded by `!`. */
  readonly invert?: boolean;
  /** May be given more than once. */
  readonly multi?: boolean;
  /** For two values: the module's message when the second is missing (default `--NAME requires two args.`). */
  readonly pairMessage?: string;
}

/** One option occurrence handed to an extension instance. */
export interface OptionUse {
  /** Canonical name (without `--`). */
  readonly name: string;
  readonly invert: boolean;
  readonly values: readonly string[];
  /** Index in the argv of the option word (for error locations). */
  readonly argIndex: number;
}

/** What an extension may consult while parsing: the rule's protocol so far, the table and chain. */
export interface ParseEnv {
  /** `-p` as parsed so far (number), or undefined when no `-p` was given yet. */
  readonly proto: number | undefined;
  readonly protoInvert: boolean;
  readonly table: TableName;
  /**
   * Marks the rule as one the nf_tables kernel refuses when it is added (the real tool then fails
   * with `RULE_APPEND failed (<errno>)`, exit 4); parsing itself succeeds.
   */
  rejectRule(errno: string): void;
  /** A warning the real tool prints on stderr without failing (the text, newline included). */
  warn(text: string): void;
  /** The host's ipsets are known and have none named `name` (libxt_set asks the kernel while parsing). */
  ipsetMissing(name: string): boolean;
}

export interface ExtensionInstance<T> {
  /** Extension name for messages (`tcp`, `DNAT`). */
  readonly name: string;
  readonly spec: OptionTable;
  /** Handles one option; throws a param Failure on bad values. */
  option(use: OptionUse, env: ParseEnv): void;
  /** Final checks once the whole argv is read; returns the model value. */
  finish(env: ParseEnv): T;
}

/** Option lookup for one extension: exact names and aliases, then unambiguous prefixes. */
export class OptionTable {
  readonly specs: readonly OptionSpec[];
  /** Position of each spec, for bit sets of options seen. */
  readonly index = new Map<OptionSpec, number>();
  private readonly byName = new Map<string, OptionSpec>();
  private readonly byWord = new Map<string, OptionSpec>();
  /** Every long name and alias, without dashes. */
  readonly allNames: string[] = [];

  constructor(specs: readonly OptionSpec[]) {
    this.specs = specs;
    specs.forEach((s, k) => this.index.set(s, k));
    for (const s of specs) {
      this.byName.set(s.name, s);
      this.byWord.set(`--${s.name}`, s);
      this.allNames.push(s.name);
      for (const a of s.aliases ?? []) {
        this.byName.set(a, s);
        this.byWord.set(`--${a}`, s);
        this.allNames.push(a);
      }
    }
  }

  exact(name: string): OptionSpec | undefined {
    return this.byName.get(name);
  }

  /** Exact lookup by the whole word (`--dport`), which spares slicing off the dashes. */
  exactWord(word: string): OptionSpec | undefined {
    return this.byWord.get(word);
  }

  /** Long names (and aliases) starting with `prefix`. */
  prefixed(prefix: string): OptionSpec[] {
    const out: OptionSpec[] = [];
    for (const n of this.allNames) {
      if (n.startsWith(prefix)) {
        const s = this.byName.get(n);
        if (s !== undefined && !out.includes(s)) out.push(s);
      }
    }
    return out;
  }
}

/**
 * Bookkeeping most extensions share (xtables' guided option parser): each option at most once
 * unless `multi`, `!` only where allowed, with the framework's messages. Hot extensions extend it,
 * so that one `-m name` costs one object.
 */
export class OptionTracker {
  /** Options seen, as bits by their position in the table. */
  private seen = 0;
  constructor(
    protected readonly ext: string,
    protected readonly table: OptionTable,
  ) {}

  use(use: OptionUse, spec: OptionSpec): void {
    const bit = 1 << (this.table.index.get(spec) ?? 31);
    if (!spec.multi && (this.seen & bit) !== 0) {
      throw paramProblem(`${this.ext}: option "--${spec.name}" can only be used once.\n`, use.argIndex);
    }
    if (use.invert && !spec.invert) {
      throw paramProblem(`${this.ext}: option "--${spec.name}" cannot be inverted.\n`, use.argIndex);
    }
    this.seen |= bit;
  }

  has(name: string): boolean {
    const spec = this.table.exact(name);
    return spec !== undefined && (this.seen & (1 << (this.table.index.get(spec) ?? 31))) !== 0;
  }

  get count(): number {
    let n = 0;
    for (let b = this.seen; b !== 0; b &= b - 1) n++;
    return n;
  }

  /** The framework's message for a mandatory option that was not given. */
  missing(name: string): never {
    throw paramProblem(`${this.ext}: option "--${name}" must be specified\n`);
  }
}

/**
 * The framework's message for two options that exclude each other, naming them in the
 * extension's definition order as xtables' final check does.
 */
export function excludes(ext: string, table: OptionTable, a: string, b: string, argIndex: number): never {
  const ia = table.specs.findIndex((s) => s.name === a);
  const ib = table.specs.findIndex((s) => s.name === b);
  const [first, second] = ia <= ib ? [a, b] : [b, a];
  throw paramProblem(`${ext}: option "--${first}" cannot be used together with "--${second}".\n`, argIndex);
}

/** The same message naming `first` first, for final checks that go option by option. */
export function excludesIn(ext: string, first: string, second: string): never {
  throw paramProblem(`${ext}: option "--${first}" cannot be used together with "--${second}".\n`);
}
