/**
 * @internal
 * A fast reader for the rule lines `iptables-save` itself prints, in the shapes that make up
 * almost all of a kube-proxy dump: the header options in canonical order (`-s -d -i -o -p`), then
 * `-m` matches and a target whose modules give a fast-path reader (`MatchModule.fast`,
 * `TargetModule.fast`, see src/fastCursor.ts: today comment, tcp/udp ports, `statistic --mode
 * random`, DNAT and REJECT, each in its own module), or a verdict, a jump or a goto.
 *
 * It reads the line in place, inside the whole input (no line string, no word list, no option
 * tables, no extension instances), and shares the immutable pieces consecutive rules repeat (a
 * comment and the match arrays made with it, a `-m tcp --dport N`, an address, a probability,
 * `[0:0]` counters): the model is immutable data, so equal pieces may be one object. It keeps
 * only small caches: at 100k rules a lookup in a large table (a cache miss or several) costs more
 * than the objects it would save (measured; see docs/performance.md).
 *
 * Anything else — another module or option, another order, a quote with an escape, a tab, a
 * doubled space, a value in a form `iptables-save` does not print, input the real tool would
 * reject — makes {@link FastRuleReader.rule} return `undefined` before anything has changed, and
 * the caller reads the line with the general parser (`parseCommand`). That parser is the
 * reference: the rule read here must deep-equal the one it reads, and it reports every error.
 * `test/fastRule.test.ts` checks both on generated rulesets, every fixture and mutated lines.
 */
import { protoMatch, ACCEPT_TARGET, DROP_TARGET, RETURN_TARGET } from './command.ts';
import type { FastCursor, FastMatchReader, FastTargetReader } from './fastCursor.ts';
import { matchModules, type MatchModule } from './matches.ts';
import { IPTABLES_TARGET_NAMES, targetModule, targetModules, type TargetModule } from './targets.ts';
import type { AddrMatch, Counters, IfaceMatch, Ipv4, Match, Rule, TableName, Target } from './types.ts';

/** What the reader needs from the table being restored (a `TableDraft`). */
export interface JumpResolver {
  /** The shared `-j`/`-g` target for an existing user chain, else undefined (`CommandEnv.jumpTo`). */
  jumpTo(name: string, isGoto: boolean): Target | undefined;
  /** Optionally, {@link jumpTo} for `-j` with the name read in place: `s[from, to)`. */
  jumpAt?(s: string, from: number, to: number): Target | undefined;
}

type MutableRule = { -readonly [K in keyof Rule]: Rule[K] };

/** Longer words may need "Parameter too long!" or truncation checks: left to the general parser. */
const LONG_WORD = 255;
const IFNAMSIZ = 16;
/** The matches and targets whose modules give a fast-path reader (`fast`), in registry order. */
const FAST_MATCHES: readonly MatchModule[] = [...matchModules()].filter((m) => m.fast !== undefined);
const FAST_TARGETS: readonly TargetModule[] = [...targetModules()].filter((t) => t.fast !== undefined);
/** Each `-m` at most once: a bit per fast match (there are few). */
const MAX_FAST_MATCHES = 30;
const CHAIN_NAME_MAX = 28;
/** Slots of the address cache, indexed by the top bits of a multiplicative hash. */
const ADDR_BITS = 8;
const ADDR_SLOTS = 1 << ADDR_BITS;

/** Target extensions and the names of those kept verbatim are all capitals: a name with anything else is a chain. */
const TARGET_NAME_CHARS = /^[A-Z]+$/;
const targetNamesAreCapitals = [...IPTABLES_TARGET_NAMES, ...targetModules()].every((t) => TARGET_NAME_CHARS.test(typeof t === 'string' ? t : t.name));

