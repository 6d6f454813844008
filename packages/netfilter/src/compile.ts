/**
 * Compiles a ruleset once into the structures the walk runs on: per rule, the IP-header checks as
 * plain numbers, the `-m` modules as closures, the target as an opcode with its chain resolved; per
 * chain, the dispatch-index runs. Rulesets are immutable, so the result is cached by object
 * identity: per ruleset, and per table so that a change in one table recompiles only that table.
 */
import type { EvalTraceEntry, NatRequest, Verdict } from './evalTypes.ts';
import { buildRuns, type DispatchRun } from './dispatchIndex.ts';
import { compileMatch, moduleOf, type L4Hint } from './matches.ts';
import type { ModTest } from './matchers.ts';
import { prefixMask } from './ip.ts';
import { targetModuleOf, targetName } from './targets.ts';
import { ACCEPT_VERDICT, DROP_VERDICT, emptyTargetCode, T_ACCEPT, T_DROP, T_GOTO, T_JUMP, T_NONE, T_RETURN, T_UNKNOWN, type TargetCode } from './targetCode.ts';
import { BUILTIN_CHAINS, type Hook, type Policy, type Rule, type Ruleset, type Table, type TableName, type Target } from './types.ts';

export * from './targetCode.ts';

/** One compiled rule. @internal */
export interface CompiledRule {
  readonly rule: Rule;
  /** 1-based position in its chain. */
  readonly index: number;
  // IP header (ip_packet_match): each check is `(field & mask) === addr` XOR negate.
  readonly srcMask: number;
  readonly srcAddr: number;
  readonly srcNeg: boolean;
  readonly dstMask: number;
  readonly dstAddr: number;
  readonly dstNeg: boolean;
  /** 0 = any protocol (the kernel skips the check, `!` or not). */
  readonly proto: number;
  readonly protoNeg: boolean;
  /** 0 no `-f`; 1 `-f` (non-first fragments only); 2 `! -f`. */
  readonly frag: number;
  readonly inName: string | null;
  readonly inWild: boolean;
  readonly inNeg: boolean;
  readonly outName: string | null;
  readonly outWild: boolean;
  readonly outNeg: boolean;
  /**
   * The rule's first `-m tcp`/`-m udp` (without `--tcp-option`), inlined as numbers so the common
   * port check costs no closure call: 0 when there is none, else the protocol it requires. Only
   * inlined when no module with a side effect precedes it, so checking it before the other modules
   * never skips a draw the kernel would make.
   */
  readonly l4: number;
  readonly spFrom: number;
  readonly spTo: number;
  readonly spNeg: boolean;
  readonly dpFrom: number;
  readonly dpTo: number;
  readonly dpNeg: boolean;
  readonly flMask: number;
  readonly flComp: number;
  readonly flNeg: boolean;
  /** The modules that are not always true, in order; null when none. */
  readonly mods: readonly ModTest[] | null;
  /** Some module may be undecidable or has side effects: the careful path is needed. */
  readonly careful: boolean;
  readonly op: number;
  /** MARK and CONNMARK operands. */
  readonly value: number;
  readonly mask: number;
  readonly nfmask: number;
  readonly ctmask: number;
  /** JUMP/GOTO target, resolved; null when the chain does not exist. */
  target: CompiledChain | null;
  readonly targetName: string;
  readonly verdict: Verdict | null;
  readonly nat: NatRequest | null;
  /** What an unknown target is called in traces and verdicts. */
  readonly unknownTarget: string;
  /** Trace entries shared by every walk (they are immutable). */
  readonly traceMatch: EvalTraceEntry;
  readonly traceNomatch: EvalTraceEntry;
}

/** A compiled chain. @internal */
export interface CompiledChain {
  readonly name: string;
  readonly table: TableName;
  /** Built-in chains only. */
  readonly policy: Policy | null;
  readonly rules: readonly CompiledRule[];
  /** `runOf[pos]`: the dispatch run covering 0-based position `pos`, if any. */
  readonly runOf: readonly (DispatchRun | undefined)[];
  readonly hasRuns: boolean;
  readonly traceReturn: EvalTraceEntry;
  readonly tracePolicy: EvalTraceEntry | null;
  readonly policyVerdict: Verdict | null;
}

/** A compiled table: its chains, and its built-in chains by hook. @internal */
export interface CompiledTable {
  readonly table: Table;
  /** The table does not exist in the kernel yet: it is registered at no hook. */
  readonly absent: boolean;
  readonly chains: ReadonlyMap<string, CompiledChain>;
  readonly builtin: { readonly [H in Hook]?: CompiledChain };
}

