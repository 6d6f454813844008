/**
 * Rules compiled for evaluation, once per table generation: every statement becomes a closure
 * specialised by its kind (a header read is one property load, a comparison is fixed at compile
 * time), set and map lookups read precomputed indexes (exact keys in nested `Map`s, one level per
 * concatenated part; intervals and interface wildcards in a scan list), and a jump or a verdict
 * map's element resolves its target chain once. A table is immutable, so its compiled form is
 * cached by identity and thrown away with it; chains compile on their first packet.
 *
 * Packets allocate nothing here on the common path: keys are read into a per-lookup scratch
 * array, and a step returns a small integer code instead of an object.
 */
import type { CtStateName, NftEvalContext, NftEvalState, NftNatRequest, NftPacket, NftTraceEntry } from './evaluate.ts';
import type { Chain, DataType, Element, Expr, KeyPart, MapLookup, NftSet, Rhs, Rule, Source, Stmt, Table, Value, Verdict } from './types.ts';

/** What one evaluation of a base chain carries from step to step. */
export interface Env {
  /** The packet as the rules see it (a copy with the new mark after `meta mark set`). */
  p: NftPacket;
  /** The context (a copy with the new ct mark after `ct mark set`). */
  ctx: NftEvalContext;
  readonly st: NftEvalState;
  mark: number;
  ctMark: number | undefined;
  nat: NftNatRequest | undefined;
  notrack: boolean;
  logs: string[];
  /** Set by a step that returns a verdict code. */
  verdict: Verdict | undefined;
  /** The jump/goto target of that verdict (null when the table has no such chain). */
  target: CompiledChain | null;
  /** Set by a step that returns {@link REJECT}. */
  reject: Extract<Stmt, { kind: 'reject' }>['with'];
  /** The walk's stack of chains and, per level, the next rule's index (reused from chain to chain). */
  readonly chains: (CompiledChain | undefined)[];
  readonly next: number[];
  /** Trace entries (a shared empty array when not tracing). */
  trace: NftTraceEntry[];
  /** Taken by a running evaluation. */
  busy: boolean;
  /** Why the walk ended `unsupported`. */
  why: string;
}

/**
 * Step results: go on with the rule's next statement; the rule does not match; reject; NAT; and
 * one code per verdict kind (the verdict itself in `env.verdict`), so the walk branches on a small
 * integer without reading the verdict object.
 */
export const NEXT = 0;
export const NOMATCH = 1;
export const REJECT = 2;
export const NAT = 3;
export const V_ACCEPT = 4;
export const V_DROP = 5;
export const V_CONTINUE = 6;
export const V_RETURN = 7;
export const V_JUMP = 8;
export const V_GOTO = 9;
export const V_QUEUE = 10;

const VERDICT_CODE: Readonly<Record<Verdict['kind'], number>> = { accept: V_ACCEPT, drop: V_DROP, continue: V_CONTINUE, return: V_RETURN, jump: V_JUMP, goto: V_GOTO, queue: V_QUEUE };

export type Step = (env: Env) => number;

/** A chain's rules as closures (`runs[i]` runs `rules[i]`). */
export interface CompiledChain {
  readonly chain: Chain;
  readonly runs: readonly Step[];
  readonly rules: readonly Rule[];
  /** `rules[i]` as `nft list` prints it, filled in by the first trace that names it. */
  readonly texts: (string | undefined)[];
}

type Scalar = number | string | undefined;
type Reader = (env: Env) => Scalar;

export const NO_LOGS: readonly string[] = [];

// ---- the compiled table

/** A verdict and, once a packet needed it, the chain it jumps to. */
interface VerdictSlot {
  readonly verdict: Verdict;
  readonly code: number;
  target: CompiledChain | null | undefined;
}

/** Exact keys as nested maps, one level per concatenated part. */
type ExactIndex = Map<Scalar, ExactIndex | Hit>;

/** An element found by a lookup, with its verdict (for verdict maps) resolved on first use. */
interface Hit {
  readonly el: Element;
  readonly slot: VerdictSlot | undefined;
}

interface SetIndex {
  readonly exact: ExactIndex;
  /** Parts of the exact keys (0 when there are none). */
  readonly parts: number;
  /**
   * The exact keys of a concatenation of numbers as one number each (`packed`): part `i` takes
   * `radix[i]` values (a power of two above the largest it holds), so a key is one lookup in one
   * map. Undefined when a part is not a number or the parts need more than 53 bits.
   */
  readonly packed?: Map<number, Hit>;
  readonly radix?: readonly number[];
  /** One-part keys that are small integers (a `numgen` map's 0…n-1), by value. */
  readonly dense?: readonly (Hit | undefined)[];
  /** Elements that need a scan: intervals and interface-name wildcards. */
  readonly scan: readonly Hit[];
}