export class FastRuleReader implements FastCursor {
  /** The input, the end of the current line and the read position. */
  s = '';
  n = 0;
  p = 0;
  /** The chain of the last rule read. */
  chain = '';
  /**
   * User chain names as the table stores them, in the order they were declared. A dump lists
   * rules chain by chain in that same order, so the chain of an `-A` line is nearly always the
   * last one or the next one declared: found without a lookup or a new string.
   */
  private readonly declared: string[] = [];
  private nextDeclared = 0;
  /**
   * Where each declared name was read in {@link text} (-1: elsewhere), and where the chain of
   * the last rule was read: names are compared in place, inside one flat string, which costs
   * much less than comparing with a string sliced from it.
   */
  private readonly declaredAt: number[] = [];
  private chainAt = -1;
  private text = '';

  // Shared immutable pieces, per reader (one reader per restore). Only small caches that stay in
  // the processor's cache: a lookup in a large table costs more than the objects it would save.
  /** The fast readers of the modules, made for this reader (they keep their own small caches). */
  private readonly matchReaders: readonly FastMatchReader[] = FAST_MATCHES.map((m) => (m.fast as () => FastMatchReader)());
  private readonly targetReaders: readonly FastTargetReader[] = FAST_TARGETS.map((t) => (t.fast as () => FastTargetReader)());
  /** What the readers are told of the rule being read (mutated per rule, never kept by them). */
  private readonly ctx: { proto: number; protoNegate: boolean; table: TableName } = { proto: 0, protoNegate: false, table: 'filter' };
  /**
   * The first match of the last rule whose arrays were shared (a comment kube-proxy repeats, which
   * its reader returns as the same object), and the match arrays made with it: `[first]`, and
   * `[first, other]` for the last `other` it was made with.
   */
  private first: Match | undefined;
  private alone: Match[] | undefined;
  private other: Match | undefined;
  private pair: Match[] | undefined;
  private readonly noMatches: Match[] = [];
  /** Address matches, direct-mapped by address, prefix and negation (a pod CIDR repeats). */
  private readonly addrKeys = new Float64Array(ADDR_SLOTS).fill(-1);
  private readonly addrs: (AddrMatch | undefined)[] = new Array<AddrMatch | undefined>(ADDR_SLOTS).fill(undefined);
  private zeroCounters: Counters | undefined;
  /** The target of the last `-j CHAIN` read, and the table that gave it. */
  private lastJump: (Target & { readonly kind: 'jump' }) | undefined;
  private lastJumpFrom: JumpResolver | undefined;

  /** Scratch results of the number readers. */
  addr = 0;
  num = 0;

  /** Remembers a chain name as the table stores it, so that lines naming it need no new string. */
  name(name: string, text?: string, at = -1): void {
    this.declared.push(name);
    if (text !== undefined && at >= 0 && (this.text === '' || this.text === text)) {
      this.text = text;
      this.declaredAt.push(at);
    } else this.declaredAt.push(-1);
  }

  /** Whether `s[a, a + len)` and `s[b, b + len)` are the same text. */
  private static same(s: string, a: number, b: number, len: number): boolean {
    for (let i = 0; i < len; i++) if (s.charCodeAt(a + i) !== s.charCodeAt(b + i)) return false;
    return true;
  }

  /** {@link same} from the end: chain names (KUBE-SEP-…) differ at their ends. */
  private static sameFromEnd(s: string, a: number, b: number, len: number): boolean {
    for (let i = len - 1; i >= 0; i--) if (s.charCodeAt(a + i) !== s.charCodeAt(b + i)) return false;
    return true;
  }

