/**
 * @internal
 * A fast path for {@link parseSave} over what `iptables-save` prints: `*table` lines, chain
 * lines in the canonical form (`:NAME POLICY [p:b]` for built-in chains, `:NAME - [0:0]` for user
 * chains, each declared once), `-A` lines the fast rule reader reads (src/fastRule.ts), `COMMIT`,
 * comments and blank lines, each table once.
 *
 * It builds the tables straight from those lines, without the table drafts `iptables-restore`
 * edits (src/draft.ts): chains are numbered as they are declared, rules are collected per chain
 * into arrays of their final size, jumps are recorded as pairs of chain numbers, and at COMMIT
 * the kernel's checks that `iptables-restore` defers to that point (the hooks each rule may run
 * from, through jumps, and loops) run over those numbers in typed arrays. At 100k rules that is
 * most of what parsing costs besides reading the lines (see docs/performance.md).
 *
 * Anything else — another line, another form, a second declaration, a chain or jump target that
 * does not exist, a rule or a table the kernel would refuse — returns `undefined` and the caller
 * parses the whole text again with the restore engine, which is the reference and words every
 * error. `test/saveBuilder.test.ts` checks that the two agree.
 */
import { COMMON_WORDS, parseCommand, type CommandEnv } from './command.ts';
import { ALL_HOOKS, HOOK_BIT, refusedInTable, ruleHookMask, ZERO } from './draft.ts';
import { Failure } from './failure.ts';
import { FastRuleReader, type JumpResolver } from './fastRule.ts';
import { IPTABLES_TARGET_NAMES } from './targets.ts';
import { chainLineName, counterPrefix, parseCounterPair } from './restore.ts';
import { freshRuleset, isBuiltinChain, isTableName } from './ruleset.ts';
import { splitInto } from './tokenize.ts';
import { BUILTIN_CHAINS, type Chain, type Counters, type Policy, type Rule, type Ruleset, type Table, type TableName, type Target } from './types.ts';

/** One `*table … COMMIT` block being built. Chain numbers: built-in chains first, in hook order. */
class TableBuilder implements JumpResolver {
  readonly reader = new FastRuleReader();
  private readonly names: string[] = [];
  /**
   * Chain numbers by a 30-bit hash of the name (a small integer: cheap to hash and compare, and
   * computed where the name is read, without making a string), -1 for a hash several names
   * share; those names are in `shared`. A lookup compares the name it finds with the text.
   */
  private readonly byHash = new Map<number, number>();
  private shared: Map<string, number> | undefined;
  /** A chain was declared twice (the reference flushes it): left to the reference. */
  private twice = false;
  private readonly builtins: number;
  private readonly policies: Policy[] = [];
  private readonly counters: Counters[] = [];
  /** Rules per chain; `grown[k]`: the array was pushed to (it may have spare capacity). */
  private readonly rules: (Rule[] | undefined)[] = [];
  private readonly grown: boolean[] = [];
  /** Hooks the rules of each chain allow (bit set, see HOOK_BIT). */
  private readonly allowed: number[] = [];
  private readonly jumpTargets: (Target | undefined)[] = [];
  private readonly gotoTargets: (Target | undefined)[] = [];
  /** Jumps and gotos between chains, as (from, to) chain numbers. */
  private readonly edgeFrom: number[] = [];
  private readonly edgeTo: number[] = [];
  /** The chain {@link jumpTo} resolved last, and the one it found before (KUBE-MARK-MASQ, say). */
  private resolved = -1;
  private lastJump = -1;
  /** Rules read for `current` and not yet put into its array. */
  private readonly pending: Rule[] = [];
  private pendingCount = 0;
  private current = -1;
  /** The table exists in the kernel (see `Table.absent`): a chain line or rule was read. */
  created = false;

  constructor(readonly name: TableName) {
    const hooks = BUILTIN_CHAINS[name];
    this.builtins = hooks.length;
    for (const hook of hooks) {
      this.add(hook);
      this.policies.push('ACCEPT');
      this.counters.push(ZERO);
    }
  }

  private add(name: string): number {
    const k = this.names.length;
    this.names.push(name);
    const h = nameHash(name, 0, name.length);
    const had = this.byHash.get(h);
    if (had === undefined) this.byHash.set(h, k);
    else {
      const shared = (this.shared ??= new Map<string, number>());
      if (had >= 0) {
        shared.set(this.names[had] as string, had);
        this.byHash.set(h, -1);
      }
      if (shared.has(name)) this.twice = true;
      shared.set(name, k);
    }
    this.rules.push(undefined);
    this.grown.push(false);
    this.allowed.push(ALL_HOOKS);
    this.jumpTargets.push(undefined);
    this.gotoTargets.push(undefined);
    return k;
  }