export class CompiledTable {
  private readonly byName: Map<string, Chain>;
  private readonly chains = new Map<Chain, CompiledChain>();
  private readonly setsByName: Map<string, NftSet>;
  private readonly setIndexes = new Map<NftSet, SetIndex>();

  constructor(readonly table: Table) {
    this.byName = new Map(table.chains.map((c) => [c.name, c]));
    this.setsByName = new Map(table.sets.map((s) => [s.name, s]));
  }

  chain(c: Chain): CompiledChain {
    let cc = this.chains.get(c);
    if (cc === undefined) {
      // Registered before its rules compile: a rule's jump back to its own chain finds it.
      const runs: Step[] = [];
      cc = { chain: c, runs, rules: c.rules, texts: [] };
      this.chains.set(c, cc);
      for (const rule of c.rules) runs.push(this.compileRule(rule));
    }
    return cc;
  }

  resolve(slot: VerdictSlot): CompiledChain | null {
    if (slot.target === undefined) {
      const v = slot.verdict;
      const c = v.kind === 'jump' || v.kind === 'goto' ? this.byName.get(v.chain) : undefined;
      slot.target = c === undefined ? null : this.chain(c);
    }
    return slot.target;
  }

  set(name: string): NftSet | undefined {
    return this.setsByName.get(name);
  }

  setIndex(set: NftSet): SetIndex {
    let ix = this.setIndexes.get(set);
    if (ix === undefined) {
      ix = buildIndex(set.elements);
      this.setIndexes.set(set, ix);
    }
    return ix;
  }

  private compileRule(rule: Rule): Step {
    // Runs of simple comparisons become one step each (fewer closures for a packet to visit).
    const steps: Step[] = [];
    let run: Cond[] = [];
    const flush = (): void => {
      for (let i = 0; i < run.length; i += 3) steps.push(fuse(run.slice(i, i + 3)));
      run = [];
    };
    for (const st of rule.stmts) {
      const c = st.kind === 'match' ? this.simpleCond(st, rule) : undefined;
      if (c !== undefined) {
        run.push(c);
        continue;
      }
      const step = this.compileStmt(st, rule);
      if (run.length > 0 && run.length <= 3) {
        // The comparisons and the statement after them (a verdict, NAT): one step.
        steps.push(fuse(run, step));
        run = [];
        continue;
      }
      flush();
      steps.push(step);
    }
    flush();
    return sequence(steps);
  }

  /** A match that is a comparison of a number with constants, as a {@link Cond}; undefined otherwise. */
  private simpleCond(s: Extract<Stmt, { kind: 'match' }>, rule: Rule): Cond | undefined {
    if (s.left.kind === 'concat') return undefined;
    const r = s.right;
    const neg = s.op === '!=';
    let kind: number;
    let a: number;
    let b = 0;
    if (r.kind === 'value') {
      const want = valueScalar(r.value);
      if (typeof want !== 'number' || (s.op !== '==' && s.op !== '!=' && s.op !== 'implicit') || (s.op === 'implicit' && isFlagType(r.value.type))) return undefined;
      kind = C_EQ;
      a = want;
    } else if (r.kind === 'prefix') {
      kind = C_PREFIX;
      a = r.len === 0 ? 0 : (0xffffffff << (32 - r.len)) >>> 0;
      b = r.addr;
    } else if (r.kind === 'range') {
      kind = C_RANGE;
      a = r.lo;
      b = r.hi;
    } else return undefined;
    return { read: compileReader(s.left, rule), kind: kind | (neg ? C_NEG : 0), a, b };
  }