  /**
   * The rule of the line `s[from, end)` when it is `[p:b] -A CHAIN …` in a shape this reader
   * knows (then {@link chain} names its chain), else undefined. `counters`: whether `[p:b]` is
   * applied (`--counters`).
   */
  rule(s: string, from: number, end: number, table: TableName, t: JumpResolver, counters: boolean): Rule | undefined {
    this.s = s;
    this.n = end;
    this.p = from;

    let ruleCounters: Counters | undefined;
    if (s.charCodeAt(from) === 91 /* [ */) {
      const c = this.counterPrefix();
      if (c === undefined) return undefined;
      if (counters) ruleCounters = c;
    }
    if (!s.startsWith('-A ', this.p)) return undefined;
    this.p += 3;
    const chainEnd = this.wordEnd();
    // An empty or over-long chain name: the general parser words the error.
    if (chainEnd < 0 || chainEnd - this.p > CHAIN_NAME_MAX) return undefined;
    const len = chainEnd - this.p;
    const at = this.p;
    let chain = this.chain;
    const inText = s === this.text;
    if (chain.length !== len || !(inText && this.chainAt >= 0 ? FastRuleReader.sameFromEnd(s, this.chainAt, at, len) : s.startsWith(chain, at))) {
      const k = this.nextDeclared;
      const next = this.declared[k];
      const nextAt = this.declaredAt[k] as number;
      if (next !== undefined && next.length === len && (inText && nextAt >= 0 ? FastRuleReader.sameFromEnd(s, nextAt, at, len) : s.startsWith(next, at))) {
        chain = next;
        this.nextDeclared++;
      } else chain = s.slice(at, chainEnd);
    }
    this.next(chainEnd);
    const rule = this.spec(chain, table, t, ruleCounters);
    if (rule !== undefined) {
      this.chain = chain;
      this.chainAt = inText ? at : -1;
    }
    return rule;
  }

