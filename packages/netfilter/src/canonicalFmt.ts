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
 * {@link formatCanonicalBytes} does the same over the input's bytes (an ASCII file as read),
 * with a prover in front of the readers: {@link LineProver} checks that a rule line is, word for
 * word, what `iptables-save` prints for a rule the table takes — in the shapes that make up a
 * kube-proxy dump — without making a rule, a string or any other object, and notes its chain,
 * the chain it jumps to and the hooks it allows. A line it cannot prove is read as above (made a
 * string on its own). The output is then runs of the input's own bytes.
 *
 * Anything else — a line neither reads, a rule that prints differently, a counter, a chain named
 * like a target, a table given twice, a check that fails, a missing COMMIT — returns `false`
 * before anything was written, and the caller runs `restore`, which accepts or refuses the input
 * with the real tool's messages. `restore` is the reference: `test/canonicalFmt.test.ts` checks
 * both entry points against it on generated rulesets and rules, every fixture and mutated lines.
 */
import { isAscii } from 'node:buffer';
import { ChunkWriter } from './chunkWriter.ts';
import { ALL_HOOKS, jumpTarget, refusedInTable, ruleHookMask, compareNames } from './draft.ts';
import { COMMON_WORDS, parseCommand, type CommandEnv } from './command.ts';
import { FastRuleReader, type JumpResolver } from './fastRule.ts';
import { Failure } from './failure.ts';
import { probabilityText, probabilityThreshold } from './matches.ts';
import { chainLineName } from './restore.ts';
import { ruleSpecWords } from './ruleSpec.ts';
import { isTableName } from './ruleset.ts';
import { SAVE_TABLE_ORDER } from './save.ts';
import { hooksAndLoopsValid } from './saveBuilder.ts';
import { splitInto } from './tokenize.ts';
import { IPTABLES_TARGET_NAMES, targetModule, targetModules } from './targets.ts';
import { BUILTIN_CHAINS, type Ipv4, type Rule, type TableName, type Target } from './types.ts';

interface LeanChain {
  readonly name: string;
  /** Index in {@link LeanTable.chains}; built-in chains come first, in hook order. */
  readonly index: number;
  readonly builtin: boolean;
  /** Where the name is in the input's bytes (the chain's `:NAME` line), or -1. */
  readonly at: number;
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

/** FNV-1a of the characters `s[from, to)` (bytes or one-byte characters alike). */
function nameHashOf(s: string, from: number, to: number): number {
  let h = 0x811c9dc5 | 0;
  for (let i = from; i < to; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h;
}

function byteHash(b: Uint8Array, from: number, to: number): number {
  let h = 0x811c9dc5 | 0;
  for (let i = from; i < to; i++) h = Math.imul(h ^ (b[i] as number), 0x01000193);
  return h;
}

/**
 * One table's block: its chains, where each rule line is (and its chain), the jumps between
 * chains and the hooks each chain's rules allow — columns of numbers, not objects per rule.
 */
class LeanTable implements JumpResolver {
  readonly chains: LeanChain[] = [];
  readonly builtins: number;
  private readonly ruleChain = new Column();
  private readonly ruleStart = new Column();
  private readonly ruleEnd = new Column();
  private readonly jumpFrom = new Column();
  private readonly jumpTo_ = new Column();
  /** Per chain index: the hooks its rules allow. */
  private allowed = new Column();
  /** Chain index + 1 by hash of the name, open addressing (0: empty): finds names read as bytes. */
  private slots = new Int32Array(64);
  /** Per chain index: the hash of its name (so a lookup compares names only on a full match). */
  private readonly hashes = new Column();

  constructor(readonly name: TableName) {
    for (const hook of BUILTIN_CHAINS[name]) this.add(hook, true);
    this.builtins = this.chains.length;
  }

  add(name: string, builtin: boolean, at = -1): LeanChain {
    const c: LeanChain = { name, index: this.chains.length, builtin, at, policy: 'ACCEPT', declared: false, rules: 0, jumpTarget: undefined, gotoTarget: undefined };
    this.chains.push(c);
    this.allowed.push(ALL_HOOKS);
    this.hashes.push(nameHashOf(name, 0, name.length));
    if (this.chains.length * 2 > this.slots.length) {
      this.slots = new Int32Array(this.slots.length * 4);
      for (const k of this.chains) this.slot(k);
    } else this.slot(c);
    return c;
  }

  private slot(c: LeanChain): void {
    const mask = this.slots.length - 1;
    const h = this.hashes.data[c.index] as number;
    let i = h & mask;
    while (this.slots[i] !== 0) i = (i + 1) & mask;
    this.slots[i] = c.index + 1;
  }

  /** Whether chain `k`'s name is `b[from, from + len)`. */
  sameName(b: Uint8Array, k: number, from: number, len: number): boolean {
    const c = this.chains[k] as LeanChain;
    const name = c.name;
    if (name.length !== len) return false;
    const at = c.at;
    // Compared from the end: names (KUBE-SEP-…) differ there.
    if (at >= 0) {
      for (let i = len - 1; i >= 0; i--) if (b[at + i] !== b[from + i]) return false;
    } else {
      for (let i = len - 1; i >= 0; i--) if (name.charCodeAt(i) !== b[from + i]) return false;
    }
    return true;
  }

  /** The chain named `name`, if there is one. */
  find(name: string): LeanChain | undefined {
    const slots = this.slots;
    const mask = slots.length - 1;
    const h = nameHashOf(name, 0, name.length);
    const hashes = this.hashes.data;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const v = slots[i] as number;
      if (v === 0) return undefined;
      if (hashes[v - 1] === h) {
        const c = this.chains[v - 1] as LeanChain;
        if (c.name === name) return c;
      }
    }
  }

  /** The index of the chain named `b[from, to)`, or -1. */
  indexAt(b: Uint8Array, from: number, to: number): number {
    const slots = this.slots;
    const mask = slots.length - 1;
    const len = to - from;
    const h = byteHash(b, from, to);
    const hashes = this.hashes.data;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const v = slots[i] as number;
      if (v === 0) return -1;
      if (hashes[v - 1] === h && this.sameName(b, v - 1, from, len)) return v - 1;
    }
  }