  /**
   * A user chain line. A chain declared twice (which the reference flushes) is noticed by
   * {@link add}, where both names share a hash, and left to the reference at COMMIT.
   */
  declare(name: string, text: string, at: number): void {
    this.add(name);
    this.reader.name(name, text, at);
    this.created = true;
  }

  /** A built-in chain line's policy and counters. */
  policy(name: string, policy: Policy, counters: Counters): void {
    const k = this.numberOf(name, 0, name.length) as number;
    this.policies[k] = policy;
    this.counters[k] = counters;
    this.created = true;
  }

  /** The number of the chain named `s[from, to)`, if there is one. */
  private numberOf(s: string, from: number, to: number): number | undefined {
    const k = this.byHash.get(nameHash(s, from, to));
    if (k === undefined) return undefined;
    if (k >= 0) {
      const name = this.names[k] as string;
      return name.length === to - from && s.startsWith(name, from) ? k : undefined;
    }
    return this.shared?.get(from === 0 && to === s.length ? s : s.slice(from, to));
  }

  jumpAt(s: string, from: number, to: number): Target | undefined {
    const k = this.numberOf(s, from, to);
    if (k === undefined || k < this.builtins) return undefined;
    this.lastJump = k;
    return this.targetOf(k, false);
  }

  jumpTo(name: string, isGoto: boolean): Target | undefined {
    let k = this.lastJump;
    if (k < 0 || this.names[k] !== name) {
      const found = this.numberOf(name, 0, name.length);
      if (found === undefined || found < this.builtins) return undefined;
      k = found;
      this.lastJump = k;
    }
    return this.targetOf(k, isGoto);
  }

  /** The shared `-j`/`-g` target of user chain `k`, which the next appended rule jumps to. */
  private targetOf(k: number, isGoto: boolean): Target {
    this.resolved = k;
    const chain = this.names[k] as string;
    if (isGoto) return (this.gotoTargets[k] ??= Object.freeze({ kind: 'goto', chain }));
    return (this.jumpTargets[k] ??= Object.freeze({ kind: 'jump', chain }));
  }

  /** The environment the general parser reads a line in (Restorer's, for this table). */
  private env: (CommandEnv & { missing: boolean }) | undefined;
  private readonly words: string[] = [];
  private readonly columns: number[] = [];

  /**
   * A rule line the fast reader declined, read by the general parser as Restorer.commandLine
   * reads it with `--counters`: false unless it is an `-A` the table takes.
   */
  generalLine(text: string, start: number, end: number, endsWithNewline: boolean): boolean {
    const line = text.slice(start, end);
    const counters = counterPrefix(line);
    if (counters === undefined) return false;
    const rest = counters.offset === 0 ? line : line.slice(counters.offset);
    const env = (this.env ??= {
      mode: 'restore',
      table: this.name,
      userChain: (_table, name) => {
        const k = this.numberOf(name, 0, name.length);
        return k === undefined || k < this.builtins ? undefined : this.names[k];
      },
      jumpTo: (_table, name, isGoto) => this.jumpTo(name, isGoto),
      acceptMissingChain: () => {
        env.missing = true;
        return true;
      },
      missing: false,
    });
    try {
      splitInto(rest, endsWithNewline, this.words, this.columns, COMMON_WORDS);
      const cmd = parseCommand(counters.prefix.length === 0 ? this.words : [...counters.prefix, ...this.words], env);
      if (env.missing || cmd.command !== 'A' || cmd.kernelRejects !== undefined || cmd.chain === undefined) return false;
      for (const rule of cmd.rules) if (!this.append(rule, cmd.chain)) return false;
      return true;
    } catch (e) {
      if (e instanceof Failure) return false;
      throw e;
    }
  }

