/**
 * `iptables-restore` as a pure function over the ruleset, with the real tool's semantics
 * (checked against iptables 1.8.9, nf_tables):
 *
 * - Each `*table … COMMIT` block is one transaction. Without `--noflush` the table is deleted first
 *   (policies back to ACCEPT, user chains gone); with it, `:CHAIN` lines create a user chain or
 *   flush an existing one and leave everything else in place.
 * - A failure aborts the input. Blocks committed before the failing one stay committed (the real
 *   tool commits per table); the failing block changes nothing. The error carries that state.
 * - Lines are `iptables` commands (`-A -I -D -R -C -N -X -F -Z -E -P`, `-L`/`-S` print nothing here),
 *   optionally prefixed by `[packets:bytes]` counters that apply only with `--counters`.
 */
import { applyCommand, DraftSet } from './apply.ts';
import type { TableDraft } from './draft.ts';
import { COMMON_WORDS, parseCommand, type CommandEnv } from './command.ts';
import { NetfilterError, type NetfilterErrorCode } from './errors.ts';
import { DEFAULT_IPTABLES_VERSION, Failure, restoreStderr, type IptablesVersion } from './failure.ts';
import { FastRuleReader } from './fastRule.ts';
import { isBuiltinChain, isTableName } from './ruleset.ts';
import { splitInto } from './tokenize.ts';
import type { Counters, Rule, Ruleset, TableName, Target } from './types.ts';

export interface RestoreOptions {
  /** `--noflush`: keep the tables' current contents. */
  readonly noflush?: boolean;
  /** `--counters`: apply `[packets:bytes]` of chain lines and rules. */
  readonly counters?: boolean;
  /** Name of the input, for error messages. */
  readonly file?: string;
  /** Version the messages imitate (default 1.8.10). */
  readonly version?: IptablesVersion;
  /** ipsets that exist on the host; when given, `-m set` naming another fails as on a real host. */
  readonly ipsets?: readonly string[];
}

/** A failed restore: where and why, and the ruleset the real tool leaves behind. */
export interface RestoreFailure {
  readonly error: NetfilterError;
  /** Tables committed before the failing block, applied to the input ruleset. */
  readonly ruleset: Ruleset;
}

/** Internal: a failure located in the input. */
class LocatedFailure extends Error {
  constructor(
    readonly failure: Failure,
    readonly line: number,
    readonly column: number,
    readonly token: string,
    /** The real tool's stderr when it does not follow the generic form. */
    readonly stderr?: string,
  ) {
    super(failure.message);
  }
}

function bareFailure(message: string): Failure {
  return new Failure('other', message);
}

/**
 * @internal
 * The chain name of a `:NAME WORD…` line at `text[start, end)` as the fast paths read it in
 * place (Restorer's chainLine reads the same lines word by word), or undefined for a line they
 * leave to it: a blank after the colon, a name over 28 characters, a line with one word.
 */
export function chainLineName(text: string, start: number, end: number): string | undefined {
  let i = start + 1;
  while (i < end) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 9) break;
    i++;
  }
  if (i === start + 1 || i - start - 1 > 28 || i + 1 >= end) return undefined;
  const c = text.charCodeAt(i + 1);
  if (c === 32 || c === 9) return undefined;
  return text.slice(start + 1, i);
}

const NO_COUNTERS = { prefix: [], offset: 0 } as const;

/**
 * @internal
 * A restore line's `[packets:bytes]` prefix as `iptables -c` arguments, and the rest of the
 * line from `offset`; no prefix for a line without one; undefined for a `[` without `]`.
 */
export function counterPrefix(line: string): { readonly prefix: readonly string[]; readonly offset: number } | undefined {
  if (line.charCodeAt(0) !== 91 /* [ */) return NO_COUNTERS;
  const close = line.indexOf(']');
  if (close < 0) return undefined;
  const inner = line.slice(1, close);
  const colon = inner.indexOf(':');
  return { prefix: ['-c', colon < 0 ? inner : inner.slice(0, colon), colon < 0 ? '' : inner.slice(colon + 1)], offset: close + 1 };
}

/** @internal Parses `[packets:bytes]`; undefined when malformed. */
export function parseCounterPair(text: string): Counters | undefined {
  const m = /^\[([0-9]+):([0-9]+)\]$/.exec(text);
  if (m === null) return undefined;
  const packets = Number(m[1]);
  const bytes = Number(m[2]);
  return Number.isSafeInteger(packets) && Number.isSafeInteger(bytes) ? { packets, bytes } : undefined;
}