  private compileStmt(s: Stmt, rule: Rule): Step {
    switch (s.kind) {
      case 'match':
        return this.compileMatch(s, rule);
      case 'verdict': {
        const slot = verdictSlot(s.verdict);
        const code = slot.code;
        if (s.verdict.kind === 'jump' || s.verdict.kind === 'goto') {
          return (env) => {
            env.verdict = slot.verdict;
            env.target = slot.target === undefined ? this.resolve(slot) : slot.target;
            return code;
          };
        }
        return (env) => {
          env.verdict = slot.verdict;
          return code;
        };
      }
      case 'vmap': {
        const direct = this.compileDenseVmap(s.lookup, rule);
        if (direct !== undefined) return direct;
        const find = this.compileMapLookup(s.lookup, rule);
        return (env) => {
          const hit = find(env);
          const slot = hit?.slot;
          if (slot === undefined) return NOMATCH;
          env.verdict = slot.verdict;
          env.target = slot.target === undefined ? this.resolve(slot) : slot.target;
          return slot.code;
        };
      }
      case 'reject': {
        const w = s.with;
        return (env) => {
          env.reject = w;
          return REJECT;
        };
      }
      case 'nat':
        return this.compileNat(s, rule);
      case 'counter':
        // The ruleset value stays as loaded; the counts live in the state, as the kernel's per-rule counters.
        return (env) => {
          const c = env.st.counts.get(s);
          if (c === undefined) env.st.counts.set(s, { packets: 1, bytes: env.p.length ?? 0 });
          else {
            c.packets++;
            c.bytes += env.p.length ?? 0;
          }
          return NEXT;
        };
      case 'log': {
        const prefix = s.prefix ?? '';
        return (env) => {
          if (env.logs === NO_LOGS) env.logs = [];
          env.logs.push(prefix);
          return NEXT;
        };
      }
      case 'meta-set': {
        const src = this.compileSource(s.source, rule);
        return (env) => {
          const v = src(env);
          if (v !== undefined) env.mark = v >>> 0;
          env.p = { ...env.p, mark: env.mark };
          return NEXT;
        };
      }
      case 'ct-set': {
        const src = this.compileSource(s.source, rule);
        return (env) => {
          const v = src(env);
          if (v !== undefined) env.ctMark = v >>> 0;
          // Later matches in the walk read the connection mark just set, as the kernel's ct->mark.
          if (env.ctMark !== undefined && env.ctx.conntrack.mark !== env.ctMark) env.ctx = { ...env.ctx, conntrack: { ...env.ctx.conntrack, mark: env.ctMark } };
          return NEXT;
        };
      }
      case 'notrack':
        return (env) => {
          env.notrack = true;
          return NEXT;
        };
      case 'set-update': {
        const set = this.set(s.set);
        const read = this.compileKey(s.key, rule);
        if (set === undefined) return (env) => (read(env), NEXT);
        return (env) => {
          const key = read(env);
          if (key === undefined) return NEXT;
          let members = env.st.dynamic.get(set);
          if (members === undefined) {
            members = new Set();
            env.st.dynamic.set(set, members);
          }
          members.add(keyString(key));
          return NEXT;
        };
      }
      case 'limit': // Limits are taken as under their rate.
      case 'quota': // Kept for listing, not modelled: quotas and connection counts are never reached, field writes not applied.
      case 'ct-count':
      case 'field-set':
      case 'synproxy':
      case 'objref':
        return () => NEXT;
    }
  }

  // ---- matches

  private compileMatch(s: Extract<Stmt, { kind: 'match' }>, rule: Rule): Step {
    const r: Rhs = s.right;
    const neg = s.op === '!=';
    if (r.kind === 'set' || r.kind === 'setref') {
      const find = r.kind === 'set' ? this.compileIndexLookup(s.left, buildIndex(r.elements), rule) : this.compileNamedLookup(s.left, r.name, rule);
      const yes = neg ? NOMATCH : NEXT;
      const no = neg ? NEXT : NOMATCH;
      return (env) => {
        const hit = find(env);
        if (hit === KEYLESS) return NOMATCH;
        return hit !== undefined ? yes : no;
      };
    }
    // A concatenation compared with a single value reads its first part (and needs every part).
    const read = s.left.kind === 'concat' ? firstOfConcat(s.left.parts.map((p) => compileReader(p, rule))) : compileReader(s.left, rule);
    switch (r.kind) {
      case 'value':
        return compileValueMatch(read, s.op, r.value);
      case 'values': {
        const want = new Set<Scalar>(r.values.map(valueScalar));
        return (env) => {
          const x = read(env);
          return x !== undefined && want.has(x) !== neg ? NEXT : NOMATCH;
        };
      }
      case 'range': {
        const lo = r.lo;
        const hi = r.hi;
        return (env) => {
          const x = read(env);
          return x !== undefined && (typeof x === 'number' && x >= lo && x <= hi) !== neg ? NEXT : NOMATCH;
        };
      }
      case 'prefix': {
        const mask = r.len === 0 ? 0 : (0xffffffff << (32 - r.len)) >>> 0;
        const addr = r.addr;
        return (env) => {
          const x = read(env);
          return x !== undefined && (typeof x === 'number' && ((x & mask) >>> 0) === addr) !== neg ? NEXT : NOMATCH;
        };
      }
      case 'mask': {
        const mask = (r.mask as { n: number }).n;
        const value = (r.value as { n: number }).n;
        return (env) => {
          const x = read(env);
          return x !== undefined && (typeof x === 'number' && (x & mask) === value) !== neg ? NEXT : NOMATCH;
        };
      }
    }
  }

  // ---- lookups

