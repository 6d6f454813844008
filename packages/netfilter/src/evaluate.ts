/**
 * The chain walk: one table's built-in chain for a hook (`evaluateTable`), or every table of a hook
 * in priority order (`evaluateHook`), as the kernel's `ipt_do_table` walks them.
 *
 * - Rules are tested in order: the IP header first (`-s -d -i -o -p -f`), then each module in the
 *   order given, stopping at the first that fails (so a `statistic` draw happens only when every
 *   earlier check passed).
 * - `-j CHAIN` pushes a return point; `-g CHAIN` does not, so a RETURN (or falling off the end) in
 *   a chain reached by goto resumes after the rule that jumped to the chain that did the goto, or
 *   applies the built-in chain's policy when there is none. RETURN in a built-in chain applies its
 *   policy. User chains have no policy: falling off their end returns.
 * - Chain nesting is bounded as in the kernel (nf_tables refuses a ruleset whose jumps and gotos
 *   nest deeper than 15 levels, and so every loop, at load: "Too many links"): a walk that would go
 *   deeper ends with an `unknown` verdict instead of hanging.
 * - Terminal targets end the table's walk: ACCEPT, DROP, REJECT, and DNAT/SNAT/MASQUERADE (which
 *   accept and hand back a {@link NatRequest}). MARK, CONNMARK, LOG, NFLOG, TRACE, NOTRACK, CT
 *   --notrack and rules without a target continue.
 * - Undecidable modules and targets follow {@link UnknownPolicy}; see `docs/netfilter.md`.
 */
import * as C from './compile.ts';
import type { CompiledChain, CompiledRule, CompiledRuleset, CompiledTable } from './compile.ts';
import * as D from './dispatchIndex.ts';
import type {
  ConntrackView,
  EvalContext,
  EvalOptions,
  EvalResult,
  EvalTraceEntry,
  HookEvalOptions,
  NatRequest,
  Packet,
  UnknownPolicy,
  Verdict,
} from './evalTypes.ts';
import * as M from './matchers.ts';
import type { ModTest, Walk } from './matchers.ts';
import type { Hook, Ruleset, TableName } from './types.ts';

/**
 * The tables each hook traverses, in priority order (raw -300, mangle -150, nat DNAT -100,
 * filter 0, nat SNAT 100). The security table is not modelled.
 */
export const HOOK_TABLES: { readonly [H in Hook]: readonly TableName[] } = {
  PREROUTING: ['raw', 'mangle', 'nat'],
  INPUT: ['mangle', 'filter', 'nat'],
  FORWARD: ['mangle', 'filter'],
  OUTPUT: ['raw', 'mangle', 'nat', 'filter'],
  POSTROUTING: ['mangle', 'nat'],
};

// Module-local copies of the hot path's imported constants and functions. Module transforms (tsx,
// vitest) compile every access to an imported binding into a getter call, which in the rule loop
// cost more than the matching itself.
const ACCEPT_VERDICT = C.ACCEPT_VERDICT;
const T_NONE = C.T_NONE;
const T_ACCEPT = C.T_ACCEPT;
const T_DROP = C.T_DROP;
const T_REJECT = C.T_REJECT;
const T_RETURN = C.T_RETURN;
const T_JUMP = C.T_JUMP;
const T_GOTO = C.T_GOTO;
const T_NAT = C.T_NAT;
const T_MARK = C.T_MARK;
const T_CONNMARK_SET = C.T_CONNMARK_SET;
const T_CONNMARK_SAVE = C.T_CONNMARK_SAVE;
const T_CONNMARK_RESTORE = C.T_CONNMARK_RESTORE;
const T_CONTINUE = C.T_CONTINUE;
const T_NOTRACK = C.T_NOTRACK;
const T_TRACE = C.T_TRACE;
const T_UNKNOWN = C.T_UNKNOWN;
const NOMATCH = M.NOMATCH;
const MATCH = M.MATCH;
const UNDECIDED = M.UNDECIDED;
const CT_INVALID = M.CT_INVALID;
const CT_NEW = M.CT_NEW;
const CT_ESTABLISHED = M.CT_ESTABLISHED;
const CT_RELATED = M.CT_RELATED;
const CT_UNTRACKED = M.CT_UNTRACKED;
const CT_SNAT = M.CT_SNAT;
const CT_DNAT = M.CT_DNAT;
const nextCandidate = D.nextCandidate;
const compile = C.compile;
const isCompiled = C.isCompiled;

/** nf_tables refuses jumps/gotos nested deeper than this at load ("Too many links"). */
export const MAX_CHAIN_LEVEL = 15;