  jumpTo(name: string, isGoto: boolean): Target | undefined {
    const c = this.find(name);
    if (c === undefined || c.builtin) return undefined;
    if (isGoto) return (c.gotoTarget ??= Object.freeze({ kind: 'goto', chain: c.name }));
    return (c.jumpTarget ??= Object.freeze({ kind: 'jump', chain: c.name }));
  }

  /** Records the rule at `[start, end)` of the input, of `chain`. */
  rule(chain: LeanChain, start: number, end: number, rule: Rule): void {
    const to = jumpTarget(rule);
    this.proven(chain.index, start, end, ruleHookMask(rule), to === undefined ? -1 : (this.find(to) as LeanChain).index);
  }

  /** Records the rule at `[start, end)` of the input, of chain `k`: the hooks it allows and the chain it jumps to (or -1). */
  proven(k: number, start: number, end: number, mask: number, to: number): void {
    this.ruleChain.push(k);
    this.ruleStart.push(start);
    this.ruleEnd.push(end);
    (this.chains[k] as LeanChain).rules++;
    if (mask !== ALL_HOOKS) this.allowed.data[k] = (this.allowed.data[k] as number) & mask;
    if (to >= 0) {
      this.jumpFrom.push(k);
      this.jumpTo_.push(to);
    }
  }

  /** The hook and loop checks `TableDraft.validateAll` makes at COMMIT, over the columns. */
  valid(): boolean {
    const jumps = this.jumpFrom.length;
    return hooksAndLoopsValid(this.name, BUILTIN_CHAINS[this.name].length, this.chains.length, this.jumpFrom.data, this.jumpTo_.data, this.allowed.data, jumps);
  }