  /** The element a key finds in a named set or map (dynamic members count for sets), {@link KEYLESS} when a part does not apply. */
  private compileNamedLookup(e: Expr, name: string, rule: Rule): (env: Env) => Hit | true | undefined | typeof KEYLESS {
    const set = this.set(name);
    if (set === undefined) {
      const read = this.compileKey(e, rule);
      return (env) => (read(env) === undefined ? KEYLESS : undefined);
    }
    const find = this.compileIndexLookup(e, this.setIndex(set), rule, true);
    return (env) => {
      const hit = find(env);
      if (hit !== undefined) return hit;
      const members = env.st.dynamic.get(set);
      if (members === undefined || members.size === 0) return undefined;
      return members.has(keyString(scratchOf(find))) ? true : undefined;
    };
  }

  /**
   * A verdict map written in the rule whose keys are small integers (`numgen random mod 2 vmap {
   * 0 : goto a, 1 : goto b }`): one step reads the key and takes the verdict from an array slot.
   */
  private compileDenseVmap(l: MapLookup, rule: Rule): Step | undefined {
    if (l.map.kind !== 'anon' || l.key.kind === 'concat') return undefined;
    const ix = buildIndex(l.map.elements);
    const dense = ix.dense;
    if (dense === undefined || ix.scan.length > 0) return undefined;
    const slots = dense.map((h) => h?.slot);
    const read = compileReader(l.key, rule);
    return (env) => {
      const v = read(env);
      const slot = typeof v === 'number' ? slots[v] : undefined;
      if (slot === undefined) return NOMATCH;
      env.verdict = slot.verdict;
      env.target = slot.target === undefined ? this.resolve(slot) : slot.target;
      return slot.code;
    };
  }

  private compileMapLookup(l: MapLookup, rule: Rule): (env: Env) => Hit | undefined {
    let ix: SetIndex;
    if (l.map.kind === 'anon') ix = buildIndex(l.map.elements);
    else {
      const set = this.set(l.map.name);
      ix = set === undefined ? EMPTY_INDEX : this.setIndex(set);
    }
    const find = this.compileIndexLookup(l.key, ix, rule);
    return (env) => {
      const hit = find(env);
      return hit === KEYLESS ? undefined : hit;
    };
  }

  /**
   * A lookup of the key `e` reads: every part is read first (as the kernel evaluates the whole
   * key), then the exact index, then the scan list.
   */
  private compileIndexLookup(e: Expr, ix: SetIndex, rule: Rule, keepKey = false): ((env: Env) => Hit | undefined | typeof KEYLESS) & { scratch?: Scalar[] } {
    const parts = e.kind === 'concat' ? e.parts : [e];
    const readers = parts.map((p) => compileReader(p, rule));
    const n = readers.length;
    const scan = ix.scan;
    if (n === 1 && !keepKey && ix.dense !== undefined && ix.parts === 1) {
      const read = readers[0] as Reader;
      const dense = ix.dense;
      return (env) => {
        const v = read(env);
        if (v === undefined) return KEYLESS;
        const hit = typeof v === 'number' ? dense[v] : undefined;
        if (hit !== undefined) return hit;
        if (scan.length === 0) return undefined;
        for (const h of scan) if (h.el.key.length === 1 ? partMatches(h.el.key[0] as KeyPart, v) : h.el.key.every((k, i) => partMatches(k, i === 0 ? v : undefined))) return h;
        return undefined;
      };
    }
    if (n === 1 && !keepKey) {
      const read = readers[0] as Reader;
      const exact = ix.parts === 1 ? ix.exact : undefined;
      return (env) => {
        const v = read(env);
        if (v === undefined) return KEYLESS;
        if (exact !== undefined) {
          const hit = exact.get(v) as Hit | undefined;
          if (hit !== undefined) return hit;
        }
        if (scan.length === 0) return undefined;
        for (const h of scan) if (h.el.key.length === 1 ? partMatches(h.el.key[0] as KeyPart, v) : h.el.key.every((k, i) => partMatches(k, i === 0 ? v : undefined))) return h;
        return undefined;
      };
    }
    const key: Scalar[] = new Array<Scalar>(n).fill(undefined);
    const exact = ix.parts === n ? ix.exact : undefined;
    const packed = ix.parts === n ? ix.packed : undefined;
    const radix = ix.radix ?? [];
    const find = (env: Env): Hit | undefined | typeof KEYLESS => {
      for (let i = 0; i < n; i++) {
        const v = (readers[i] as Reader)(env);
        if (v === undefined) return KEYLESS;
        key[i] = v;
      }
      if (packed !== undefined) {
        // A part no element holds (too large, not a number) cannot match exactly.
        let k = 0;
        for (let i = 0; i < n; i++) {
          const v = key[i];
          const r = radix[i] as number;
          if (typeof v !== 'number' || v >= r) {
            k = -1;
            break;
          }
          k = k * r + v;
        }
        const hit = k < 0 ? undefined : packed.get(k);
        if (hit !== undefined) return hit;
      } else if (exact !== undefined) {
        let m: ExactIndex | Hit | undefined = exact;
        for (let i = 0; i < n && m !== undefined; i++) m = (m as ExactIndex).get(key[i]);
        if (m !== undefined) return m as Hit;
      }
      if (scan.length === 0) return undefined;
      for (const h of scan) if (h.el.key.every((k, i) => partMatches(k, key[i]))) return h;
      return undefined;
    };
    return Object.assign(find, { scratch: key });
  }