  /**
   * A rule for `chain` (the chain of the line the fast reader read last): false when the chain
   * does not exist or the table refuses the rule (TableDraft.validate; the hook checks wait for
   * COMMIT).
   */
  append(rule: Rule, chain: string = this.reader.chain): boolean {
    let k = this.current;
    if (k < 0 || this.names[k] !== chain) {
      const next = k + 1;
      const found = next < this.names.length && this.names[next] === chain ? next : this.numberOf(chain, 0, chain.length);
      if (found === undefined) return false;
      this.flush();
      k = this.current = found;
    }
    if (refusedInTable(rule, this.name)) return false;
    const target = rule.target;
    if (target !== undefined) {
      const kind = target.kind;
      if (kind === 'jump' || kind === 'goto') {
        const r = this.resolved;
        const to = r >= 0 && this.names[r] === target.chain ? r : this.numberOf(target.chain, 0, target.chain.length);
        if (to === undefined) return false;
        this.edgeFrom.push(k);
        this.edgeTo.push(to);
      }
    }
    this.allowed[k] = (this.allowed[k] as number) & ruleHookMask(rule);
    this.pending[this.pendingCount++] = rule;
    this.created = true;
    return true;
  }

  /** Puts the pending rules into their chain's array. */
  private flush(): void {
    const n = this.pendingCount;
    if (n === 0) return;
    const k = this.current;
    const have = this.rules[k];
    if (have === undefined) {
      // Literals for the usual few rules: V8 can allocate those where they will stay (pretenuring).
      const p = this.pending;
      this.rules[k] =
        n === 1 ? [p[0] as Rule] : n === 2 ? [p[0] as Rule, p[1] as Rule] : n === 3 ? [p[0] as Rule, p[1] as Rule, p[2] as Rule] : n === 4 ? [p[0] as Rule, p[1] as Rule, p[2] as Rule, p[3] as Rule] : p.slice(0, n);
    }
    else {
      for (let i = 0; i < n; i++) have.push(this.pending[i] as Rule);
      this.grown[k] = true;
    }
    this.pendingCount = 0;
  }

  /** TableDraft.validateAll over chain numbers (see {@link hooksAndLoopsValid}). */
  private valid(): boolean {
    return hooksAndLoopsValid(this.name, this.builtins, this.names.length, this.edgeFrom, this.edgeTo, this.allowed);
  }

  /** The committed table, or undefined when the kernel's checks refuse it. */
  table(): Table | undefined {
    this.flush();
    if (this.twice || !this.valid()) return undefined;
    const chains: { [name: string]: Chain } = {};
    const n = this.names.length;
    for (let k = 0; k < n; k++) {
      const name = this.names[k] as string;
      const have = this.rules[k];
      const rules = have === undefined ? [] : this.grown[k] === true ? have.slice() : have;
      chains[name] = k < this.builtins ? { name, policy: this.policies[k] as Policy, counters: this.counters[k] as Counters, rules } : { name, rules };
    }
    const absent = !this.created && n === this.builtins;
    return absent ? { name: this.name, absent: true, chains } : { name: this.name, chains };
  }
}

/** @internal FNV-1a over the UTF-16 code units of `s[from, to)`, to 30 bits (a small integer). */
export function nameHash(s: string, from: number, to: number): number {
  let h = 0x811c9dc5 | 0;
  for (let i = from; i < to; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h & 0x3fffffff;
}

/** The end of the first blank-separated word of `text[from, end)` (a space or a tab ends it), as chainLineName reads words. */
function wordEnd(text: string, from: number, end: number): number {
  let i = from;
  while (i < end) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 9) break;
    i++;
  }
  return i;
}

/**
 * `:NAME …` (Restorer.userChainLine and chainLine for the forms read here): false to hand the
 * whole text to the reference.
 */
function chainLine(b: TableBuilder, text: string, start: number, end: number): boolean {
  const name = chainLineName(text, start, end);
  if (name === undefined) return false;
  const i = start + 1 + name.length;
  // A chain named like a target extension changes what `-j NAME` means: the reference decides.
  if (IPTABLES_TARGET_NAMES.has(name)) return false;
  if (!isBuiltinChain(b.name, name)) {
    b.declare(name, text, start + 1);
    return true;
  }
  // `:NAME POLICY [p:b]`, single spaces, nothing after.
  const p = wordEnd(text, i + 1, end);
  if (p + 1 >= end || text.charCodeAt(p) !== 32) return false;
  const policy = text.slice(i + 1, p);
  if (policy !== 'ACCEPT' && policy !== 'DROP') return false;
  if (wordEnd(text, p + 1, end) !== end) return false;
  const counters = parseCounterPair(text.slice(p + 1, end));
  if (counters === undefined) return false;
  b.policy(name, policy, counters);
  return true;
}