  /**
   * The table as `iptables-save` prints it: the rule lines as runs of consecutive input lines,
   * `lines(from, to)` writing `[from, to)` of the input and a newline.
   */
  write(out: ChunkWriter, lines: (from: number, to: number) => void): void {
    out.put(`*${this.name}\n`);
    const builtins = this.chains.filter((c) => c.builtin);
    const users = this.chains.filter((c) => !c.builtin).sort((a, b) => compareNames(a.name, b.name));
    const chains = [...builtins, ...users];
    for (const c of chains) out.put(c.builtin ? `:${c.name} ${c.policy} [0:0]\n` : `:${c.name} - [0:0]\n`);
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
        if (from >= 0) lines(from, to);
        from = s;
      }
      to = this.ruleEnd.data[r] as number;
    }
    if (from >= 0) lines(from, to);
    out.put('COMMIT\n');
  }
}

/** A name the fast reader would read as a target rather than as the chain that wins. */
function targetLike(name: string): boolean {
  return IPTABLES_TARGET_NAMES.has(name) || targetModule(name) !== undefined;
}

export interface FormatCanonicalOptions {
  /** The host's ipsets (`RestoreOptions.ipsets`). */
  readonly ipsets?: readonly string[];
  /** @internal Counts the rule lines {@link formatCanonicalBytes} proved and those it read (tests). */
  readonly stats?: { proved: number; read: number };
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
        const c = this.current?.find(name);
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

/** The line readers and the tables read so far, shared by both entry points. */
class Reader {
  readonly tables = new Map<TableName, LeanTable>();
  table: LeanTable | undefined;
  private readonly fast = new FastRuleReader();
  private readonly general: GeneralReader;

  constructor(opts: FormatCanonicalOptions) {
    this.general = new GeneralReader(opts.ipsets);
  }

  /** A `*name` line: false unless it opens a table not seen before. */
  tableLine(name: string): boolean {
    if (!isTableName(name) || this.tables.has(name)) return false;
    this.table = new LeanTable(name);
    this.tables.set(name, this.table);
    return true;
  }

  /**
   * The `-A` line `s[start, end)` of the open table, read as `restore` reads it: false unless it
   * appends one rule that prints as exactly this line. `pos`: where the line is in the input.
   */
  ruleLine(s: string, start: number, end: number, endsWithNewline: boolean, pos: number): boolean {
    const table = this.table as LeanTable;
    const fast = this.fast;
    let rule = fast.rule(s, start, end, table.name, table, false);
    let chain = rule === undefined ? undefined : table.find(fast.chain);
    if (rule === undefined) {
      // Another module or target: the general parser reads it, as `restore` does.
      const read = this.general.read(s.slice(start, end), endsWithNewline, table);
      if (read === undefined) return false;
      rule = read.rule;
      chain = table.find(read.chain);
    }
    if (chain === undefined || refusedInTable(rule, table.name)) return false;
    // The line must be exactly `-A CHAIN WORDS…`: what iptables-save prints for the rule.
    if (!printsAs(s, start + 3 + chain.name.length, end, rule)) return false;
    table.rule(chain, pos, pos + end - start, rule);
    return true;
  }

  /**
   * The chain line `s[start, end)` of the open table. `at`: where it is in the input's bytes
   * (-1: the input is `s`, whose positions the fast reader may compare names at).
   */
  chainLine(s: string, start: number, end: number, at: number): boolean {
    const table = this.table as LeanTable;
    const name = chainLineName(s, start, end);
    if (name === undefined) return false;
    const from = start + 1 + name.length;
    const rest = (word: string): boolean => end - from === word.length && s.startsWith(word, from);
    const existing = table.find(name);
    if (existing?.builtin === true) {
      // A built-in chain's policy, once; counters are not applied without --counters.
      if (existing.declared || existing.rules > 0) return false;
      if (rest(' ACCEPT [0:0]')) existing.policy = 'ACCEPT';
      else if (rest(' DROP [0:0]')) existing.policy = 'DROP';
      else return false;
      existing.declared = true;
      return true;
    }
    if (existing !== undefined || !rest(' - [0:0]') || targetLike(name)) return false;
    if (at >= 0) {
      table.add(name, false, at + 1);
      this.fast.name(name);
    } else {
      table.add(name, false);
      this.fast.name(name, s, start + 1);
    }
    return true;
  }

  /** `COMMIT`: false when the table fails the kernel's checks. */
  commit(): boolean {
    if (!(this.table as LeanTable).valid()) return false;
    this.table = undefined;
    return true;
  }