  /** Reads a key (every part), or undefined when a part does not apply. Allocates: used off the hot path. */
  private compileKey(e: Expr, rule: Rule): (env: Env) => Scalar[] | undefined {
    const readers = (e.kind === 'concat' ? e.parts : [e]).map((p) => compileReader(p, rule));
    return (env) => {
      const out: Scalar[] = [];
      for (const r of readers) {
        const v = r(env);
        if (v === undefined) return undefined;
        out.push(v);
      }
      return out;
    };
  }

  // ---- sources and NAT

  private compileSource(s: Source, rule: Rule): (env: Env) => number | undefined {
    switch (s.kind) {
      case 'value': {
        const v = valueScalar(s.value) as number;
        return () => v;
      }
      case 'expr': {
        const read = compileReader(s.expr, rule);
        return (env) => {
          const v = read(env);
          return typeof v === 'number' ? v : undefined;
        };
      }
      case 'map': {
        const find = this.compileMapLookup(s.lookup, rule);
        return (env) => {
          const d = find(env)?.el.data;
          return d === undefined ? undefined : (valueScalar(d[0] as Value) as number);
        };
      }
    }
  }

  private compileNat(s: Extract<Stmt, { kind: 'nat' }>, rule: Rule): Step {
    const kind = s.nat;
    const flags = s.flags;
    const port = s.port;
    const a = s.addr;
    if (a === undefined || a.kind === 'range') {
      const req: NftNatRequest = { kind, ...(a !== undefined && { addr: { lo: a.lo, hi: a.hi } }), ...(port !== undefined && { port }), flags };
      return (env) => {
        env.nat = req;
        return NAT;
      };
    }
    if (a.kind === 'value' && typeof valueScalar(a.value) === 'number') {
      // A constant address (`dnat to 10.180.0.1:8080`): one request for every packet.
      const v = valueScalar(a.value) as number;
      const req: NftNatRequest = { kind, addr: { lo: v, hi: v }, ...(port !== undefined && { port }), flags };
      return (env) => {
        env.nat = req;
        return NAT;
      };
    }
    const src = this.compileSource(a, rule);
    return (env) => {
      const v = src(env);
      env.nat = v === undefined ? { kind, ...(port !== undefined && { port }), flags } : { kind, addr: { lo: v, hi: v }, ...(port !== undefined && { port }), flags };
      return NAT;
    };
  }
}

/**
 * A comparison of a number with constants: `kind` is {@link C_EQ} (x == a), {@link C_PREFIX}
 * ((x & a) == b) or {@link C_RANGE} (a <= x <= b), with {@link C_NEG} for `!=`. As for every
 * match, a key that does not apply fails, and a string (an interface name) is unequal to every number.
 */
interface Cond {
  readonly read: Reader;
  readonly kind: number;
  readonly a: number;
  readonly b: number;
}
const C_EQ = 0;
const C_PREFIX = 2;
const C_RANGE = 4;
const C_NEG = 1;

function holds(x: Scalar, kind: number, a: number, b: number): boolean {
  if (x === undefined) return false;
  let yes = false;
  if (typeof x === 'number') {
    switch (kind & ~C_NEG) {
      case C_EQ:
        yes = x === a;
        break;
      case C_PREFIX:
        yes = (x & a) >>> 0 === b;
        break;
      default:
        yes = x >= a && x <= b;
    }
  }
  return yes !== ((kind & C_NEG) !== 0);
}

const goOn: Step = () => NEXT;

/**
 * One step for up to three comparisons, their constants held by the closure itself, and the step
 * that follows them in the rule (`then`, when there is one).
 */
function fuse(cs: readonly Cond[], then: Step = goOn): Step {
  const [c1, c2, c3] = cs as [Cond, Cond | undefined, Cond | undefined];
  const r1 = c1.read;
  const k1 = c1.kind;
  const a1 = c1.a;
  const b1 = c1.b;
  if (c2 === undefined) return (env) => (holds(r1(env), k1, a1, b1) ? then(env) : NOMATCH);
  const r2 = c2.read;
  const k2 = c2.kind;
  const a2 = c2.a;
  const b2 = c2.b;
  if (c3 === undefined) return (env) => (holds(r1(env), k1, a1, b1) && holds(r2(env), k2, a2, b2) ? then(env) : NOMATCH);
  const r3 = c3.read;
  const k3 = c3.kind;
  const a3 = c3.a;
  const b3 = c3.b;
  return (env) => (holds(r1(env), k1, a1, b1) && holds(r2(env), k2, a2, b2) && holds(r3(env), k3, a3, b3) ? then(env) : NOMATCH);
}

