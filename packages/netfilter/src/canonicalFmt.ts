/**
 * @internal
 * `netsim ruleset fmt` of a dump that is already what `iptables-save` prints: the common case
 * (a saved dump, a CI artefact) answered without building a ruleset.
 *
 * {@link formatCanonical} reads the input in place and keeps, per chain, only where its rule
 * lines are in the text (two numbers per rule), the chains each one jumps to and the hooks its
 * rules allow. A rule line is read by the fast reader (the one `restore` uses for the same
 * lines), must print back as exactly itself, and must pass the checks the kernel makes when it is
 * added (`refusedInTable`); at each COMMIT the table must pass the same hook and loop checks
 * `restore` makes there (`ruleHookMask`, `jumpTarget`). Then the output is the input's own lines,
 * in `iptables-save`'s order (tables, built-in chains, user chains by name, rules by chain).
 *
 * Anything else — a line the fast reader does not read, a rule that prints differently, a
 * counter, a chain named like a target, a table given twice, a check that fails, a missing
 * COMMIT — returns `false` before anything was written, and the caller runs `restore`, which
 * accepts or refuses the input with the real tool's messages. `restore` is the reference:
 * `test/canonicalFmt.test.ts` checks the two agree on generated rulesets, every fixture and
 * mutated lines.
 */
import { ALL_HOOKS, jumpTarget, refusedInTable, ruleHookMask, compareNames } from './draft.ts';
import { COMMON_WORDS, parseCommand, type CommandEnv } from './command.ts';
import { FastRuleReader, type JumpResolver } from './fastRule.ts';
import { Failure } from './failure.ts';
import { chainLineName } from './restore.ts';
import { ruleSpecWords } from './ruleSpec.ts';
import { isTableName } from './ruleset.ts';
import { SAVE_TABLE_ORDER } from './save.ts';
import { hooksAndLoopsValid } from './saveBuilder.ts';
import { splitInto } from './tokenize.ts';
import { IPTABLES_TARGET_NAMES, targetModule } from './targets.ts';
import { BUILTIN_CHAINS, type Rule, type TableName, type Target } from './types.ts';

interface LeanChain {
  readonly name: string;
  /** Index in {@link LeanTable.chains}; built-in chains come first, in hook order. */
  readonly index: number;
  readonly builtin: boolean;
  policy: 'ACCEPT' | 'DROP';
  /** A built-in chain's `:NAME POLICY` line was read. */
  declared: boolean;
  /** Rules read into it so far. */
  rules: number;
  jumpTarget: Target | undefined;
  gotoTarget: Target | undefined;
}

/** A growable column of 32-bit integers. */
class Column {
  data = new Int32Array(1024);
  length = 0;

  push(v: number): void {
    if (this.length === this.data.length) {
      const grown = new Int32Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.length++] = v;
  }
}

/**
 * One table's block: its chains, where each rule line is (and its chain), the jumps between
 * chains and the hooks each chain's rules allow — columns of numbers, not objects per rule.
 */
class LeanTable implements JumpResolver {
  readonly byName = new Map<string, LeanChain>();
  readonly chains: LeanChain[] = [];
  private readonly ruleChain = new Column();
  private readonly ruleStart = new Column();
  private readonly ruleEnd = new Column();
  private readonly jumpFrom = new Column();
  private readonly jumpTo_ = new Column();
  /** Per chain index: the hooks its rules allow. */
  private allowed = new Column();

  constructor(readonly name: TableName) {
    for (const hook of BUILTIN_CHAINS[name]) this.add(hook, true);
  }

  add(name: string, builtin: boolean): LeanChain {
    const c: LeanChain = { name, index: this.chains.length, builtin, policy: 'ACCEPT', declared: false, rules: 0, jumpTarget: undefined, gotoTarget: undefined };
    this.chains.push(c);
    this.byName.set(name, c);
    this.allowed.push(ALL_HOOKS);
    return c;
  }

  jumpTo(name: string, isGoto: boolean): Target | undefined {
    const c = this.byName.get(name);
    if (c === undefined || c.builtin) return undefined;
    if (isGoto) return (c.gotoTarget ??= Object.freeze({ kind: 'goto', chain: c.name }));
    return (c.jumpTarget ??= Object.freeze({ kind: 'jump', chain: c.name }));
  }