/** The restore engine; `run` returns the final ruleset or throws a LocatedFailure. */
class Restorer {
  private readonly drafts: DraftSet;
  private table: TableName | undefined;
  /** A jump to a chain missing when its line was read: reported at COMMIT, as the kernel does. */
  private missingJump: string | undefined;

  /** Reused for the words of every line. */
  private readonly words: string[] = [];
  private readonly columns: number[] = [];
  /** The command environment, made once: it reads the current table's draft. */
  private readonly env: CommandEnv & { table: TableName };
  /** Reads canonical `-A` lines without the general parser (undefined: every line goes through it). */
  private readonly fast: FastRuleReader | undefined;
  /** Every chain name read on a `:NAME` line so far, in any table (see CommandEnv.notTarget). */
  private readonly announced = new Set<string>();
  /**
   * A chain was declared with the name of a target the fast reader reads itself (DNAT, REJECT):
   * from then on every rule line goes through the general parser, which knows the chain wins.
   */
  private slowTargets = false;

  constructor(
    ruleset: Ruleset,
    private readonly opts: RestoreOptions,
    fast = true,
  ) {
    this.fast = fast ? new FastRuleReader() : undefined;
    this.drafts = new DraftSet(ruleset);
    const ipsets = opts.ipsets === undefined ? undefined : new Set(opts.ipsets);
    const drafts = this.drafts;
    const env = {
      mode: 'restore' as const,
      table: 'filter' as TableName,
      userChain: (table: TableName, name: string): string | undefined => drafts.get(table).userChainName(name),
      jumpTo: (table: TableName, name: string, isGoto: boolean): Target | undefined => drafts.get(table).jumpTo(name, isGoto),
      acceptMissingChain: (name: string): boolean => {
        this.missingJump ??= name;
        return true;
      },
      notTarget: (name: string): boolean => this.announced.has(name),
      ...(ipsets !== undefined && { ipsetExists: (name: string): boolean => ipsets.has(name) }),
    };
    this.env = env;
  }

  get committed(): Ruleset {
    return this.drafts.committed;
  }

  run(text: string): Ruleset {
    const lines = this.lines(text, 0, 1, true);
    if (this.table !== undefined) {
      // As many lines as `split('\n')` gives, less the empty one after a final newline.
      const count = text.endsWith('\n') ? lines - 1 : lines;
      const f = bareFailure(`COMMIT expected at line ${count + 1}`);
      throw new LocatedFailure(f, count + 1, 1, '', `iptables-restore: COMMIT expected at line ${count + 1}\n`);
    }
    return this.drafts.committed;
  }

  /**
   * Reads the lines of `text` from offset `from` (line `firstLine`) on, in place: a line becomes
   * a string only when it goes to the general path. With `defer`, a table's hook and loop checks
   * run once at its COMMIT; when they fail, the block is read again with checks per rule, so the
   * error names the line the real tool names. Without `defer`, reading stops after the next
   * COMMIT. Returns the number of the last line read.
   */
  private lines(text: string, from: number, firstLine: number, defer: boolean): number {
    const version = this.opts.version ?? DEFAULT_IPTABLES_VERSION;
    const fast = this.fast;
    const n = text.length;
    let blockStart = from;
    let blockLine = firstLine;
    let lineNo = firstLine - 1;
    let next = from;
    // The current table's draft: the same object from its table line to its COMMIT.
    let draft: TableDraft | undefined;
    while (next <= n) {
      const start = next;
      let end = text.indexOf('\n', start);
      const endsWithNewline = end >= 0;
      if (end < 0) end = n;
      next = end + 1;
      lineNo++;
      if (end === start) continue;
      const c0 = text.charCodeAt(start);
      if (c0 === 35 /* # */) continue;
      const table = this.table;
      if (table !== undefined) {
        if (c0 === 45 /* - */ || c0 === 91 /* [ */) {
          if (fast !== undefined && !this.slowTargets) {
            draft ??= this.drafts.get(table);
            const rule = fast.rule(text, start, end, table, draft, this.opts.counters === true);
            if (rule !== undefined && Restorer.append(draft, fast.chain, rule)) continue;
          }
        } else if (c0 === 58 /* : */) {
          if (fast === undefined || !this.userChainLine(fast, text, start, end, table)) this.chainLine(text.slice(start, end), lineNo);
          continue;
        } else if (end - start === 6 && text.startsWith('COMMIT', start)) {
          const d = this.drafts.get(table);
          if (defer && !d.validateAll()) {
            // Find the line the kernel refuses: by bisection over the block's prefixes when the
            // block only adds (validity then only ever goes from good to bad), else by reading
            // the block again from its table line, checking every rule as the kernel does.
            this.table = undefined;
            if (!this.bisectRefusal(text, blockStart, blockLine, start)) this.lines(text, blockStart, blockLine, false);
            continue;
          }
          this.commit(lineNo);
          if (!defer) return lineNo;
          continue;
        }
      } else if (c0 === 42 /* * */) {
        blockStart = start;
        blockLine = lineNo;
        this.startTable(text.slice(start, end), lineNo);
        draft = this.drafts.get(this.table as unknown as TableName);
        draft.deferHookChecks = defer;
        continue;
      }
      this.commandLine(text.slice(start, end), endsWithNewline, lineNo, version);
    }
    return lineNo;
  }