function verdictSlot(v: Verdict): VerdictSlot {
  return { verdict: v, code: VERDICT_CODE[v.kind], target: undefined };
}

const KEYLESS: unique symbol = Symbol('keyless');
const EMPTY_INDEX: SetIndex = { exact: new Map(), parts: 0, scan: [] };

function scratchOf(f: { scratch?: Scalar[] }): Scalar[] {
  return f.scratch ?? [];
}

/** Runs steps in order until one returns something other than {@link NEXT} (unrolled for short rules). */
function sequence(steps: readonly Step[]): Step {
  switch (steps.length) {
    case 0:
      return () => NEXT;
    case 1:
      return steps[0] as Step;
    case 2: {
      const [a, b] = steps as [Step, Step];
      return (env) => {
        const c = a(env);
        return c !== NEXT ? c : b(env);
      };
    }
    case 3: {
      const [a, b, d] = steps as [Step, Step, Step];
      return (env) => {
        let c = a(env);
        if (c !== NEXT) return c;
        c = b(env);
        return c !== NEXT ? c : d(env);
      };
    }
    case 4: {
      const [a, b, d, e] = steps as [Step, Step, Step, Step];
      return (env) => {
        let c = a(env);
        if (c !== NEXT) return c;
        c = b(env);
        if (c !== NEXT) return c;
        c = d(env);
        return c !== NEXT ? c : e(env);
      };
    }
    case 5: {
      const [a, b, d, e, f] = steps as [Step, Step, Step, Step, Step];
      return (env) => {
        let c = a(env);
        if (c !== NEXT) return c;
        c = b(env);
        if (c !== NEXT) return c;
        c = d(env);
        if (c !== NEXT) return c;
        c = e(env);
        return c !== NEXT ? c : f(env);
      };
    }
    default:
      return (env) => {
        for (const s of steps) {
          const c = s(env);
          if (c !== NEXT) return c;
        }
        return NEXT;
      };
  }
}

function buildIndex(elements: readonly Element[]): SetIndex {
  const exact: ExactIndex = new Map();
  const exactHits: { key: Scalar[]; hit: Hit }[] = [];
  const scan: Hit[] = [];
  let parts = 0;
  for (const el of elements) {
    const d = el.data?.[0];
    const hit: Hit = { el, slot: d?.type === 'verdict' ? verdictSlot(d.v) : undefined };
    const needsScan = el.key.some((k) => k.kind === 'range' || (k.value.type === 'ifname' && k.value.s.endsWith('*')));
    if (needsScan) {
      scan.push(hit);
      continue;
    }
    const key = el.key.map((k) => valueScalar((k as Extract<KeyPart, { kind: 'value' }>).value));
    parts = key.length;
    let m = exact;
    for (let i = 0; i < key.length - 1; i++) {
      let next = m.get(key[i]) as ExactIndex | undefined;
      if (next === undefined) {
        next = new Map();
        m.set(key[i], next);
      }
      m = next;
    }
    m.set(key[key.length - 1], hit);
    exactHits.push({ key, hit });
  }
  return { exact, parts, scan, ...packIndex(exactHits, parts) };
}

/** Packed (several parts) or dense (one small integer part) forms of the exact keys, when they fit. */
function packIndex(hits: readonly { key: readonly Scalar[]; hit: Hit }[], parts: number): Pick<SetIndex, 'packed' | 'radix' | 'dense'> {
  if (hits.length === 0 || !hits.every((h) => h.key.length === parts && h.key.every((v) => typeof v === 'number' && Number.isInteger(v) && v >= 0))) return {};
  const max: number[] = new Array<number>(parts).fill(0);
  for (const { key } of hits) for (let i = 0; i < parts; i++) max[i] = Math.max(max[i] as number, key[i] as number);
  if (parts === 1) {
    if ((max[0] as number) >= 1024) return {};
    const dense: (Hit | undefined)[] = new Array<Hit | undefined>((max[0] as number) + 1).fill(undefined);
    // The first element of a key wins, as in the nested index (later duplicates overwrite there: keep that).
    for (const { key, hit } of hits) dense[key[0] as number] = hit;
    return { dense };
  }
  const radix = max.map((m) => 2 ** Math.max(1, Math.ceil(Math.log2(m + 1))));
  if (radix.reduce((a, r) => a * r, 1) > Number.MAX_SAFE_INTEGER) return {};
  const packed = new Map<number, Hit>();
  for (const { key, hit } of hits) {
    let k = 0;
    for (let i = 0; i < parts; i++) k = k * (radix[i] as number) + (key[i] as number);
    packed.set(k, hit);
  }
  return { packed, radix };
}