  /** Records the rule at `text[start, end)` of `chain`. */
  rule(chain: LeanChain, start: number, end: number, rule: Rule): void {
    this.ruleChain.push(chain.index);
    this.ruleStart.push(start);
    this.ruleEnd.push(end);
    chain.rules++;
    const mask = ruleHookMask(rule);
    if (mask !== ALL_HOOKS) this.allowed.data[chain.index] = (this.allowed.data[chain.index] as number) & mask;
    const to = jumpTarget(rule);
    if (to !== undefined) {
      this.jumpFrom.push(chain.index);
      this.jumpTo_.push((this.byName.get(to) as LeanChain).index);
    }
  }

  /** The hook and loop checks `TableDraft.validateAll` makes at COMMIT, over the columns. */
  valid(): boolean {
    const jumps = this.jumpFrom.length;
    return hooksAndLoopsValid(this.name, BUILTIN_CHAINS[this.name].length, this.chains.length, this.jumpFrom.data, this.jumpTo_.data, this.allowed.data, jumps);
  }

  /** The table as `iptables-save` prints it, as pieces of text. */
  write(text: string, put: (s: string) => void): void {
    put(`*${this.name}\n`);
    const builtins = this.chains.filter((c) => c.builtin);
    const users = this.chains.filter((c) => !c.builtin).sort((a, b) => compareNames(a.name, b.name));
    const chains = [...builtins, ...users];
    for (const c of chains) put(c.builtin ? `:${c.name} ${c.policy} [0:0]\n` : `:${c.name} - [0:0]\n`);
    // Rules grouped by chain in printing order, each chain's in the order read (a counting sort).
    const slot = new Int32Array(this.chains.length);
    let at = 0;
    for (const c of chains) {
      slot[c.index] = at;
      at += c.rules;
    }
    const rules = this.ruleChain.length;
    const order = new Int32Array(rules);
    for (let r = 0; r < rules; r++) order[(slot[this.ruleChain.data[r] as number] as number)++] = r;
    // Consecutive lines of the input are handed on as one piece.
    let from = -1;
    let to = -1;
    for (let i = 0; i < rules; i++) {
      const r = order[i] as number;
      const s = this.ruleStart.data[r] as number;
      if (s !== to + 1) {
        if (from >= 0) putLines(text, from, to, put);
        from = s;
      }
      to = this.ruleEnd.data[r] as number;
    }
    if (from >= 0) putLines(text, from, to, put);
    put('COMMIT\n');
  }
}

/** The lines `text[from, to)` and a newline after the last. */
function putLines(text: string, from: number, to: number, put: (s: string) => void): void {
  put(text.slice(from, to));
  put('\n');
}

/** A name the fast reader would read as a target rather than as the chain that wins. */
function targetLike(name: string): boolean {
  return IPTABLES_TARGET_NAMES.has(name) || targetModule(name) !== undefined;
}

export interface FormatCanonicalOptions {
  /** The host's ipsets (`RestoreOptions.ipsets`). */
  readonly ipsets?: readonly string[];
}

/** `-A` lines the fast reader leaves: read by the general parser, as `restore` reads them. */
class GeneralReader {
  private readonly words: string[] = [];
  private readonly columns: number[] = [];
  private readonly env: CommandEnv & { table: TableName };
  private current: LeanTable | undefined;

  constructor(ipsets: readonly string[] | undefined) {
    const known = ipsets === undefined ? undefined : new Set(ipsets);
    this.env = {
      mode: 'restore',
      table: 'filter',
      userChain: (_table, name) => {
        const c = this.current?.byName.get(name);
        return c === undefined || c.builtin ? undefined : c.name;
      },
      jumpTo: (_table, name, isGoto) => this.current?.jumpTo(name, isGoto),
      ...(known !== undefined && { ipsetExists: (name: string): boolean => known.has(name) }),
    };
  }