  /** Whether the input was a whole dump: at least one table, each committed. */
  complete(): boolean {
    return this.table === undefined && this.tables.size > 0;
  }

  write(out: ChunkWriter, lines: (from: number, to: number) => void): void {
    for (const name of SAVE_TABLE_ORDER) this.tables.get(name)?.write(out, lines);
    out.flush();
  }
}

/**
 * Writes what `iptables-save` prints after `iptables-restore` of `text` on a fresh host, when
 * `text` is in the canonical form throughout (see the module comment), and returns true; returns
 * false, having written nothing, for any other input.
 */
export function formatCanonical(text: string, write: (chunk: string) => void, opts: FormatCanonicalOptions = {}): boolean {
  const reader = new Reader(opts);
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
    if (reader.table === undefined) {
      if (c0 !== 42 /* * */ || !reader.tableLine(text.slice(start + 1, end))) return false;
      continue;
    }
    if (c0 === 45 /* - */) {
      if (!reader.ruleLine(text, start, end, end < n, start)) return false;
      continue;
    }
    if (c0 === 58 /* : */) {
      if (!reader.chainLine(text, start, end, -1)) return false;
      continue;
    }
    if (end - start === 6 && text.startsWith('COMMIT', start) && reader.commit()) continue;
    return false;
  }
  if (!reader.complete()) return false;
  const out = new ChunkWriter(write);
  reader.write(out, (from, to) => {
    out.put(text.slice(from, to));
    out.put('\n');
  });
  return true;
}

/**
 * {@link formatCanonical} of a file's bytes: an ASCII input is read as bytes (its lines proved
 * canonical in place where {@link LineProver} can), and what is printed is handed on as runs of
 * those bytes (`writeBytes`, views of `bytes`) and pieces of text (`write`) for the rest; any
 * other input is decoded as UTF-8 and given to {@link formatCanonical}.
 */
export function formatCanonicalBytes(bytes: Buffer, write: (chunk: string) => void, writeBytes: (chunk: Uint8Array) => void, opts: FormatCanonicalOptions = {}): boolean {
  if (!isAscii(bytes)) return formatCanonical(bytes.toString('utf8'), write, opts);
  const reader = new Reader(opts);
  const prover = new LineProver(bytes);
  const stats = opts.stats;
  const n = bytes.length;
  let next = 0;
  while (next < n) {
    const start = next;
    let end = bytes.indexOf(10, start);
    if (end < 0) end = n;
    next = end + 1;
    if (end === start) continue;
    const c0 = bytes[start];
    if (c0 === 35 /* # */) continue;
    const table = reader.table;
    if (table === undefined) {
      if (c0 !== 42 /* * */ || !reader.tableLine(bytes.toString('latin1', start + 1, end))) return false;
      continue;
    }
    if (c0 === 45 /* - */) {
      if (prover.prove(table, start, end)) {
        if (stats !== undefined) stats.proved++;
        continue;
      }
      // Not proved: read as `formatCanonical` reads it, made a string of its own.
      if (!reader.ruleLine(bytes.toString('latin1', start, end), 0, end - start, end < n, start)) return false;
      if (stats !== undefined) stats.read++;
      continue;
    }
    if (c0 === 58 /* : */) {
      if (userChainLine(table, bytes, start, end) || reader.chainLine(bytes.toString('latin1', start, end), 0, end - start, start)) continue;
      return false;
    }
    if (end - start === 6 && bytes.toString('latin1', start, end) === 'COMMIT' && reader.commit()) continue;
    return false;
  }
  if (!reader.complete()) return false;
  const out = new ChunkWriter(write, writeBytes);
  reader.write(out, (from, to) => {
    // The newline after the run too, when the input has it.
    if (to < n) out.putBytes(bytes, from, to + 1);
    else {
      out.putBytes(bytes, from, to);
      out.put('\n');
    }
  });
  return true;
}

// ---------------------------------------------------------------------------------------------
// The prover