  private spec(chain: string, table: TableName, t: JumpResolver, counters: Counters | undefined): Rule | undefined {
    const s = this.s;
    const n = this.n;

    // The IP header, in the order iptables-save prints it.
    let src: AddrMatch | undefined;
    let dst: AddrMatch | undefined;
    let inIface: IfaceMatch | undefined;
    let outIface: IfaceMatch | undefined;
    let proto = 0;
    let protoNegate = false;
    let stage = 0; // the next option allowed: 0 -s, 1 -d, 2 -i, 3 -o, 4 -p, 5 none
    while (stage < 5 && this.p + 3 < n) {
      let q = this.p;
      let negate = false;
      if (s.charCodeAt(q) === 33 /* ! */) {
        if (s.charCodeAt(q + 1) !== 32) return undefined;
        negate = true;
        q += 2;
        if (q + 3 >= n) return undefined;
      }
      if (s.charCodeAt(q) !== 45 /* - */ || s.charCodeAt(q + 2) !== 32) {
        if (negate) return undefined;
        break;
      }
      const letter = s.charCodeAt(q + 1);
      const opt = letter === 115 /* s */ ? 0 : letter === 100 /* d */ ? 1 : letter === 105 /* i */ ? 2 : letter === 111 /* o */ ? 3 : letter === 112 /* p */ ? 4 : -1;
      if (opt < 0) {
        if (negate) return undefined;
        break;
      }
      if (opt < stage) return undefined;
      stage = opt + 1;
      this.p = q + 3;
      if (opt <= 1) {
        const a = this.address(negate);
        if (a === undefined) return undefined;
        if (opt === 0) src = a;
        else dst = a;
        continue;
      }
      const end = this.wordEnd();
      if (end < 0) return undefined;
      if (opt <= 3) {
        const len = end - this.p;
        if (len >= IFNAMSIZ) return undefined;
        const last = s.charCodeAt(end - 1);
        // `-i +` (any interface) is dropped from the rule: left to the general parser.
        if (last === 43 /* + */ && len === 1) return undefined;
        const iface: IfaceMatch =
          last === 43 ? { name: s.slice(this.p, end - 1), wildcard: true, negate } : { name: s.slice(this.p, end), wildcard: false, negate };
        if (opt === 2) inIface = iface;
        else outIface = iface;
      } else {
        proto = this.protocol(end);
        if (proto === 0) return undefined;
        protoNegate = negate;
      }
      this.next(end);
    }
    // The real tool refuses -o in PREROUTING/INPUT and -i in POSTROUTING/OUTPUT.
    if (outIface !== undefined && (chain === 'PREROUTING' || chain === 'INPUT')) return undefined;
    if (inIface !== undefined && (chain === 'POSTROUTING' || chain === 'OUTPUT')) return undefined;

    // -m modules, each at most once (so at most four), kept in locals: the array is made at the
    // end with its exact length.
    let m0: Match | undefined;
    let m1: Match | undefined;
    let m2: Match | undefined;
    let m3: Match | undefined;
    let count = 0;
    let loaded = 0;
    const ctx = this.ctx;
    ctx.proto = proto;
    ctx.protoNegate = protoNegate;
    ctx.table = table;
    while (this.p < n && s.startsWith('-m ', this.p)) {
      this.p += 3;
      const end = this.wordEnd();
      if (end < 0) return undefined;
      const len = end - this.p;
      let k = 0;
      for (; k < FAST_MATCHES.length; k++) {
        const name = (FAST_MATCHES[k] as MatchModule).name;
        if (name.length === len && s.startsWith(name, this.p)) break;
      }
      if (k === FAST_MATCHES.length || k >= MAX_FAST_MATCHES) return undefined;
      const bit = 1 << k;
      this.next(end);
      const m = (this.matchReaders[k] as FastMatchReader)(this, ctx);
      if (m === undefined || (loaded & bit) !== 0) return undefined;
      loaded |= bit;
      if (count === 0) m0 = m;
      else if (count === 1) m1 = m;
      else if (count === 2) m2 = m;
      else if (count === 3) m3 = m;
      else return undefined;
      count++;
    }

    // The target, which ends the line.
    let target: Target | undefined;
    if (this.p < n) {
      const isGoto = s.startsWith('-g ', this.p);
      if (!isGoto && !s.startsWith('-j ', this.p)) return undefined;
      this.p += 3;
      const end = this.wordEnd();
      if (end < 0) return undefined;
      target = isGoto ? this.jump(end, true, t) : this.jumpOrVerdict(end, table, t, proto, protoNegate);
      if (target === undefined || this.p < n) return undefined;
    }

    // Arrays of exact length; those of a remembered comment alone or with one other shared
    // match are shared too (kube-proxy repeats them: a service's cluster-IP rules, its endpoints').
    let matches: Match[];
    // A first match that is not the one before (a new comment) starts a new sharing.
    if (m0 !== this.first) {
      this.first = m0;
      this.alone = undefined;
      this.other = undefined;
      this.pair = undefined;
    }
    const shared = m0 !== undefined;
    if (count === 0) matches = this.noMatches;
    else if (count === 1) matches = shared ? (this.alone ??= [m0 as Match]) : [m0 as Match];
    else if (count === 2) {
      if (shared && this.other === m1 && this.pair !== undefined) matches = this.pair;
      else {
        matches = [m0 as Match, m1 as Match];
        if (shared) {
          this.other = m1;
          this.pair = matches;
        }
      }
    } else if (count === 3) matches = [m0 as Match, m1 as Match, m2 as Match];
    else matches = [m0 as Match, m1 as Match, m2 as Match, m3 as Match];
    // The common shapes as one literal each; the rest as CommandParser.buildRule builds them
    // (the same properties in the same order either way).
    if (inIface === undefined && outIface === undefined && counters === undefined && target !== undefined) {
      if (proto === 0) {
        if (src === undefined && dst === undefined) return { matches, target };
        if (dst === undefined) return { matches, src: src as AddrMatch, target };
      } else if (src === undefined) {
        if (dst === undefined) return { matches, proto: protoMatch(proto, protoNegate), target };
        return { matches, dst, proto: protoMatch(proto, protoNegate), target };
      } else if (dst !== undefined) return { matches, src, dst, proto: protoMatch(proto, protoNegate), target };
    }
    const rule: MutableRule = { matches };
    if (src !== undefined) rule.src = src;
    if (dst !== undefined) rule.dst = dst;
    if (inIface !== undefined) rule.inIface = inIface;
    if (outIface !== undefined) rule.outIface = outIface;
    if (proto !== 0) rule.proto = protoMatch(proto, protoNegate);
    if (target !== undefined) rule.target = target;
    if (counters !== undefined) rule.counters = counters;
    return rule;
  }