/** Options of {@link compile}. */
export interface CompileOptions {
  /** Use the dispatch index (default `true`). `false` gives a plain linear scan, e.g. as a reference. */
  readonly index?: boolean;
  /** Shortest run of same-shape rules worth indexing (default 8, at least 2). */
  readonly indexMinRun?: number;
}

/**
 * A ruleset compiled for evaluation. Opaque: pass it to `evaluateTable`/`evaluateHook` instead of
 * the ruleset to skip the cache lookup.
 */
export interface CompiledRuleset {
  readonly ruleset: Ruleset;
  /** @internal */
  readonly tables: { readonly [T in TableName]: CompiledTable };
  readonly options: Required<CompileOptions>;
}

const DROP_POLICY_VERDICT: Verdict = { kind: 'DROP', byPolicy: true };

function ifaceParts(m: Rule['inIface']): [string | null, boolean, boolean] {
  if (m === undefined) return [null, false, false];
  return [m.name, m.wildcard, m.negate];
}

function compileTarget(t: Target | undefined): TargetCode {
  const c = emptyTargetCode();
  if (t === undefined) return c;
  const kind = t.kind;
  if (kind === 'ACCEPT') {
    c.op = T_ACCEPT;
    c.verdict = ACCEPT_VERDICT;
  } else if (kind === 'DROP') {
    c.op = T_DROP;
    c.verdict = DROP_VERDICT;
  } else if (kind === 'RETURN') c.op = T_RETURN;
  else if (kind === 'jump' || kind === 'goto') {
    c.op = kind === 'jump' ? T_JUMP : T_GOTO;
    c.targetName = t.chain;
  }
  if (c.op !== T_NONE) return c;
  // A target extension says what it does; one netsim keeps as words is undecided.
  const code = targetModuleOf(t)?.code;
  if (code !== undefined) {
    code(t, c);
    return c;
  }
  c.op = T_UNKNOWN;
  c.unknownTarget = `target ${targetName(t)}`;
  return c;
}

function compileRule(rule: Rule, index: number, table: TableName, chain: string): CompiledRule {
  const mods: ModTest[] = [];
  let careful = false;
  let l4: L4Hint | undefined;
  let sideEffectSeen = false;
  for (const m of rule.matches) {
    // The first port match a module offers to inline, unless a module with a side effect
    // precedes it: checking it before the other modules must never skip a draw the kernel makes.
    if (l4 === undefined && !sideEffectSeen) {
      const hint = moduleOf(m)?.inline?.(m);
      if (hint !== undefined) {
        l4 = hint;
        continue;
      }
    }
    const t = compileMatch(m, rule);
    if (t === null) continue;
    mods.push(t);
    if (t.sideEffect) sideEffectSeen = true;
    if (t.sideEffect || t.undecidable) careful = true;
  }
  const [inName, inWild, inNeg] = ifaceParts(rule.inIface);
  const [outName, outWild, outNeg] = ifaceParts(rule.outIface);
  const src = rule.src;
  const dst = rule.dst;
  const tc = compileTarget(rule.target);
  return {
    rule,
    index,
    srcMask: src === undefined ? 0 : prefixMask(src.cidr.prefix) | 0,
    srcAddr: src === undefined ? 0 : src.cidr.addr | 0,
    srcNeg: src?.negate ?? false,
    dstMask: dst === undefined ? 0 : prefixMask(dst.cidr.prefix) | 0,
    dstAddr: dst === undefined ? 0 : dst.cidr.addr | 0,
    dstNeg: dst?.negate ?? false,
    proto: rule.proto?.proto ?? 0,
    protoNeg: rule.proto?.negate ?? false,
    frag: rule.fragment === undefined ? 0 : rule.fragment.negate ? 2 : 1,
    inName,
    inWild,
    inNeg,
    outName,
    outWild,
    outNeg,
    l4: l4?.proto ?? 0,
    spFrom: l4?.spFrom ?? 0,
    spTo: l4?.spTo ?? 65535,
    spNeg: l4?.spNeg ?? false,
    dpFrom: l4?.dpFrom ?? 0,
    dpTo: l4?.dpTo ?? 65535,
    dpNeg: l4?.dpNeg ?? false,
    flMask: l4?.flMask ?? 0,
    flComp: l4?.flComp ?? 0,
    flNeg: l4?.flNeg ?? false,
    mods: mods.length === 0 ? null : mods,
    careful,
    op: tc.op,
    value: tc.value,
    mask: tc.mask,
    nfmask: tc.nfmask,
    ctmask: tc.ctmask,
    target: null,
    targetName: tc.targetName,
    verdict: tc.verdict,
    nat: tc.nat,
    unknownTarget: tc.unknownTarget,
    traceMatch: { kind: 'rule', table, chain, index, outcome: 'match' },
    traceNomatch: { kind: 'rule', table, chain, index, outcome: 'nomatch' },
  };
}