/** Target extensions and the names of those kept verbatim are all capitals (see fastRule.ts). */
const targetNamesAreCapitals = [...IPTABLES_TARGET_NAMES, ...targetModules()].every((t) => /^[A-Z]+$/.test(typeof t === 'string' ? t : t.name));
const USER_CHAIN_TAIL = ' - [0:0]';

/**
 * A new user chain's line `:NAME - [0:0]` read in place, NAME of `[A-Za-z0-9_-]` with some
 * other character than a capital (so not named like a target) and not taken: the chain is added
 * to `table`. False, having done nothing, for any other line (the reader reads it).
 */
function userChainLine(table: LeanTable, b: Buffer, start: number, end: number): boolean {
  const nameEnd = end - USER_CHAIN_TAIL.length;
  const len = nameEnd - start - 1;
  if (!targetNamesAreCapitals || len < 1 || len > 28) return false;
  for (let i = 0; i < USER_CHAIN_TAIL.length; i++) if (b[nameEnd + i] !== USER_CHAIN_TAIL.charCodeAt(i)) return false;
  let capitals = true;
  for (let i = start + 1; i < nameEnd; i++) {
    const c = b[i] as number;
    if (c >= 128 || SAFE[c] === 0) return false;
    if (c < 65 || c > 90) capitals = false;
  }
  if (capitals || table.indexAt(b, start + 1, nameEnd) >= 0) return false;
  table.add(b.toString('latin1', start + 1, nameEnd), false, start + 1);
  return true;
}

/** Characters of a bare word the prover reads: printable ASCII but quotes and backslash. */
const WORD = new Uint8Array(128);
for (let c = 33; c < 127; c++) WORD[c] = 1;
WORD[34] = WORD[39] = WORD[92] = 0;
/** Characters `iptables-save` prints a string without quotes for (`quoteSaveString`). */
const SAFE = new Uint8Array(128);
for (let c = 48; c <= 57; c++) SAFE[c] = 1;
for (let c = 65; c <= 90; c++) SAFE[c] = 1;
for (let c = 97; c <= 122; c++) SAFE[c] = 1;
SAFE[95] = SAFE[45] = 1;
/** Characters of an interface name the prover takes. */
const IFACE = new Uint8Array(128);
for (let c = 48; c <= 57; c++) IFACE[c] = 1;
for (let c = 65; c <= 90; c++) IFACE[c] = 1;
for (let c = 97; c <= 122; c++) IFACE[c] = 1;
IFACE[95] = IFACE[45] = IFACE[46] = 1;

const COMMENT_MAX_BYTES = 255;
const IFNAMSIZ = 16;

const REJECT_WITH: readonly string[] = [
  'icmp-port-unreachable',
  'icmp-net-unreachable',
  'icmp-host-unreachable',
  'icmp-proto-unreachable',
  'icmp-net-prohibited',
  'icmp-host-prohibited',
  'icmp-admin-prohibited',
  'tcp-reset',
];

// What the modules say about the rules the prover proves, asked once of the modules themselves.
const ANY: Ipv4 = 0 as Ipv4;
const DNAT_RULE: Rule = { matches: [], target: { kind: 'DNAT', to: { minIp: ANY, maxIp: ANY }, random: false, persistent: false } };
const REJECT_RULE: Rule = { matches: [], target: { kind: 'REJECT', with: 'icmp-port-unreachable' } };
/** The hooks a rule with only the matches the prover reads may run from. */
const MATCHES_MASK = ruleHookMask({
  matches: [
    { kind: 'comment', comment: 'x' },
    { kind: 'tcp', dport: { range: { from: 1, to: 1 }, negate: false } },
    { kind: 'statistic', mode: 'random', probability: { text: '0.50000000000', threshold31: 1 << 30 }, negate: false },
  ],
  proto: { proto: 6, negate: false },
});
const UDP_MASK = ruleHookMask({ matches: [{ kind: 'udp', dport: { range: { from: 1, to: 1 }, negate: false } }], proto: { proto: 17, negate: false } });
const DNAT_MASK = ruleHookMask(DNAT_RULE);
const REJECT_MASK = ruleHookMask(REJECT_RULE);