const STATE_BIT = { INVALID: CT_INVALID, NEW: CT_NEW, ESTABLISHED: CT_ESTABLISHED, RELATED: CT_RELATED, UNTRACKED: CT_UNTRACKED } as const;

/** What the raw table sees for a packet off the wire: conntrack has not run yet. */
const NO_CONNTRACK: ConntrackView = { state: 'INVALID', dnat: false, snat: false, ctmark: 0 };

function setConntrack(w: Walk, v: ConntrackView): void {
  const bit = STATE_BIT[v.state];
  const hasCt = bit === CT_NEW || bit === CT_ESTABLISHED || bit === CT_RELATED;
  w.hasCt = hasCt;
  w.ctBits = bit | (hasCt && v.snat ? CT_SNAT : 0) | (hasCt && v.dnat ? CT_DNAT : 0);
  w.ctmark = v.ctmark >>> 0;
}

function newWalk(packet: Packet, ctx: EvalContext, view: ConntrackView): Walk {
  const w: Walk = {
    packet,
    ctx,
    mark: packet.mark >>> 0,
    ctmark: 0,
    ctBits: 0,
    hasCt: false,
    notrack: false,
    traced: false,
    nat: null,
    why: '',
    unknownWhy: '',
    unknownAt: -1,
    undecided: [],
    undecidedCount: 0,
  };
  setConntrack(w, view);
  return w;
}

/** Tests one rule against the walk's packet and state: header first, then modules in order. */
function testRule(r: CompiledRule, w: Walk): number {
  const p = w.packet;
  if (((p.src & r.srcMask) === r.srcAddr) === r.srcNeg) return NOMATCH;
  if (((p.dst & r.dstMask) === r.dstAddr) === r.dstNeg) return NOMATCH;
  if (r.inName !== null) {
    const name = p.inIface ?? '';
    if ((r.inWild ? name.startsWith(r.inName) : name === r.inName) === r.inNeg) return NOMATCH;
  }
  if (r.outName !== null) {
    const name = p.outIface ?? '';
    if ((r.outWild ? name.startsWith(r.outName) : name === r.outName) === r.outNeg) return NOMATCH;
  }
  if (r.proto !== 0 && (p.proto === r.proto) === r.protoNeg) return NOMATCH;
  if (r.frag !== 0 && p.fragment !== (r.frag === 1)) return NOMATCH;
  if (r.l4 !== 0) {
    // tcp_mt/udp_mt: the protocol must be right and a non-first fragment has no ports.
    if (p.proto !== r.l4 || p.fragment) return NOMATCH;
    if ((p.sport >= r.spFrom && p.sport <= r.spTo) === r.spNeg) return NOMATCH;
    if ((p.dport >= r.dpFrom && p.dport <= r.dpTo) === r.dpNeg) return NOMATCH;
    if (((p.tcpFlags & r.flMask) === r.flComp) === r.flNeg) return NOMATCH;
  }
  const mods = r.mods;
  if (mods === null) return MATCH;
  const n = mods.length;
  if (!r.careful) {
    for (let i = 0; i < n; i++) if ((mods[i] as ModTest).test(w) === NOMATCH) return NOMATCH;
    return MATCH;
  }
  // Some module may be undecidable. A rule is a conjunction, so any known failure after it still
  // proves `nomatch`; modules with side effects after it are deferred, since the kernel would run
  // them only if the undecidable one matched (see resolveDeferred).
  let first = -1;
  w.undecidedCount = 0;
  for (let i = 0; i < n; i++) {
    const m = mods[i] as ModTest;
    if (first >= 0 && m.sideEffect) continue;
    const res = m.test(w);
    if (res === NOMATCH) return NOMATCH;
    if (res === UNDECIDED) {
      w.undecided[w.undecidedCount++] = w.why;
      if (first < 0) {
        first = i;
        w.unknownWhy = w.why;
      }
    }
  }
  if (first < 0) return MATCH;
  w.unknownAt = first;
  return UNDECIDED;
}

/** Under `assume-match`: runs the deferred side-effect modules after the first undecidable one. */
function resolveDeferred(r: CompiledRule, w: Walk): boolean {
  const mods = r.mods;
  if (mods === null) return true;
  for (let i = w.unknownAt + 1; i < mods.length; i++) {
    const m = mods[i] as ModTest;
    if (m.sideEffect && m.test(w) === NOMATCH) return false;
  }
  return true;
}

function unknownVerdict(r: CompiledRule, chain: CompiledChain, what: string): Verdict {
  return {
    kind: 'unknown',
    reason: `${chain.table} ${chain.name} rule ${r.index}: cannot evaluate ${what}`,
    at: { table: chain.table, chain: chain.name, index: r.index },
  };
}