  /** `[packets:bytes] ` (decimal digits, safe integers) at the read position, moved past. */
  private counterPrefix(): Counters | undefined {
    const s = this.s;
    const from = this.p + 1;
    let colon = -1;
    let close = -1;
    for (let i = from; i < this.n; i++) {
      const c = s.charCodeAt(i);
      if (c === 93 /* ] */) {
        close = i;
        break;
      }
      if (c === 58 /* : */ && colon < 0) colon = i;
      else if (c < 48 || c > 57) return undefined;
    }
    if (colon <= from || close <= colon + 1 || s.charCodeAt(close + 1) !== 32 || close + 1 >= this.n) return undefined;
    this.p = close + 2;
    if (colon === from + 1 && close === colon + 2 && s.charCodeAt(from) === 48 && s.charCodeAt(colon + 1) === 48) {
      return (this.zeroCounters ??= { packets: 0, bytes: 0 });
    }
    const packets = Number(s.slice(from, colon));
    const bytes = Number(s.slice(colon + 1, close));
    return Number.isSafeInteger(packets) && Number.isSafeInteger(bytes) ? { packets, bytes } : undefined;
  }

  // -------------------------------------------------------------------------------------------
  // Words

  /**
   * End of the plain word at the read position (no quote, no tab, not too long), or -1 when
   * there is none.
   */
  wordEnd(): number {
    const s = this.s;
    const n = this.n;
    let i = this.p;
    while (i < n) {
      const c = s.charCodeAt(i);
      if (c === 32) break;
      if (c === 34 /* " */ || c === 9) return -1;
      i++;
    }
    return i === this.p || i - this.p > LONG_WORD ? -1 : i;
  }

  /** Moves past the word ending at `end` and the single space after it. */
  next(end: number): void {
    this.p = end < this.n ? end + 1 : end;
  }

  /** True and moves on when the next word is exactly `word`. */
  word(word: string): boolean {
    const end = this.p + word.length;
    if (end > this.n || !this.s.startsWith(word, this.p) || (end < this.n && this.s.charCodeAt(end) !== 32)) return false;
    this.next(end);
    return true;
  }

  /** The code of `s[i]`, or 32 (a blank) at the end of the line. */
  at(i: number): number {
    return i < this.n ? this.s.charCodeAt(i) : 32;
  }

  /**
   * An unsigned decimal starting at `i`, without leading zeros, at most `max`, into `num`: the
   * index after it, or -1.
   */
  digits(i: number, max: number): number {
    let c = this.at(i) - 48;
    if (c < 0 || c > 9) return -1;
    let v = c;
    let k = i + 1;
    for (; (c = this.at(k) - 48) >= 0 && c <= 9; k++) {
      if (v === 0) return -1; // a leading zero (octal for strtoul): left to the general parser
      v = v * 10 + c;
      if (v > max) return -1;
    }
    if (v > max) return -1;
    this.num = v;
    return k;
  }

  /** A dotted quad starting at `i` as `tryParseIpv4` reads it, into `addr`: the index after it, or -1. */
  quad(i: number): number {
    let addr = 0;
    for (let part = 0; part < 4; part++) {
      if (part > 0) {
        if (this.at(i) !== 46 /* . */) return -1;
        i++;
      }
      let v = 0;
      let k = i;
      for (let c: number; k - i < 3 && (c = this.at(k) - 48) >= 0 && c <= 9; k++) v = v * 10 + c;
      // A leading zero makes the part octal for the real tool: left to the general parser.
      if (k === i || v > 255 || (k - i > 1 && this.at(i) === 48)) return -1;
      const c = this.at(k);
      if (c >= 48 && c <= 57) return -1; // a fourth digit
      addr = addr * 256 + v;
      i = k;
    }
    this.addr = addr;
    return i;
  }