/**
 * Proves, over the bytes of the input, that an `-A` line is exactly what `iptables-save` prints
 * for a rule the table takes, for the lines the fast reader reads most: the header options
 * (`-s`, `-d` as `a.b.c.d/len`, `-i`, `-o`, `-p tcp|udp|icmp`, each maybe negated, in that
 * order), `-m comment`, `-m tcp`/`-m udp` with `--sport`/`--dport`, `-m statistic --mode
 * random`, and as target a verdict, a jump or goto to a user chain, `DNAT --to-destination` or
 * `REJECT --reject-with`. It makes no object: it reads, compares and records numbers. A line in
 * any other form, or in a spelling `iptables-save` would not print, is not proved (the caller
 * reads it with the readers); proving is never wrong about a line the real tool would refuse or
 * print otherwise (test/canonicalFmt.test.ts).
 */
class LineProver {
  /** The end of the line and the end of the last word read. */
  private n = 0;
  private p = 0;
  /** The word read last: `b[ws, we)`. */
  private ws = 0;
  private we = 0;
  /** Probability texts proved canonical (a dump repeats a few). */
  private readonly probabilities: string[] = [];
  /** The chain of the last rule proved. */
  private last = -1;
  /** Where the last {@link quad} ended. */
  private end = 0;

  constructor(private readonly b: Buffer) {}

  /**
   * Reads the next word (a single space before it): false at the end of the line or on anything
   * else (then {@link p} stays short of the end).
   */
  private word(): boolean {
    const b = this.b;
    const n = this.n;
    let i = this.p;
    if (i >= n || b[i] !== 32) return false;
    const from = ++i;
    while (i < n) {
      const c = b[i] as number;
      if (c === 32) break;
      if (WORD[c] === 0) return false;
      i++;
    }
    if (i === from) return false;
    this.ws = from;
    this.we = i;
    this.p = i;
    return true;
  }

  /** Whether the word read last is `w`. */
  private is(w: string): boolean {
    const b = this.b;
    const from = this.ws;
    if (this.we - from !== w.length) return false;
    for (let i = 0; i < w.length; i++) if (b[from + i] !== w.charCodeAt(i)) return false;
    return true;
  }

  /** An unsigned decimal without leading zeros in `b[from, to)`, at most `max`, else -1. */
  private decimal(from: number, to: number, max: number): number {
    const b = this.b;
    if (to <= from || to - from > 10 || (b[from] === 48 && to - from > 1)) return -1;
    let v = 0;
    for (let i = from; i < to; i++) {
      const c = (b[i] as number) - 48;
      if (c < 0 || c > 9) return -1;
      v = v * 10 + c;
    }
    return v <= max ? v : -1;
  }

  /** A dotted quad from `from`, before `to`: its value (and where it ends in {@link end}), or -1. */
  private quad(from: number, to: number): number {
    const b = this.b;
    let addr = 0;
    let i = from;
    for (let part = 0; part < 4; part++) {
      if (part > 0) {
        if (b[i] !== 46 /* . */) return -1;
        i++;
      }
      let k = i;
      while (k < to && (b[k] as number) >= 48 && (b[k] as number) <= 57) k++;
      const v = this.decimal(i, k, 255);
      if (v < 0 || k - i > 3) return -1;
      addr = addr * 256 + v;
      i = k;
    }
    this.end = i;
    return addr;
  }

  /** The word read last as `a.b.c.d/len`, with no bits set past the prefix (as printed). */
  private cidr(): boolean {
    const addr = this.quad(this.ws, this.we);
    if (addr < 0 || this.b[this.end] !== 47 /* / */) return false;
    const prefix = this.decimal(this.end + 1, this.we, 32);
    if (prefix <= 0) return false;
    return prefix === 32 || addr % 2 ** (32 - prefix) === 0;
  }

  /** The word read last as an interface name (`name` or `name+`). */
  private iface(): boolean {
    const b = this.b;
    let to = this.we;
    const len = to - this.ws;
    if (len >= IFNAMSIZ) return false;
    if (b[to - 1] === 43 /* + */) to--;
    if (to === this.ws) return false;
    for (let i = this.ws; i < to; i++) if (IFACE[b[i] as number] === 0) return false;
    return true;
  }