function nestingWhat(r: CompiledRule): string {
  return `${r.op === T_GOTO ? 'goto' : 'jump'} to ${r.targetName}: chains nest deeper than ${MAX_CHAIN_LEVEL} levels (a jump loop?); the kernel refuses such a ruleset at load ("Too many links")`;
}

/**
 * Walks `ct`'s built-in chain for `hook`. Returns the verdict; NAT, marks and flags are left in `w`.
 */
/**
 * The module an undecidable match's description names: its first word (`set "X" (no such
 * ipset)` is `set`, `tcp --tcp-option` is `tcp`, `rpfilter` is `rpfilter`).
 */
export function unknownModuleOf(what: string): string {
  const sp = what.indexOf(' ');
  return sp < 0 ? what : what.slice(0, sp);
}

type ModulePolicies = Readonly<Record<string, UnknownPolicy>> | null;

function modulePolicies(opts: EvalOptions): ModulePolicies {
  const m = opts.unknownModules;
  return m === undefined || Object.keys(m).length === 0 ? null : m;
}

function policyFor(policy: UnknownPolicy, byModule: ModulePolicies, what: string): UnknownPolicy {
  if (byModule === null) return policy;
  const module = unknownModuleOf(what);
  return Object.hasOwn(byModule, module) ? (byModule[module] as UnknownPolicy) : policy;
}

/**
 * The policy for a rule whose modules in `w.undecided` could not be decided, each by its module's
 * policy: one assumed not to match makes the rule not match; otherwise one to stop at stops;
 * otherwise every one is assumed to match.
 */
function rulePolicy(policy: UnknownPolicy, byModule: ModulePolicies, what: string, w: Walk): UnknownPolicy {
  if (byModule === null) return policy;
  if (w.undecidedCount <= 1) return policyFor(policy, byModule, what);
  let stop = false;
  for (let i = 0; i < w.undecidedCount; i++) {
    const one = policyFor(policy, byModule, w.undecided[i] as string);
    if (one === 'assume-nomatch') return 'assume-nomatch';
    if (one === 'stop') stop = true;
  }
  return stop ? 'stop' : 'assume-match';
}