  /**
   * After a block's deferred checks failed: finds the first line whose prefix of the block no
   * longer passes them (one linear check per probe, so a dump of 20,000 chains with one loop
   * costs some fifteen readings rather than a walk per rule), reads the block up to that line,
   * then that line and the rest with the per-rule checks, which report the refusal as the real
   * tool does. False (nothing read) when the block also removes or renames, where a prefix may
   * be refused and a longer one not.
   */
  private bisectRefusal(text: string, blockStart: number, blockLine: number, commitStart: number): boolean {
    const block = text.slice(blockStart, commitStart);
    if (/^[ \t]*(?:\[[^\]]*\][ \t]*)?(?:-[DFXERZ]|--(?:del|fl|ren|rep|z|list|check))/m.test(block)) return false;
    const starts: number[] = [];
    for (let p = blockStart; p < commitStart; ) {
      starts.push(p);
      const e = text.indexOf('\n', p);
      p = e < 0 || e >= commitStart ? commitStart : e + 1;
    }
    const endOf = (i: number): number => starts[i + 1] ?? commitStart;
    const probe = (end: number): boolean => {
      this.lines(text.slice(0, end), blockStart, blockLine, true);
      const table = this.table as TableName;
      this.table = undefined;
      return this.drafts.get(table).validateAll();
    };
    // The whole block fails; find the smallest i whose prefix through line i fails.
    let lo = 1;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (probe(endOf(mid))) lo = mid + 1;
      else hi = mid;
    }
    this.lines(text.slice(0, starts[lo]), blockStart, blockLine, true);
    this.drafts.get(this.table as TableName).deferHookChecks = false;
    this.lines(text, starts[lo] as number, blockLine + lo, false);
    return true;
  }

  /**
   * Appends a rule the fast reader read, as the general path would; false (nothing changed) when
   * the table refuses it (a missing chain, a rule the kernel rejects): the general path then
   * reads the line again and reports the failure where the real tool does.
   */
  private static append(draft: TableDraft, chain: string, rule: Rule): boolean {
    try {
      draft.append(chain, rule);
      return true;
    } catch (e) {
      if (e instanceof Failure) return false;
      throw e;
    }
  }

  /**
   * `:NAME WORD…` declaring a user chain, read in place (as {@link chainLine} reads it); false,
   * with nothing changed, for anything else: a built-in chain, a blank after the colon, a name
   * the real tool refuses, a line with one word.
   */
  private userChainLine(fast: FastRuleReader, text: string, start: number, end: number, table: TableName): boolean {
    const name = chainLineName(text, start, end);
    if (name === undefined || isBuiltinChain(table, name)) return false;
    this.announce(name);
    this.drafts.get(table).declareUserChain(name);
    fast.name(name, text, start + 1);
    return true;
  }

  private startTable(line: string, lineNo: number): void {
    const name = line
      .slice(1)
      .split(/[ \t]+/)
      .find((w) => w !== '');
    if (name === undefined || !isTableName(name)) {
      const f = new Failure('param', `iptables-restore: line ${lineNo} table name '${name ?? ''}' invalid`);
      throw new LocatedFailure(f, lineNo, name === undefined ? 1 : line.indexOf(name) + 1, name ?? line);
    }
    this.table = name;
    this.missingJump = undefined;
    const d = this.drafts.reset(name);
    if (this.opts.noflush !== true) d.flushAll();
  }

  private commit(lineNo: number): void {
    if (this.missingJump !== undefined) {
      throw new LocatedFailure(new Failure('param', `Chain '${this.missingJump}' does not exist`), lineNo, 1, 'COMMIT');
    }
    const name = this.table as TableName;
    this.drafts.get(name).deferHookChecks = false;
    this.drafts.commit(name);
    this.table = undefined;
  }

  private chainLine(line: string, lineNo: number): void {
    // The first three blank-separated words after the colon, with their 1-based columns.
    const words: { w: string; col: number }[] = [];
    const n = line.length;
    for (let i = 1; i < n && words.length < 3; ) {
      let c = line.charCodeAt(i);
      if (c === 32 || c === 9) {
        i++;
        continue;
      }
      const start = i;
      while (i < n && (c = line.charCodeAt(i)) !== 32 && c !== 9) i++;
      words.push({ w: line.slice(start, i), col: start + 1 });
    }
    const chain = words[0];
    if (chain === undefined) {
      throw new LocatedFailure(new Failure('param', `iptables-restore: line ${lineNo} chain name invalid`), lineNo, 1, ':');
    }
    if (chain.w.length > 28) {
      const f = new Failure('param', `Invalid chain name \`${chain.w}' (28 chars max)`);
      throw new LocatedFailure(f, lineNo, chain.col, chain.w);
    }
    const policy = words[1];
    if (policy === undefined) {
      throw new LocatedFailure(new Failure('param', `iptables-restore: line ${lineNo} policy invalid`), lineNo, chain.col, chain.w);
    }
    const table = this.table as TableName;
    const d = this.drafts.get(table);
    if (isBuiltinChain(table, chain.w)) {
      let counters: Counters | undefined;
      const cw = words[2];
      if (this.opts.counters === true && cw !== undefined) {
        counters = parseCounterPair(cw.w);
        if (counters === undefined) {
          const f = new Failure('param', `invalid policy counters for chain '${chain.w}'`);
          throw new LocatedFailure(f, lineNo, cw.col, cw.w);
        }
      }
      if (policy.w === '-') {
        d.created = true;
        return;
      }
      try {
        d.setPolicy(chain.w, policy.w, counters);
      } catch (e) {
        if (e instanceof Failure) {
          // The real tool words this one without the dmesg hint.
          const f = e.message.startsWith('Bad policy name') ? new Failure('other', 'Bad policy name') : e;
          throw new LocatedFailure(f, lineNo, policy.col, policy.w);
        }
        throw e;
      }
      return;
    }
    this.announce(chain.w);
    d.declareUserChain(chain.w);
    this.fast?.name(chain.w);
  }

  private announce(name: string): void {
    this.announced.add(name);
    if (name === 'DNAT' || name === 'REJECT') this.slowTargets = true;
  }

  private commandLine(line: string, endsWithNewline: boolean, lineNo: number, version: IptablesVersion): void {
    const counters = counterPrefix(line);
    if (counters === undefined) throw new LocatedFailure(new Failure('param', `Bad line ${lineNo}: need ]`), lineNo, 1, line.split(/[ \t]/)[0] ?? line);
    const offset = counters.offset;
    const rest = offset === 0 ? line : line.slice(offset);
    // The counters apply only with --counters.
    const prefix = this.opts.counters === true ? counters.prefix : [];
    const words = this.words;
    const columns = this.columns;
    try {
      splitInto(rest, endsWithNewline, words, columns, COMMON_WORDS);
    } catch (e) {
      if (e instanceof Failure) throw new LocatedFailure(e, lineNo, 1, line);
      throw e;
    }
    if (this.table === undefined) {
      // The real tool says only "line N failed"; the message says why.
      const what = words[0] === 'COMMIT' ? 'COMMIT' : `\`${words[0] ?? line}' line`;
      const f = bareFailure(`${what} outside a table: no *table line since the last COMMIT`);
      throw new LocatedFailure(f, lineNo, (columns[0] ?? 1) + offset, words[0] ?? line, `iptables-restore: line ${lineNo} failed\n`);
    }
    const table = this.table;
    const d = this.drafts.get(table);
    // The parser keeps no reference to argv, so the reused word array can be handed over.
    const argv = prefix.length > 0 ? [...prefix, ...words] : words;
    try {
      this.env.table = table;
      const cmd = parseCommand(argv, this.env);
      try {
        applyCommand(d, cmd, version);
      } catch (e) {
        // Blame the target for a rule the kernel refuses, else the chain the command names.
        if (e instanceof Failure && e.argIndex === undefined) {
          e.argIndex = e.kind === 'kernel' && cmd.targetArgIndex !== undefined ? cmd.targetArgIndex : cmd.chainArgIndex;
        }
        throw e;
      }
    } catch (e) {
      if (!(e instanceof Failure)) throw e;
      const idx = e.argIndex === undefined ? undefined : e.argIndex - prefix.length;
      if (idx !== undefined && idx >= 0 && idx < words.length) {
        throw new LocatedFailure(e, lineNo, (columns[idx] ?? 1) + offset, words[idx] as string);
      }
      if (idx !== undefined && idx < 0) throw new LocatedFailure(e, lineNo, 1, line.slice(0, offset));
      throw new LocatedFailure(e, lineNo, (columns[0] ?? 1) + offset, words[0] ?? '');
    }
  }
}