  /**
   * `[!] --sport R [!] --dport R`, either or neither, R `p` or `a:b` (a < b, not 0:65535), and
   * the next word read: 1 when there is one, 0 at the end of the line, -1 when not as printed.
   */
  private ports(): number {
    let stage = 0;
    let more = this.word();
    while (more) {
      let negate = false;
      if (this.is('!')) {
        negate = true;
        if (!this.word()) return -1;
      }
      const which = this.is('--sport') ? 1 : this.is('--dport') ? 2 : 0;
      if (which === 0) return negate ? -1 : 1;
      if (which <= stage || !this.word()) return -1;
      stage = which;
      const b = this.b;
      let colon = this.ws;
      while (colon < this.we && b[colon] !== 58 /* : */) colon++;
      const from = this.decimal(this.ws, colon, 65535);
      if (from < 0) return -1;
      if (colon < this.we) {
        const to = this.decimal(colon + 1, this.we, 65535);
        if (to <= from || (from === 0 && to === 65535)) return -1;
      }
      more = this.word();
    }
    return 0;
  }

  /** `--comment TEXT` as printed: bare when only `[A-Za-z0-9_-]`, else quoted, no escapes. */
  private comment(): boolean {
    if (!this.word() || !this.is('--comment')) return false;
    const b = this.b;
    const n = this.n;
    let i = this.p;
    if (i >= n || b[i] !== 32) return false;
    i++;
    if (b[i] === 34 /* " */) {
      const from = ++i;
      let safe = true;
      for (; i < n; i++) {
        const c = b[i] as number;
        if (c === 34) break;
        if (c < 32 || c > 126 || c === 92 || c === 39) return false;
        if (SAFE[c] === 0) safe = false;
      }
      // Unterminated, empty, too long, or quoted without need: not as printed.
      if (i >= n || i === from || i - from > COMMENT_MAX_BYTES || safe) return false;
      i++;
      if (i < n && b[i] !== 32) return false;
    } else {
      const from = i;
      while (i < n && b[i] !== 32) {
        if (SAFE[b[i] as number] === 0) return false;
        i++;
      }
      if (i === from || i - from > COMMENT_MAX_BYTES) return false;
    }
    this.p = i;
    return true;
  }

  /** `--mode random --probability P`, P as iptables-save prints it. */
  private statistic(): boolean {
    if (!this.word() || !this.is('--mode') || !this.word() || !this.is('random') || !this.word() || !this.is('--probability') || !this.word()) return false;
    for (const known of this.probabilities) if (this.is(known)) return true;
    const b = this.b;
    const text = b.toString('latin1', this.ws, this.we);
    // d.ddd…, the form the fast reader reads; then it must be the printed text of its value.
    if (!/^[01]\.[0-9]+$/.test(text)) return false;
    const p = Number(text);
    if (!(p >= 0 && p <= 1) || probabilityText(probabilityThreshold(p)) !== text) return false;
    if (this.probabilities.length < 16) this.probabilities.push(text);
    return true;
  }

  /** The word read last as DNAT's `a.b.c.d[:port]`; a port needs tcp or udp, not negated. */
  private natDestination(proto: number, protoNegate: boolean): boolean {
    const addr = this.quad(this.ws, this.we);
    if (addr < 0) return false;
    if (this.end === this.we) return true;
    if (this.b[this.end] !== 58 /* : */ || proto === 0 || proto === 1 || protoNegate) return false;
    return this.decimal(this.end + 1, this.we, 65535) > 0;
  }