// ---- values and readers

const CT_BITS: Readonly<Record<CtStateName, number>> = { invalid: 1, established: 2, related: 4, new: 8, untracked: 64 };

export function valueScalar(v: Value): Scalar {
  return v.type === 'ifname' ? v.s : v.type === 'verdict' ? undefined : v.n;
}

/** A lookup key as a string (dynamic set members): the value itself for one part, the parts joined for a concatenation. */
export function keyString(parts: readonly Scalar[]): string | number {
  if (parts.length === 1) {
    const v = parts[0];
    return typeof v === 'string' ? `"${v}` : (v ?? -1);
  }
  let s = '';
  for (const v of parts) s += typeof v === 'string' ? `"${v}\u0001` : `${v}\u0001`;
  return s;
}

function ifnameMatches(pattern: string, name: string): boolean {
  return pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : pattern === name;
}

function partMatches(k: KeyPart, v: Scalar): boolean {
  if (k.kind === 'range') return typeof v === 'number' && v >= k.lo && v <= k.hi;
  const want = valueScalar(k.value);
  if (k.value.type === 'ifname' && typeof v === 'string') return ifnameMatches(k.value.s, v);
  return want === v;
}

function isFlagType(t: DataType): boolean {
  return t === 'ct_state' || t === 'ct_status' || t === 'tcp_flag';
}

function firstOfConcat(readers: readonly Reader[]): Reader {
  return (env) => {
    let first: Scalar;
    for (let i = 0; i < readers.length; i++) {
      const v = (readers[i] as Reader)(env);
      if (v === undefined) return undefined;
      if (i === 0) first = v;
    }
    return first;
  };
}

function compileValueMatch(read: Reader, op: Extract<Stmt, { kind: 'match' }>['op'], value: Value): Step {
  const want = valueScalar(value);
  const neg = op === '!=';
  if (typeof want === 'number') {
    // A string never equals a number: only `!=` matches one.
    const str = neg ? NEXT : NOMATCH;
    // A bare flag is a bit test; `!=` and `==` compare the whole value (`tcp flags != syn` matches SYN,ACK).
    if (isFlagType(value.type) && op === 'implicit') {
      return (env) => {
        const x = read(env);
        if (typeof x === 'number') return (x & want) !== 0 ? NEXT : NOMATCH;
        return x === undefined ? NOMATCH : str;
      };
    }
    switch (op) {
      case '<':
        return (env) => {
          const x = read(env);
          if (typeof x === 'number') return x < want ? NEXT : NOMATCH;
          return x === undefined ? NOMATCH : str;
        };
      case '>':
        return (env) => {
          const x = read(env);
          if (typeof x === 'number') return x > want ? NEXT : NOMATCH;
          return x === undefined ? NOMATCH : str;
        };
      case '<=':
        return (env) => {
          const x = read(env);
          if (typeof x === 'number') return x <= want ? NEXT : NOMATCH;
          return x === undefined ? NOMATCH : str;
        };
      case '>=':
        return (env) => {
          const x = read(env);
          if (typeof x === 'number') return x >= want ? NEXT : NOMATCH;
          return x === undefined ? NOMATCH : str;
        };
      case '!=':
        return (env) => {
          const x = read(env);
          if (typeof x === 'number') return x !== want ? NEXT : NOMATCH;
          return x === undefined ? NOMATCH : str;
        };
      case 'implicit':
      case '==':
        return (env) => {
          const x = read(env);
          if (typeof x === 'number') return x === want ? NEXT : NOMATCH;
          return x === undefined ? NOMATCH : str;
        };
    }
  }
  if (value.type === 'ifname') {
    const pattern = value.s;
    return (env) => {
      const x = read(env);
      if (x === undefined) return NOMATCH;
      if (typeof x === 'string') return ifnameMatches(pattern, x) !== neg ? NEXT : NOMATCH;
      return neg ? NEXT : NOMATCH;
    };
  }
  return (env) => {
    const x = read(env);
    return x !== undefined && (x === want) !== neg ? NEXT : NOMATCH;
  };
}

function hasPorts(proto: number): boolean {
  return proto === 6 || proto === 17 || proto === 132 || proto === 33 || proto === 136;
}

const UNREAD: Reader = () => undefined;

/**
 * Readers that capture nothing, made once and shared by every rule (what a packet's walk runs
 * stays in few, hot functions).
 */
