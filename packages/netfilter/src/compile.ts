/**
 * Compiles a ruleset once into the structures the walk runs on: per rule, the IP-header checks as
 * plain numbers, the `-m` modules as closures, the target as an opcode with its chain resolved; per
 * chain, the dispatch-index runs. Rulesets are immutable, so the result is cached by object
 * identity: per ruleset, and per table so that a change in one table recompiles only that table.
 */
import type { EvalTraceEntry, NatRequest, Verdict } from './evalTypes.ts';
import { buildRuns, type DispatchRun } from './dispatchIndex.ts';
import { compileMatch, type ModTest } from './matchers.ts';
import { prefixMask } from './ip.ts';
import { BUILTIN_CHAINS, type Hook, type Match, type Policy, type Rule, type Ruleset, type Table, type TableName, type Target } from './types.ts';

/** Target opcodes. @internal */
export const T_NONE = 0;
export const T_ACCEPT = 1;
export const T_DROP = 2;
export const T_REJECT = 3;
export const T_RETURN = 4;
export const T_JUMP = 5;
export const T_GOTO = 6;
export const T_NAT = 7;
export const T_MARK = 8;
export const T_CONNMARK_SET = 9;
export const T_CONNMARK_SAVE = 10;
export const T_CONNMARK_RESTORE = 11;
export const T_CONTINUE = 12;
export const T_NOTRACK = 13;
export const T_TRACE = 14;
export const T_UNKNOWN = 15;

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

export const ACCEPT_VERDICT: Verdict = { kind: 'ACCEPT' };
export const DROP_VERDICT: Verdict = { kind: 'DROP', byPolicy: false };
const DROP_POLICY_VERDICT: Verdict = { kind: 'DROP', byPolicy: true };

function ifaceParts(m: Rule['inIface']): [string | null, boolean, boolean] {
  if (m === undefined) return [null, false, false];
  return [m.name, m.wildcard, m.negate];
}

interface TargetCode {
  op: number;
  value: number;
  mask: number;
  nfmask: number;
  ctmask: number;
  targetName: string;
  verdict: Verdict | null;
  nat: NatRequest | null;
  unknownTarget: string;
}

function compileTarget(t: Target | undefined): TargetCode {
  const c: TargetCode = { op: T_NONE, value: 0, mask: 0, nfmask: 0, ctmask: 0, targetName: '', verdict: null, nat: null, unknownTarget: '' };
  if (t === undefined) return c;
  switch (t.kind) {
    case 'ACCEPT':
      c.op = T_ACCEPT;
      c.verdict = ACCEPT_VERDICT;
      break;
    case 'DROP':
      c.op = T_DROP;
      c.verdict = DROP_VERDICT;
      break;
    case 'REJECT':
      c.op = T_REJECT;
      c.verdict = { kind: 'REJECT', with: t.with };
      break;
    case 'RETURN':
      c.op = T_RETURN;
      break;
    case 'jump':
      c.op = T_JUMP;
      c.targetName = t.chain;
      break;
    case 'goto':
      c.op = T_GOTO;
      c.targetName = t.chain;
      break;
    case 'DNAT':
    case 'SNAT':
    case 'MASQUERADE':
      // The NAT targets' fields are exactly a NatRequest: hand the (immutable) target over as is.
      c.op = T_NAT;
      c.nat = t;
      c.verdict = ACCEPT_VERDICT;
      break;
    case 'MARK':
      c.op = T_MARK;
      c.value = t.value >>> 0;
      c.mask = t.mask >>> 0;
      break;
    case 'CONNMARK':
      if (t.mode === 'set-xmark') {
        c.op = T_CONNMARK_SET;
        c.value = t.value >>> 0;
        c.mask = t.mask >>> 0;
      } else {
        c.op = t.mode === 'save' ? T_CONNMARK_SAVE : T_CONNMARK_RESTORE;
        c.nfmask = (t.nfmask ?? 0xffffffff) >>> 0;
        c.ctmask = (t.ctmask ?? 0xffffffff) >>> 0;
      }
      break;
    case 'LOG':
    case 'NFLOG':
      c.op = T_CONTINUE;
      break;
    case 'NOTRACK':
      c.op = T_NOTRACK;
      break;
    case 'CT':
      if (t.notrack) c.op = T_NOTRACK;
      else {
        // Zones, helpers, timeouts and events act on conntrack, which this layer does not model.
        c.op = T_UNKNOWN;
        c.unknownTarget = `target CT ${t.args.join(' ')}`.trimEnd();
      }
      break;
    case 'TRACE':
      c.op = T_TRACE;
      break;
    case 'unknown':
      c.op = T_UNKNOWN;
      c.unknownTarget = `target ${t.name}`;
      break;
  }
  return c;
}

function compileRule(rule: Rule, index: number, table: TableName, chain: string): CompiledRule {
  const mods: ModTest[] = [];
  let careful = false;
  let l4: Match | undefined;
  let sideEffectSeen = false;
  for (const m of rule.matches) {
    if (l4 === undefined && !sideEffectSeen && (m.kind === 'udp' || (m.kind === 'tcp' && m.option === undefined))) {
      l4 = m;
      continue;
    }
    const t = compileMatch(m, rule);
    if (t === null) continue;
    mods.push(t);
    if (t.sideEffect) sideEffectSeen = true;
    if (t.sideEffect || t.undecidable) careful = true;
  }
  const ports = l4 !== undefined && (l4.kind === 'tcp' || l4.kind === 'udp') ? l4 : undefined;
  const flags = ports?.kind === 'tcp' ? ports.flags : undefined;
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
    l4: ports === undefined ? 0 : ports.kind === 'tcp' ? 6 : 17,
    spFrom: ports?.sport?.range.from ?? 0,
    spTo: ports?.sport?.range.to ?? 65535,
    spNeg: ports?.sport?.negate ?? false,
    dpFrom: ports?.dport?.range.from ?? 0,
    dpTo: ports?.dport?.range.to ?? 65535,
    dpNeg: ports?.dport?.negate ?? false,
    flMask: flags?.mask ?? 0,
    flComp: flags?.comp ?? 0,
    flNeg: flags?.negate ?? false,
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