  /** Proves the line `b[start, end)` for `table` and records it there; false (nothing recorded) when it cannot. */
  prove(table: LeanTable, start: number, end: number): boolean {
    const b = this.b;
    if (end - start < 4 || b[start + 1] !== 65 /* A */ || b[start + 2] !== 32) return false;
    this.n = end;
    this.p = start + 2;
    if (!this.word()) return false;
    // The chain: the last one again, the next one declared, or found by its name.
    const len = this.we - this.ws;
    const last = this.last;
    let chain: number;
    if (last >= 0 && table.chains[last] !== undefined && table.sameName(b, last, this.ws, len)) chain = last;
    else if (last >= 0 && last + 1 < table.chains.length && table.sameName(b, last + 1, this.ws, len)) chain = last + 1;
    else chain = table.indexAt(b, this.ws, this.we);
    if (chain < 0) return false;
    const chainName = (table.chains[chain] as LeanChain).name;

    // The IP header, in the order iptables-save prints it.
    let stage = 0; // the next option allowed: 0 -s, 1 -d, 2 -i, 3 -o, 4 -p
    let proto = 0;
    let protoNegate = false;
    let more = this.word();
    while (more && stage < 5) {
      let negate = false;
      if (this.is('!')) {
        negate = true;
        if (!this.word()) return false;
      }
      const opt = this.is('-s') ? 0 : this.is('-d') ? 1 : this.is('-i') ? 2 : this.is('-o') ? 3 : this.is('-p') ? 4 : -1;
      if (opt < 0) {
        if (negate) return false;
        break;
      }
      if (opt < stage || !this.word()) return false;
      stage = opt + 1;
      if (opt <= 1) {
        if (!this.cidr()) return false;
      } else if (opt <= 3) {
        if (!this.iface()) return false;
        // The real tool refuses -o in PREROUTING/INPUT and -i in POSTROUTING/OUTPUT.
        if (opt === 3 ? chainName === 'PREROUTING' || chainName === 'INPUT' : chainName === 'POSTROUTING' || chainName === 'OUTPUT') return false;
      } else {
        proto = this.is('tcp') ? 6 : this.is('udp') ? 17 : this.is('icmp') ? 1 : 0;
        if (proto === 0) return false;
        protoNegate = negate;
      }
      more = this.word();
    }

    // -m modules, each at most once.
    let mask = ALL_HOOKS;
    let loaded = 0;
    while (more && this.is('-m')) {
      if (!this.word()) return false;
      let bit: number;
      if (this.is('comment')) {
        bit = 1;
        if (!this.comment()) return false;
        more = this.word();
      } else if (this.is('tcp') || this.is('udp')) {
        const tcp = this.is('tcp');
        bit = tcp ? 2 : 4;
        if (proto !== (tcp ? 6 : 17) || protoNegate) return false;
        if (!tcp) mask &= UDP_MASK;
        const next = this.ports();
        if (next < 0) return false;
        more = next === 1;
      } else if (this.is('statistic')) {
        bit = 8;
        if (!this.statistic()) return false;
        more = this.word();
      } else return false;
      if ((loaded & bit) !== 0) return false;
      loaded |= bit;
    }
    if (loaded !== 0) mask &= MATCHES_MASK;

    // The target, which ends the line.
    let to = -1;
    if (more) {
      const isGoto = this.is('-g');
      if ((!isGoto && !this.is('-j')) || !this.word()) return false;
      if (isGoto) {
        to = table.indexAt(b, this.ws, this.we);
        if (to < table.builtins) return false;
      } else if (this.is('ACCEPT') || this.is('RETURN')) {
        // a verdict
      } else if (this.is('DROP')) {
        // "The nat table is not intended for filtering".
        if (table.name === 'nat') return false;
      } else if (this.is('DNAT')) {
        if (refusedInTable(DNAT_RULE, table.name) || !this.word() || !this.is('--to-destination') || !this.word() || !this.natDestination(proto, protoNegate)) return false;
        mask &= DNAT_MASK;
      } else if (this.is('REJECT')) {
        if (refusedInTable(REJECT_RULE, table.name) || !this.word() || !this.is('--reject-with') || !this.word()) return false;
        const k = REJECT_WITH.findIndex((w) => this.is(w));
        if (k < 0 || (REJECT_WITH[k] === 'tcp-reset' && (proto !== 6 || protoNegate))) return false;
        mask &= REJECT_MASK;
      } else {
        to = table.indexAt(b, this.ws, this.we);
        if (to < table.builtins) return false;
      }
    }
    // Every word read (a word not read ends the reading short of the line's end).
    if (this.p < this.n) return false;
    this.last = chain;
    table.proven(chain, start, end, mask, to);
    return true;
  }
}