const READERS: Readonly<Record<string, Reader>> = {
  'ip saddr': (env) => env.p.saddr,
  'ip daddr': (env) => env.p.daddr,
  'ip protocol': (env) => env.p.protocol,
  'ip ttl': (env) => env.p.ttl ?? 64,
  'ip length': (env) => env.p.length ?? 0,
  'ip *': () => 0,
  'tcp sport': (env) => (env.p.protocol === 6 ? env.p.sport : undefined),
  'tcp dport': (env) => (env.p.protocol === 6 ? env.p.dport : undefined),
  'tcp *': (env) => (env.p.protocol === 6 ? (env.p.tcpFlags ?? 0) : undefined),
  'udp sport': (env) => (env.p.protocol === 17 ? env.p.sport : undefined),
  'udp *': (env) => (env.p.protocol === 17 ? env.p.dport : undefined),
  'th sport': (env) => (hasPorts(env.p.protocol) ? env.p.sport : undefined),
  'th *': (env) => (hasPorts(env.p.protocol) ? env.p.dport : undefined),
  'icmp type': (env) => (env.p.protocol === 1 ? env.p.icmpType : undefined),
  'icmp *': (env) => (env.p.protocol === 1 ? 0 : undefined),
  'meta l4proto': (env) => env.p.protocol,
  'meta mark': (env) => env.p.mark,
  'meta iifname': (env) => env.p.iifname ?? '',
  'meta oifname': (env) => env.p.oifname ?? '',
  'meta iif': (env) => env.p.iif ?? 0,
  'meta oif': (env) => env.p.oif ?? 0,
  'meta nfproto': () => 2,
  'meta pkttype': (env) => env.p.pkttype ?? 0,
  'meta length': (env) => env.p.length ?? 0,
  'ct state': (env) => CT_BITS[env.ctx.conntrack.state],
  // Without a connection (before conntrack, untracked, invalid) every other ct key fails the rule (NFT_BREAK).
  'ct status': (env) => (noConnection(env) ? undefined : env.ctx.conntrack.status),
  'ct mark': (env) => (noConnection(env) ? undefined : env.ctx.conntrack.mark),
  'fib saddr': (env) => env.ctx.fibAddrType(env.p.saddr),
  'fib daddr': (env) => env.ctx.fibAddrType(env.p.daddr),
};

function noConnection(env: Env): boolean {
  return env.ctx.conntrack.state === 'invalid' || env.ctx.conntrack.state === 'untracked';
}

function shared(name: string): Reader {
  return READERS[name] ?? UNREAD;
}

/** A reader specialised by expression kind and field; it reads undefined when the field does not apply to the packet. */
export function compileReader(e: Expr, rule: Rule): Reader {
  switch (e.kind) {
    case 'payload':
      switch (e.proto) {
        case 'ip':
          return READERS[`ip ${e.field}`] ?? shared('ip *');
        case 'tcp':
        case 'th':
          return READERS[`${e.proto} ${e.field}`] ?? shared(`${e.proto} *`);
        case 'udp':
          return e.field === 'sport' ? shared('udp sport') : shared('udp *');
        case 'icmp':
          return e.field === 'type' ? shared('icmp type') : shared('icmp *');
      }
      return UNREAD;
    case 'meta':
      return shared(`meta ${e.key}`);
    case 'ct':
      if (e.dir !== undefined) return UNREAD;
      return shared(`ct ${e.key}`);
    case 'fib':
      if (e.result !== 'type') return UNREAD;
      return e.flags.includes('saddr') ? shared('fib saddr') : shared('fib daddr');
    case 'exthdr':
    case 'concat':
      return UNREAD;
    case 'numgen': {
      const mod = e.mod;
      const offset = e.offset;
      // The kernel's reciprocal_scale(prandom_u32(), mod): the high bits of r * mod.
      if (e.mode === 'random') return (env) => Math.floor((env.ctx.random32() * mod) / 4294967296) + offset;
      return (env) => {
        const n = env.st.counters.get(rule) ?? 0;
        env.st.counters.set(rule, n + 1);
        return (n % mod) + offset;
      };
    }
    case 'binop': {
      const left = compileReader(e.left, rule);
      const r = (e.right as { n: number }).n;
      const op = e.op;
      if (op === '&') {
        return (env) => {
          const l = left(env);
          return typeof l === 'number' ? (l & r) >>> 0 : undefined;
        };
      }
      return (env) => {
        const l = left(env);
        if (typeof l !== 'number') return undefined;
        return (op === '|' ? l | r : l ^ r) >>> 0;
      };
    }
  }
}

const compiledTables = new WeakMap<Table, CompiledTable>(); // tidy-allow: compiled closures derived from an immutable table; cannot change results

/** The compiled form of a table (built on first use, kept while the table lives). */
export function compiledTable(t: Table): CompiledTable {
  let ct = compiledTables.get(t);
  if (ct === undefined) {
    ct = new CompiledTable(t);
    compiledTables.set(t, ct);
  }
  return ct;
}

export type { NftPacket };