function walkTable(ct: CompiledTable, hook: Hook, w: Walk, trace: EvalTraceEntry[] | null, defaultPolicy: UnknownPolicy, byModule: ModulePolicies): Verdict {
  const base = ct.builtin[hook];
  // A table without this built-in chain, or one that does not exist yet (nf_tables creates a table
  // on first use), is not registered at the hook: nothing runs, nothing is traced.
  if (base === undefined || ct.absent) return ACCEPT_VERDICT;
  let chain: CompiledChain = base;
  let pos = 0;
  let level = 0;
  let sp = 0;
  // Return points: (chain, position, level) triples, allocated on the first jump only.
  let stack: (CompiledChain | number)[] | null = null;
  for (;;) {
    const rules = chain.rules;
    const n = rules.length;
    const runOf = chain.hasRuns ? chain.runOf : null;
    let entered = false;
    while (pos < n) {
      if (runOf !== null) {
        const run = runOf[pos];
        if (run !== undefined) {
          const next = nextCandidate(run, w.packet, pos);
          if (next !== pos) {
            if (trace !== null) trace.push({ kind: 'skip', table: chain.table, chain: chain.name, from: pos + 1, to: next });
            pos = next;
            continue;
          }
        }
      }
      const r = rules[pos] as CompiledRule;
      const res = testRule(r, w);
      if (res === NOMATCH) {
        if (trace !== null) trace.push(r.traceNomatch);
        pos++;
        continue;
      }
      if (res === UNDECIDED) {
        const what = w.unknownWhy;
        const policy = rulePolicy(defaultPolicy, byModule, what, w);
        if (policy === 'stop') {
          if (trace !== null) trace.push({ kind: 'rule', table: chain.table, chain: chain.name, index: r.index, outcome: 'unknown', unknown: what });
          return unknownVerdict(r, chain, what);
        }
        const ok = policy === 'assume-match' && resolveDeferred(r, w);
        if (trace !== null) {
          trace.push({ kind: 'rule', table: chain.table, chain: chain.name, index: r.index, outcome: 'unknown', unknown: what, assumed: ok ? 'match' : 'nomatch' });
        }
        if (!ok) {
          pos++;
          continue;
        }
      } else if (trace !== null && r.op !== T_UNKNOWN && !((r.op === T_JUMP || r.op === T_GOTO) && (r.target === null || level >= MAX_CHAIN_LEVEL))) {
        trace.push(r.traceMatch);
      }
      switch (r.op) {
        case T_NONE:
        case T_CONTINUE:
          pos++;
          continue;
        case T_MARK:
          w.mark = ((w.mark & ~r.mask) ^ r.value) >>> 0;
          pos++;
          continue;
        case T_CONNMARK_SET:
          // CONNMARK acts on the conntrack entry; without one it does nothing.
          if (w.hasCt) w.ctmark = ((w.ctmark & ~r.mask) ^ r.value) >>> 0;
          pos++;
          continue;
        case T_CONNMARK_SAVE:
          if (w.hasCt) w.ctmark = ((w.ctmark & ~r.ctmask) ^ (w.mark & r.nfmask)) >>> 0;
          pos++;
          continue;
        case T_CONNMARK_RESTORE:
          if (w.hasCt) w.mark = ((w.mark & ~r.nfmask) ^ (w.ctmark & r.ctmask)) >>> 0;
          pos++;
          continue;
        case T_NOTRACK:
          // NOTRACK/CT only act on a packet conntrack has not seen yet ("previously seen (loopback)? ignore").
          if (w.ctBits === CT_INVALID) {
            w.notrack = true;
            w.ctBits = CT_UNTRACKED;
          }
          pos++;
          continue;
        case T_TRACE:
          w.traced = true;
          pos++;
          continue;
        case T_ACCEPT:
        case T_DROP:
        case T_REJECT:
          return r.verdict as Verdict;
        case T_NAT:
          w.nat = r.nat;
          return ACCEPT_VERDICT;
        case T_RETURN:
          break;
        case T_JUMP:
        case T_GOTO: {
          const target = r.target;
          if (target === null || level >= MAX_CHAIN_LEVEL) {
            const what = target === null ? `jump to ${r.targetName}: no such chain` : nestingWhat(r);
            if (trace !== null && res === MATCH) trace.push({ kind: 'rule', table: chain.table, chain: chain.name, index: r.index, outcome: 'match', unknown: what });
            return unknownVerdict(r, chain, what);
          }
          if (r.op === T_JUMP) {
            stack ??= [];
            stack[sp] = chain;
            stack[sp + 1] = pos + 1;
            stack[sp + 2] = level;
            sp += 3;
          }
          chain = target;
          pos = 0;
          level++;
          entered = true;
          break;
        }
        case T_UNKNOWN:
          // (After an assumed match the rule's entry is already there; the verdict names the target.)
          if (trace !== null && res === MATCH) trace.push({ kind: 'rule', table: chain.table, chain: chain.name, index: r.index, outcome: 'match', unknown: r.unknownTarget });
          return unknownVerdict(r, chain, r.unknownTarget);
        default:
          throw new Error(`netfilter evaluate: unhandled target opcode ${r.op}`);
      }
      // RETURN, or a jump/goto that entered a new chain.
      break;
    }
    if (entered) continue;
    // RETURN matched, or fell off the end of the chain.
    if (chain === base) {
      if (trace !== null) trace.push(base.tracePolicy as EvalTraceEntry);
      return base.policyVerdict as Verdict;
    }
    if (trace !== null) trace.push(chain.traceReturn);
    if (sp === 0) {
      // Reached by goto from the built-in chain: nothing to return to but the policy.
      if (trace !== null) trace.push(base.tracePolicy as EvalTraceEntry);
      return base.policyVerdict as Verdict;
    }
    sp -= 3;
    const frames = stack as (CompiledChain | number)[];
    chain = frames[sp] as CompiledChain;
    pos = frames[sp + 1] as number;
    level = frames[sp + 2] as number;
  }
}

const NO_TRACE: readonly EvalTraceEntry[] = Object.freeze([]);

function result(verdict: Verdict, w: Walk, trace: EvalTraceEntry[] | null): EvalResult {
  const t = trace ?? NO_TRACE;
  if (w.nat === null) return { verdict, mark: w.mark, ctmark: w.ctmark, notrack: w.notrack, traced: w.traced, trace: t };
  return { verdict, nat: w.nat, mark: w.mark, ctmark: w.ctmark, notrack: w.notrack, traced: w.traced, trace: t };
}

function compiledOf(rs: Ruleset | CompiledRuleset): CompiledRuleset {
  return isCompiled(rs) ? rs : compile(rs);
}