/** `\r`, `\t` and other control characters as escapes (`\x1b`). */
export function escapeControls(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\x00-\x1f\x7f]/g, (c) => (c === '\r' ? '\\r' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`));
}

function toError(lf: LocatedFailure, opts: RestoreOptions, code: NetfilterErrorCode, what: string): NetfilterError {
  const version = opts.version ?? DEFAULT_IPTABLES_VERSION;
  const stderr = lf.stderr ?? restoreStderr(lf.failure, lf.line, version);
  const where = `${opts.file ?? '<input>'}:${lf.line}:${lf.column}`;
  // The tool's own prefix is already in `what`; control characters (a CR from a CRLF file) are
  // shown escaped, so that the message prints as one readable line.
  const body = escapeControls(lf.failure.message.trim().replace(/\s*\n\s*/g, ' ').replace(/^iptables-restore: /, ''));
  const token = lf.token === '' ? '' : ` (at "${escapeControls(lf.token)}")`;
  return new NetfilterError(code, `${what}: ${where}: ${body}${token}`, {
    location: { ...(opts.file !== undefined && { file: opts.file }), line: lf.line, column: lf.column, token: lf.token },
    exitCode: lf.failure.kind === 'param' ? 2 : lf.failure.exitCode,
    stderr,
  });
}

/**
 * Applies `iptables-restore` input to a ruleset and returns the result. Throws a
 * {@link NetfilterError} (code `parse` for input the real tool rejects while reading, `restore` for
 * a change it refuses) with file, line, column and token; the error's `stderr` is what
 * `iptables-restore` prints. The input ruleset is never modified; see {@link tryRestore} for the
 * state the real tool leaves after a failure in a later table.
 *
 * @example
 * const r = restore(freshRuleset(), '*nat\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\nCOMMIT\n', { noflush: true });
 */
export function restore(ruleset: Ruleset, text: string, opts: RestoreOptions = {}): Ruleset {
  const result = tryRestore(ruleset, text, opts);
  if ('error' in result) throw result.error;
  return result.ruleset;
}

/**
 * Like {@link restore} but returns failures as values, with the ruleset the real tool leaves
 * behind: tables committed before the failing block stay committed.
 */
export function tryRestore(ruleset: Ruleset, text: string, opts: RestoreOptions = {}): { readonly ruleset: Ruleset } | RestoreFailure {
  return tryRestoreWith(ruleset, text, opts, true);
}

/**
 * @internal
 * {@link tryRestore}, with (`fast`) or without the fast reader of canonical rule lines: the
 * general path alone is the reference the fast reader is tested against.
 */
export function tryRestoreWith(ruleset: Ruleset, text: string, opts: RestoreOptions, fast: boolean): { readonly ruleset: Ruleset } | RestoreFailure {
  const r = new Restorer(ruleset, opts, fast);
  try {
    return { ruleset: r.run(text) };
  } catch (e) {
    if (e instanceof LocatedFailure) {
      const code: NetfilterErrorCode = e.failure.kind === 'param' ? 'parse' : 'restore';
      return { error: toError(e, opts, code, 'iptables-restore'), ruleset: r.committed };
    }
    throw e;
  }
}

/** @internal Restore for `parseSave`: every failure is a `parse` error. */
export function restoreForParse(ruleset: Ruleset, text: string, opts: RestoreOptions, fast = true): Ruleset {
  const r = new Restorer(ruleset, opts, fast);
  try {
    return r.run(text);
  } catch (e) {
    if (e instanceof LocatedFailure) throw toError(e, opts, 'parse', 'parseSave');
    throw e;
  }
}