/** parseSave of `text` built directly, or undefined when the reference must read it. */
export function buildSave(text: string): Ruleset | undefined {
  const base = freshRuleset();
  let tables: { [T in TableName]: Table } = base.tables;
  const seen = new Set<TableName>();
  let b: TableBuilder | undefined;
  const n = text.length;
  let next = 0;
  while (next <= n) {
    const start = next;
    let end = text.indexOf('\n', start);
    if (end < 0) end = n;
    next = end + 1;
    if (end === start) continue;
    const c0 = text.charCodeAt(start);
    if (c0 === 35 /* # */) continue;
    if (b === undefined) {
      if (c0 !== 42 /* * */) return undefined;
      const name = text.slice(start + 1, end);
      if (!isTableName(name) || seen.has(name)) return undefined;
      seen.add(name);
      b = new TableBuilder(name);
      continue;
    }
    if (c0 === 45 /* - */ || c0 === 91 /* [ */) {
      const rule = b.reader.rule(text, start, end, b.name, b, true);
      if (rule !== undefined ? !b.append(rule) : !b.generalLine(text, start, end, end < n)) return undefined;
    } else if (c0 === 58 /* : */) {
      if (!chainLine(b, text, start, end)) return undefined;
    } else if (end - start === 6 && text.startsWith('COMMIT', start)) {
      const table = b.table();
      if (table === undefined) return undefined;
      tables = { ...tables, [b.name]: table };
      b = undefined;
    } else return undefined;
  }
  return b === undefined ? { tables } : undefined;
}

/**
 * @internal
 * TableDraft.validateAll over chain numbers: every rule reachable from a built-in chain is
 * allowed in the hooks that reach it, and no loop is reachable. Chains are numbered with the
 * table's built-in chains first, in hook order; jump `e` goes from `edgeFrom[e]` to `edgeTo[e]`
 * (in rule order); `allowed[k]` is the hook mask chain k's rules allow.
 */
export function hooksAndLoopsValid(
  table: TableName,
  builtins: number,
  n: number,
  edgeFrom: ArrayLike<number>,
  edgeTo: ArrayLike<number>,
  allowed: ArrayLike<number>,
  edges: number = edgeFrom.length,
): boolean {
  // The jumps of each chain, contiguous: chain k's are adj[start[k], start[k + 1]).
  const start = new Int32Array(n + 1);
  for (let e = 0; e < edges; e++) {
    const k = (edgeFrom[e] as number) + 1;
    start[k] = (start[k] as number) + 1;
  }
  for (let k = 0; k < n; k++) start[k + 1] = (start[k + 1] as number) + (start[k] as number);
  const fill = start.slice(0, n);
  const adj = new Int32Array(edges);
  for (let e = 0; e < edges; e++) {
    const from = edgeFrom[e] as number;
    const at = fill[from] as number;
    fill[from] = at + 1;
    adj[at] = edgeTo[e] as number;
  }
  // Colour 1: on the path, 2: done. A postorder, reversed, puts every chain before those it jumps to.
  const colour = new Uint8Array(n);
  const hookMask = new Int32Array(n);
  const order = new Int32Array(n);
  let ordered = 0;
  const stack = new Int32Array(n);
  const next = new Int32Array(n);
  const hooks = BUILTIN_CHAINS[table];
  for (let root = 0; root < builtins; root++) {
    hookMask[root] = HOOK_BIT[hooks[root] as string] ?? 0;
    colour[root] = 1;
    let top = 0;
    stack[0] = root;
    next[0] = start[root] as number;
    while (top >= 0) {
      const c = stack[top] as number;
      const e = next[top] as number;
      if (e >= (start[c + 1] as number)) {
        colour[c] = 2;
        order[ordered++] = c;
        top--;
        continue;
      }
      next[top] = e + 1;
      const t = adj[e] as number;
      if (colour[t] === 1) return false;
      if (colour[t] === 0) {
        colour[t] = 1;
        top++;
        stack[top] = t;
        next[top] = start[t] as number;
      }
    }
  }
  for (let i = ordered - 1; i >= 0; i--) {
    const c = order[i] as number;
    const mask = hookMask[c] as number;
    if ((mask & ~(allowed[c] as number)) !== 0) return false;
    for (let e = start[c] as number; e < (start[c + 1] as number); e++) {
      const t = adj[e] as number;
      hookMask[t] = (hookMask[t] as number) | mask;
    }
  }
  return true;
}