  /** The one rule an `-A` line appends and its chain, or undefined for anything else. */
  read(line: string, endsWithNewline: boolean, table: LeanTable): { readonly rule: Rule; readonly chain: string } | undefined {
    this.current = table;
    this.env.table = table.name;
    try {
      splitInto(line, endsWithNewline, this.words, this.columns, COMMON_WORDS);
      const cmd = parseCommand(this.words, this.env);
      const rule = cmd.rules[0];
      if (cmd.command !== 'A' || cmd.chain === undefined || rule === undefined || cmd.rules.length !== 1 || cmd.kernelRejects !== undefined) return undefined;
      return { rule, chain: cmd.chain };
    } catch (e) {
      if (e instanceof Failure) return undefined;
      throw e;
    }
  }
}

/** Whether `text[at, end)` is exactly what iptables-save prints for `rule` after `-A CHAIN`. */
function printsAs(text: string, at: number, end: number, rule: Rule): boolean {
  const words = ruleSpecWords(rule);
  if (words.length === 0) return at === end;
  const spec = words.join(' ');
  return end - at === 1 + spec.length && text.charCodeAt(at) === 32 && text.startsWith(spec, at + 1);
}

/** How much text {@link formatCanonical} gathers before handing it to its sink. */
const CHUNK_CHARS = 1 << 16;

/**
 * Writes what `iptables-save` prints after `iptables-restore` of `text` on a fresh host, when
 * `text` is in the canonical form throughout (see the module comment), and returns true; returns
 * false, having written nothing, for any other input.
 */
export function formatCanonical(text: string, write: (chunk: string) => void, opts: FormatCanonicalOptions = {}): boolean {
  const tables = new Map<TableName, LeanTable>();
  const fast = new FastRuleReader();
  const general = new GeneralReader(opts.ipsets);
  let table: LeanTable | undefined;
  const n = text.length;
  let next = 0;
  while (next < n) {
    const start = next;
    let end = text.indexOf('\n', start);
    if (end < 0) end = n;
    next = end + 1;
    if (end === start) continue;
    const c0 = text.charCodeAt(start);
    if (c0 === 35 /* # */) continue;
    if (table === undefined) {
      if (c0 !== 42 /* * */) return false;
      const name = text.slice(start + 1, end);
      if (!isTableName(name) || tables.has(name)) return false;
      table = new LeanTable(name);
      tables.set(name, table);
      continue;
    }
    if (c0 === 45 /* - */) {
      let rule = fast.rule(text, start, end, table.name, table, false);
      let chain = rule === undefined ? undefined : table.byName.get(fast.chain);
      if (rule === undefined) {
        // Another module or target: the general parser reads it, as `restore` does.
        const read = general.read(text.slice(start, end), end < n, table);
        if (read === undefined) return false;
        rule = read.rule;
        chain = table.byName.get(read.chain);
      }
      if (chain === undefined || refusedInTable(rule, table.name)) return false;
      // The line must be exactly `-A CHAIN WORDS…`: what iptables-save prints for the rule.
      if (!printsAs(text, start + 3 + chain.name.length, end, rule)) return false;
      table.rule(chain, start, end, rule);
      continue;
    }
    if (c0 === 58 /* : */) {
      const name = chainLineName(text, start, end);
      if (name === undefined) return false;
      const at = start + 1 + name.length;
      const rest = (word: string): boolean => end - at === word.length && text.startsWith(word, at);
      const existing = table.byName.get(name);
      if (existing?.builtin === true) {
        // A built-in chain's policy, once; counters are not applied without --counters.
        if (existing.declared || existing.rules > 0) return false;
        if (rest(' ACCEPT [0:0]')) existing.policy = 'ACCEPT';
        else if (rest(' DROP [0:0]')) existing.policy = 'DROP';
        else return false;
        existing.declared = true;
        continue;
      }
      if (existing !== undefined || !rest(' - [0:0]') || targetLike(name)) return false;
      table.add(name, false);
      fast.name(name, text, start + 1);
      continue;
    }
    if (end - start === 6 && text.startsWith('COMMIT', start)) {
      if (!table.valid()) return false;
      table = undefined;
      continue;
    }
    return false;
  }
  if (table !== undefined || tables.size === 0) return false;

  let buf = '';
  const put = (s: string): void => {
    buf += s;
    if (buf.length >= CHUNK_CHARS) {
      write(buf);
      buf = '';
    }
  };
  for (const name of SAVE_TABLE_ORDER) tables.get(name)?.write(text, put);
  if (buf !== '') write(buf);
  return true;
}