/**
 * Walks one table's built-in chain for `hook` with the packet and context as given. The
 * conntrack view is `ctx.conntrack` as is: for the raw table of a packet off the wire, pass the
 * view conntrack has not produced yet (`INVALID`), as `evaluateHook` does. A table without that
 * built-in chain (filter at PREROUTING, …) accepts with an empty trace.
 *
 * @example
 * const r = evaluateTable(ruleset, 'nat', 'PREROUTING', packet, ctx);
 * if (r.verdict.kind === 'ACCEPT' && r.nat?.kind === 'DNAT') {  … }
 */
export function evaluateTable(
  rs: Ruleset | CompiledRuleset,
  table: TableName,
  hook: Hook,
  packet: Packet,
  ctx: EvalContext,
  opts: EvalOptions = {},
): EvalResult {
  const compiled = compiledOf(rs);
  const w = newWalk(packet, ctx, ctx.conntrack);
  const trace = opts.trace === false ? null : [];
  const verdict = walkTable(compiled.tables[table], hook, w, trace, opts.unknown ?? 'stop', modulePolicies(opts));
  return result(verdict, w, trace);
}

/** The default `natRewrite`: the first address and port of the range (exact for single values). */
export function rewriteToRangeStart(p: Packet, nat: NatRequest): Packet {
  if (nat.kind !== 'DNAT' || nat.to === undefined) return p;
  const ported = p.proto === 6 || p.proto === 17 || p.proto === 132 || p.proto === 136;
  return {
    ...p,
    dst: nat.to.minIp ?? p.dst,
    dport: ported && nat.to.minPort !== undefined ? nat.to.minPort : p.dport,
  };
}

/**
 * Walks every table of `hook` in priority order (see {@link HOOK_TABLES}), as the kernel does for
 * one packet at one hook: marks set by one table are seen by the next; a DROP, REJECT or unknown
 * verdict stops the hook; the raw table sees the packet before conntrack (see
 * `HookEvalOptions.rawConntrack`) and a NOTRACK there makes later tables see UNTRACKED; the nat
 * table runs only for a packet with a conntrack entry and not under `skipNat`; in OUTPUT the filter
 * table sees the packet as DNAT left it.
 *
 * @example
 * const ctx = { addrType, conntrack: { state: 'NEW', dnat: false, snat: false, ctmark: 0 },
 *               random31: seededRandom31(1), state: createEvalState() };
 * const r = evaluateHook(compile(ruleset), 'PREROUTING', packet, ctx);
 * // r.verdict, r.nat (the DNAT to bind in conntrack), r.mark, r.trace
 */
export function evaluateHook(
  rs: Ruleset | CompiledRuleset,
  hook: Hook,
  packet: Packet,
  ctx: EvalContext,
  opts: HookEvalOptions = {},
): EvalResult {
  const compiled = compiledOf(rs);
  const tables = HOOK_TABLES[hook];
  const policy = opts.unknown ?? 'stop';
  const byModule = modulePolicies(opts);
  const trace = opts.trace === false ? null : [];
  const rawView = opts.rawConntrack ?? NO_CONNTRACK;
  const w = newWalk(packet, ctx, tables[0] === 'raw' ? rawView : ctx.conntrack);
  let verdict: Verdict = ACCEPT_VERDICT;
  for (let i = 0; i < tables.length; i++) {
    const t = tables[i] as TableName;
    if (i > 0 && tables[i - 1] === 'raw') {
      // Conntrack runs between raw and mangle.
      const rawCtmark = w.ctmark;
      const rawHadCt = w.hasCt;
      if (w.notrack) {
        w.hasCt = false;
        w.ctBits = CT_UNTRACKED;
        w.ctmark = ctx.conntrack.ctmark >>> 0;
      } else {
        setConntrack(w, ctx.conntrack);
        if (rawHadCt) w.ctmark = rawCtmark;
      }
    }
    if (t === 'nat' && (opts.skipNat === true || !w.hasCt)) continue;
    verdict = walkTable(compiled.tables[t], hook, w, trace, policy, byModule);
    if (verdict.kind !== 'ACCEPT') break;
    if (t === 'nat' && w.nat !== null && i + 1 < tables.length) {
      const before = w.packet;
      const after = (opts.natRewrite ?? rewriteToRangeStart)(before, w.nat);
      // nf_nat_setup_info marks the connection NATed only when the tuple really changes: a DNAT
      // to the address (and port) the packet already has is a null binding, no DNAT status.
      const changed = w.nat.kind === 'DNAT' ? after.dst !== before.dst || after.dport !== before.dport : after.src !== before.src || after.sport !== before.sport;
      w.packet = after;
      if (changed) w.ctBits |= w.nat.kind === 'DNAT' ? CT_DNAT : CT_SNAT;
    }
  }
  return result(verdict, w, trace);
}