  /**
   * `-s`/`-d`'s `a.b.c.d[/len]` (one address, a prefix length of one or two digits) at the read
   * position, masked: the shared address match, or undefined. Several addresses, a dotted mask
   * and /0 (dropped from the rule, or refused when negated) are left to the general parser.
   */
  private address(negate: boolean): AddrMatch | undefined {
    let i = this.quad(this.p);
    if (i < 0) return undefined;
    let prefix = 32;
    if (this.at(i) === 47 /* / */) {
      const k = this.digits(i + 1, 32);
      if (k < 0 || k - i - 1 > 2 || this.num === 0 || this.at(i + 1) === 48) return undefined;
      prefix = this.num;
      i = k;
    }
    if (this.at(i) !== 32) return undefined;
    this.next(i);
    const addr = (this.addr & (prefix === 32 ? 0xffffffff : (0xffffffff << (32 - prefix)) >>> 0)) >>> 0;
    const key = addr * 64 + prefix * 2 + (negate ? 1 : 0);
    const slot = (Math.imul(addr ^ (prefix << 24), 0x9e3779b1) >>> (32 - ADDR_BITS)) ^ (negate ? 1 : 0);
    if (this.addrKeys[slot] === key) return this.addrs[slot];
    const a: AddrMatch = { cidr: { addr: addr as Ipv4, prefix }, negate };
    this.addrKeys[slot] = key;
    this.addrs[slot] = a;
    return a;
  }

  /** `-p` by its usual names; 0 for anything else. */
  private protocol(end: number): number {
    const s = this.s;
    const p = this.p;
    const len = end - p;
    if (len === 3 && s.startsWith('tcp', p)) return 6;
    if (len === 3 && s.startsWith('udp', p)) return 17;
    if (len === 4 && s.startsWith('icmp', p)) return 1;
    return 0;
  }

  // -------------------------------------------------------------------------------------------
  // Targets

  private jump(end: number, isGoto: boolean, t: JumpResolver): Target | undefined {
    const target = t.jumpTo(this.s.slice(this.p, end), isGoto);
    this.next(end);
    return target;
  }

  private jumpOrVerdict(end: number, table: TableName, t: JumpResolver, proto: number, protoNegate: boolean): Target | undefined {
    const s = this.s;
    const p = this.p;
    const len = end - p;
    if (len === 6 && s.startsWith('ACCEPT', p)) {
      this.next(end);
      return ACCEPT_TARGET;
    }
    if (len === 4 && s.startsWith('DROP', p)) {
      this.next(end);
      // "The nat table is not intended for filtering": the general parser says so.
      return table === 'nat' ? undefined : DROP_TARGET;
    }
    if (len === 6 && s.startsWith('RETURN', p)) {
      this.next(end);
      return RETURN_TARGET;
    }
    for (let k = 0; k < FAST_TARGETS.length; k++) {
      const name = (FAST_TARGETS[k] as TargetModule).name;
      if (name.length === len && s.startsWith(name, p)) {
        this.next(end);
        const ctx = this.ctx;
        ctx.proto = proto;
        ctx.protoNegate = protoNegate;
        ctx.table = table;
        return (this.targetReaders[k] as FastTargetReader)(this, ctx);
      }
    }
    // The chain jumped to last (KUBE-MARK-MASQ, say, again and again): asked for by the name the
    // table stores, compared in place, so no string is made and the table compares pointers.
    const last = this.lastJump;
    if (last !== undefined && this.lastJumpFrom === t && last.chain.length === len && s.startsWith(last.chain, p)) {
      this.next(end);
      return t.jumpTo(last.chain, false);
    }
    // Other target extensions (and chains named like one) are left to the general parser.
    if (!targetNamesAreCapitals || this.capitals(p, end)) {
      const name = s.slice(p, end);
      if (targetModule(name) !== undefined || IPTABLES_TARGET_NAMES.has(name)) return undefined;
    }
    this.next(end);
    const target = t.jumpAt !== undefined ? t.jumpAt(s, p, end) : t.jumpTo(s.slice(p, end), false);
    if (target?.kind === 'jump') {
      this.lastJump = target;
      this.lastJumpFrom = t;
    }
    return target;
  }

  /** Whether `s[from, to)` is all capitals, as every target extension's name is. */
  private capitals(from: number, to: number): boolean {
    const s = this.s;
    for (let i = from; i < to; i++) {
      const c = s.charCodeAt(i);
      if (c < 65 || c > 90) return false;
    }
    return true;
  }
}