function compileTableUncached(table: Table, opts: Required<CompileOptions>): CompiledTable {
  const chains = new Map<string, CompiledChain>();
  const builtinHooks = BUILTIN_CHAINS[table.name] as readonly string[];
  for (const name of Object.keys(table.chains).sort()) {
    const chain = table.chains[name];
    if (chain === undefined) continue;
    const rules = chain.rules.map((r, i) => compileRule(r, i + 1, table.name, name));
    const runOf = opts.index ? buildRuns(chain.rules, opts.indexMinRun) : [];
    const isBuiltin = builtinHooks.includes(name);
    const policy = isBuiltin ? (chain.policy ?? 'ACCEPT') : null;
    chains.set(name, {
      name,
      table: table.name,
      policy,
      rules,
      runOf,
      hasRuns: runOf.some((r) => r !== undefined),
      traceReturn: { kind: 'return', table: table.name, chain: name },
      tracePolicy: policy === null ? null : { kind: 'policy', table: table.name, chain: name as Hook, policy },
      policyVerdict: policy === null ? null : policy === 'ACCEPT' ? ACCEPT_VERDICT : DROP_POLICY_VERDICT,
    });
  }
  for (const c of chains.values()) {
    for (const r of c.rules) if (r.op === T_JUMP || r.op === T_GOTO) r.target = chains.get(r.targetName) ?? null;
  }
  const builtin: { [H in Hook]?: CompiledChain } = {};
  for (const h of BUILTIN_CHAINS[table.name]) {
    const c = chains.get(h);
    if (c !== undefined) builtin[h] = c;
  }
  return { table, absent: table.absent === true, chains, builtin };
}

function optionsKey(o: Required<CompileOptions>): string {
  return o.index ? `i${o.indexMinRun}` : 'linear';
}

const tableCache = new WeakMap<Table, Map<string, CompiledTable>>(); // tidy-allow: compiled form keyed by the immutable table value; same input, same output
const rulesetCache = new WeakMap<Ruleset, Map<string, CompiledRuleset>>(); // tidy-allow: as tableCache, for whole rulesets

function compileTable(table: Table, opts: Required<CompileOptions>, key: string): CompiledTable {
  let byOpts = tableCache.get(table);
  if (byOpts === undefined) {
    byOpts = new Map();
    tableCache.set(table, byOpts);
  }
  let ct = byOpts.get(key);
  if (ct === undefined) {
    ct = compileTableUncached(table, opts);
    byOpts.set(key, ct);
  }
  return ct;
}

/**
 * Compiles a ruleset for evaluation, once: the result is cached by the ruleset's identity (and
 * each table's), so calling this per packet costs one WeakMap lookup. Rulesets must therefore never
 * be mutated in place (they are `readonly` data; produce new ones, e.g. with immer).
 *
 * @example
 * const compiled = compile(ruleset);
 * const result = evaluateHook(compiled, 'PREROUTING', packet, ctx);
 */
export function compile(ruleset: Ruleset, options: CompileOptions = {}): CompiledRuleset {
  const opts: Required<CompileOptions> = {
    index: options.index ?? true,
    indexMinRun: Math.max(2, options.indexMinRun ?? 8),
  };
  const key = optionsKey(opts);
  let byOpts = rulesetCache.get(ruleset);
  if (byOpts === undefined) {
    byOpts = new Map();
    rulesetCache.set(ruleset, byOpts);
  }
  const cached = byOpts.get(key);
  if (cached !== undefined) return cached;
  const t = ruleset.tables;
  const compiled: CompiledRuleset = {
    ruleset,
    tables: {
      raw: compileTable(t.raw, opts, key),
      mangle: compileTable(t.mangle, opts, key),
      nat: compileTable(t.nat, opts, key),
      filter: compileTable(t.filter, opts, key),
    },
    options: opts,
  };
  byOpts.set(key, compiled);
  return compiled;
}

/** Whether a value is a {@link CompiledRuleset} (as opposed to a plain ruleset). @internal */
export function isCompiled(x: Ruleset | CompiledRuleset): x is CompiledRuleset {
  return 'ruleset' in x;
}
