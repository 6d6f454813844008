/**
 * @internal
 * A table being changed: the mutable working copy that `iptables-restore` and `iptables` commands
 * edit before committing it back to the immutable model. Chains copy their rule arrays on first
 * write, so editing one chain of a 100k-rule table costs only that chain.
 *
 * Every operation fails as the real tool fails (iptables 1.8.9, nf_tables), including the kernel's
 * checks that nf_tables applies when a rule is added: a target only valid in some tables or hooks
 * (DNAT outside nat PREROUTING/OUTPUT, also through user chains), and jump loops reachable from a
 * built-in chain ("Too many links").
 */
import { kernelRefused, refused } from './failure.ts';
import { targetModuleOf } from './targets.ts';
import { moduleOf } from './matches.ts';
import { BUILTIN_CHAINS, type Chain, type Counters, type Hook, type Policy, type Rule, type Table, type TableName, type Target } from './types.ts';

export interface DraftChain {
  readonly name: string;
  readonly builtin: boolean;
  policy: Policy | undefined;
  counters: Counters | undefined;
  rules: Rule[];
  /** The rule array is this draft's own copy (else it is shared with the committed table). */
  owned: boolean;
  /** Scratch for {@link TableDraft.validateAll}: hooks reaching the chain, hooks it allows, walk colour. */
  hookMask: number;
  allowedMask: number;
  colour: number;
  /**
   * Chains this chain jumps to, and the hooks its rules allow, kept up to date by appends while
   * `summaryValid`; any other change to the rules invalidates them (validateAll then rescans).
   */
  jumps: DraftChain[] | undefined;
  summaryValid: boolean;
  /** The `-j`/`-g` targets naming this chain, made once and shared by the rules (see jumpTo). */
  jumpTarget: Target | undefined;
  gotoTarget: Target | undefined;
  /**
   * The chain created next in this draft, while `linkVersion` is the draft's chain version (no
   * chain deleted or renamed since): a dump lists rules in the order it declares chains.
   */
  nextCreated: DraftChain | undefined;
  linkVersion: number;
}

export type RuleOp = 'RULE_APPEND' | 'RULE_INSERT' | 'RULE_REPLACE';

export const ZERO: Counters = { packets: 0, bytes: 0 };
/**
 * The rules of a new chain and the jumps of one without any: one empty array for all (a dump
 * declares tens of thousands of chains). Never written to: a chain holding it is not `owned`,
 * appends make a new array while one is short (see appended()), and it never leaves the draft
 * (toTable gives an empty chain an array of its own). Not frozen: a frozen array has another
 * elements kind, which makes every loop over rules and jumps slower.
 */
const NO_RULES: readonly Rule[] = [];
const NO_JUMPS: readonly DraftChain[] = [];

export function jumpTarget(rule: Rule): string | undefined {
  const t = rule.target;
  return t !== undefined && (t.kind === 'jump' || t.kind === 'goto') ? t.chain : undefined;
}

export const HOOK_BIT: Readonly<Record<string, number>> = { PREROUTING: 1, INPUT: 2, FORWARD: 4, OUTPUT: 8, POSTROUTING: 16 };
export const ALL_HOOKS = 31;

/**
 * Hooks a rule may run from, when its target or a match limits them: each module says (DNAT,
 * REJECT, CLASSIFY, TCPMSS's path-MTU clamping, TPROXY, rpfilter, addrtype's interface limits;
 * checked against 1.8.9, through user chains too).
 */
export function ruleHooks(rule: Rule): readonly Hook[] | undefined {
  const target = rule.target;
  let hooks: readonly Hook[] | undefined = target === undefined ? undefined : targetModuleOf(target)?.hooks?.(target);
  const matches = rule.matches;
  for (let k = 0; k < matches.length; k++) {
    const m = matches[k] as Rule['matches'][number];
    const limit = moduleOf(m)?.hooks?.(m);
    if (limit !== undefined) hooks = hooks === undefined ? limit : hooks.filter((h) => limit.includes(h));
  }
  return hooks;
}

/** {@link ruleHooks} as a bit set (see HOOK_BIT): every hook when the rule is not limited. */
export function ruleHookMask(rule: Rule): number {
  const hooks = ruleHooks(rule);
  if (hooks === undefined) return ALL_HOOKS;
  let mask = 0;
  for (const h of hooks) mask |= HOOK_BIT[h] ?? 0;
  return mask;
}

/**
 * Whether the kernel refuses `rule` in `table` whatever its chain: a target only some tables take
 * (DNAT outside nat, …). Jumps and verdicts need no lookup: no target module has their names.
 */
export function refusedInTable(rule: Rule, table: TableName): boolean {
  for (const m of rule.matches) if (m.kind === 'unknown' && moduleOf(m)?.tables?.includes(table) === false) return true;
  const target = rule.target;
  const kind = target?.kind;
  if (kind === undefined || kind === 'jump' || kind === 'goto' || kind === 'ACCEPT' || kind === 'DROP' || kind === 'RETURN') return false;
  const tables = targetModuleOf(target as Target)?.tables;
  return tables !== undefined && !tables.includes(table);
}

export class TableDraft {
  readonly name: TableName;
  /** The table exists in the kernel (see `Table.absent`). */
  created: boolean;
  readonly chains = new Map<string, DraftChain>();
  /** to-chain → from-chain → number of jump/goto rules; built on first use. */
  private refs: Map<string, Map<string, number>> | undefined;
  /**
   * When true, the hook and loop checks wait for {@link validateAll} (one pass at COMMIT); rule
   * commands still check tables at once. iptables-restore uses this and replays the block with
   * checks per rule only when the pass fails, to name the same line the kernel names.
   */
  deferHookChecks = false;
  /** The chain the last rule command used (a lookup cache; see {@link need}). */
  private lastChain: DraftChain | undefined;
  /** Bumped when a chain is deleted or renamed, so the caches above can tell they are stale. */
  private chainsVersion = 0;
  private lastChainVersion = -1;
  /** The user chain `userChainName` found last: the next rule's jump target, usually. */
  private lastResolved: DraftChain | undefined;
  /** The chain {@link jumpTo} found last (a cache: KUBE-MARK-MASQ, say, is jumped to again and again). */
  private lastJump: DraftChain | undefined;
  private lastJumpVersion = -1;
  /** The chain created last (see `DraftChain.nextCreated`). */
  private lastCreated: DraftChain | undefined;

  private constructor(name: TableName, created: boolean) {
    this.name = name;
    this.created = created;
  }

  static of(table: Table): TableDraft {
    const d = new TableDraft(table.name, table.absent !== true);
    for (const hook of BUILTIN_CHAINS[table.name]) {
      const c = table.chains[hook];
      d.chains.set(hook, {
        name: hook,
        builtin: true,
        policy: c?.policy ?? 'ACCEPT',
        counters: c?.counters ?? ZERO,
        rules: (c?.rules ?? []) as Rule[],
        owned: false,
        hookMask: 0,
        allowedMask: ALL_HOOKS,
        colour: 0,
        jumps: undefined,
        summaryValid: false,
        jumpTarget: undefined,
        gotoTarget: undefined,
        nextCreated: undefined,
        linkVersion: -1,
      });
    }
    for (const name of Object.keys(table.chains)) {
      const c = table.chains[name] as Chain;
      if (d.chains.has(name)) continue;
      d.chains.set(name, { name, builtin: false, policy: undefined, counters: undefined, rules: c.rules as Rule[], owned: false, hookMask: 0, allowedMask: ALL_HOOKS, colour: 0, jumps: undefined, summaryValid: false, jumpTarget: undefined, gotoTarget: undefined, nextCreated: undefined, linkVersion: -1 });
    }
    return d;
  }

  toTable(): Table {
    const chains: { [name: string]: Chain } = {};
    let userChains = 0;
    for (const c of this.chains.values()) {
      if (!c.builtin) userChains++;
      // An array grown by appends keeps spare capacity; the table keeps an exact-size copy
      // (arrays of up to three rules are made at their size, see appended()).
      const rules = c.rules === NO_RULES ? [] : c.owned && c.rules.length > 3 ? c.rules.slice() : c.rules;
      chains[c.name] = c.builtin
        ? { name: c.name, policy: c.policy ?? 'ACCEPT', counters: c.counters ?? ZERO, rules }
        : { name: c.name, rules };
    }
    const absent = !this.created && userChains === 0;
    return absent ? { name: this.name, absent: true, chains } : { name: this.name, chains };
  }

  /** iptables-restore without --noflush: the table is deleted and starts again empty. */
  flushAll(): void {
    this.chains.clear();
    this.chainsVersion++;
    this.lastCreated = undefined;
    for (const hook of BUILTIN_CHAINS[this.name]) {
      this.link({ name: hook, builtin: true, policy: 'ACCEPT', counters: ZERO, rules: [], owned: true, hookMask: 0, allowedMask: ALL_HOOKS, colour: 0, jumps: [], summaryValid: true, jumpTarget: undefined, gotoTarget: undefined, nextCreated: undefined, linkVersion: -1 });
    }
    this.created = false;
    this.refs = undefined;
    this.lastResolved = undefined;
  }

  // -------------------------------------------------------------------------------------------
  // Queries

  chain(name: string): DraftChain | undefined {
    return this.chains.get(name);
  }

  /** A chain for a rule command; `No chain/target/match by that name.` when missing. */
  need(name: string): DraftChain {
    // Dumps list a chain's rules together: remember the last chain asked for.
    const last = this.lastChain;
    if (last !== undefined && this.lastChainVersion === this.chainsVersion) {
      if (last.name === name) return last;
      // Or the chain created after it, as in a dump.
      const next = last.nextCreated;
      if (next !== undefined && last.linkVersion === this.chainsVersion && next.name === name) {
        this.lastChain = next;
        return next;
      }
    }
    const c = this.chains.get(name);
    if (c === undefined) throw refused('No chain/target/match by that name');
    this.lastChain = c;
    this.lastChainVersion = this.chainsVersion;
    return c;
  }

  hasUserChain(name: string): boolean {
    const c = this.chains.get(name);
    return c !== undefined && !c.builtin;
  }

  /** A shared `-j`/`-g` target for an existing user chain (see `CommandEnv.jumpTo`). */
  jumpTo(name: string, isGoto: boolean): Target | undefined {
    let c = this.lastJump;
    if (c === undefined || this.lastJumpVersion !== this.chainsVersion || c.name !== name) {
      c = this.chains.get(name);
      if (c === undefined || c.builtin) return undefined;
      this.lastJump = c;
      this.lastJumpVersion = this.chainsVersion;
    }
    this.lastResolved = c;
    if (isGoto) return (c.gotoTarget ??= Object.freeze({ kind: 'goto', chain: c.name }));
    return (c.jumpTarget ??= Object.freeze({ kind: 'jump', chain: c.name }));
  }

  /** The user chain's name as stored (see `CommandEnv.userChain`), or undefined. */
  userChainName(name: string): string | undefined {
    const c = this.chains.get(name);
    if (c === undefined || c.builtin) return undefined;
    this.lastResolved = c;
    return c.name;
  }

  /** Number of jump/goto rules pointing at a chain (the "N references" of `iptables -L`). */
  references(name: string): number {
    let n = 0;
    for (const count of this.refIndex().get(name)?.values() ?? []) n += count;
    return n;
  }

  /** User chains in the order `iptables-save` prints them (byte order of their names). */
  userChainNames(): string[] {
    const names: string[] = [];
    for (const c of this.chains.values()) if (!c.builtin) names.push(c.name);
    return names.sort(compareNames);
  }

  // -------------------------------------------------------------------------------------------
  // Rule operations

  append(chainName: string, rule: Rule, op: RuleOp = 'RULE_APPEND'): void {
    const c = this.need(chainName);
    this.validate(c, rule, op);
    const wasValid = c.summaryValid;
    if (c.rules.length < 3) {
      // appended() makes a new array: nothing to copy first.
      c.rules = appended(c.rules, rule);
      c.owned = true;
    } else c.rules = appended(this.writable(c), rule);
    this.addRef(c.name, rule);
    this.created = true;
    if (wasValid) {
      c.summaryValid = true;
      this.summarise(c, rule);
    }
  }

  /** `-I chain [num]`: 1-based; num may be one past the end. */
  insert(chainName: string, num: number, rule: Rule): void {
    const c = this.need(chainName);
    if (num > c.rules.length + 1) throw refused('Index of insertion too big');
    this.validate(c, rule, 'RULE_INSERT');
    this.writable(c).splice(num - 1, 0, rule);
    this.addRef(c.name, rule);
    this.created = true;
  }

  replace(chainName: string, num: number, rule: Rule): void {
    const c = this.need(chainName);
    if (num > c.rules.length) throw refused('Index of replacement too big');
    // The reference index must describe the chain before the old rule leaves it.
    this.refIndex();
    const old = c.rules[num - 1] as Rule;
    this.removeRef(c.name, old);
    try {
      this.validate(c, rule, 'RULE_REPLACE');
    } catch (e) {
      this.addRef(c.name, old);
      throw e;
    }
    this.writable(c)[num - 1] = rule;
    this.addRef(c.name, rule);
    this.created = true;
  }

  deleteNum(chainName: string, num: number): void {
    const c = this.need(chainName);
    // A table nf_tables has not created yet has no chain for the rule number to point into.
    if (!this.created) throw refused('No chain/target/match by that name');
    if (num > c.rules.length) throw refused('Index of deletion too big');
    const [old] = this.writable(c).splice(num - 1, 1);
    if (old !== undefined) this.removeRef(c.name, old);
    this.created = true;
  }

  /**
   * `-D chain spec`: the first rule with the same spec (counters aside): whose `key` is `want`,
   * the key of the rule the command gives.
   */
  deleteSpec(chainName: string, want: string, key: (r: Rule) => string): void {
    const c = this.chains.get(chainName);
    const k = c === undefined ? -1 : this.find(c, want, key);
    if (c === undefined || k < 0) throw refused('Bad rule (does a matching rule exist in that chain?)');
    const [old] = this.writable(c).splice(k, 1);
    if (old !== undefined) this.removeRef(c.name, old);
    this.created = true;
  }

  /** `-C chain spec`, as {@link deleteSpec} finds the rule. */
  check(chainName: string, want: string, key: (r: Rule) => string): void {
    const c = this.chains.get(chainName);
    if (c === undefined || this.find(c, want, key) < 0) throw refused('Bad rule (does a matching rule exist in that chain?)');
  }

  private find(c: DraftChain, want: string, key: (r: Rule) => string): number {
    for (let k = 0; k < c.rules.length; k++) if (key(c.rules[k] as Rule) === want) return k;
    return -1;
  }

  // -------------------------------------------------------------------------------------------
  // Chain operations

  newChain(name: string): void {
    if (this.chains.has(name)) throw refused('Chain already exists');
    this.createUserChain(name);
  }

  /** `:name` of iptables-restore for a user chain: create, or flush when it exists. */
  declareUserChain(name: string): void {
    const c = this.chains.get(name);
    if (c === undefined) this.createUserChain(name);
    else this.flushChain(c);
    this.created = true;
  }

  private createUserChain(name: string): void {
    this.link({ name, builtin: false, policy: undefined, counters: undefined, rules: NO_RULES as Rule[], owned: false, hookMask: 0, allowedMask: ALL_HOOKS, colour: 0, jumps: NO_JUMPS as DraftChain[], summaryValid: true, jumpTarget: undefined, gotoTarget: undefined, nextCreated: undefined, linkVersion: -1 });
    this.created = true;
  }

  /** Adds a new chain, linked after the one created before it (see `DraftChain.nextCreated`). */
  private link(c: DraftChain): void {
    this.chains.set(c.name, c);
    const prev = this.lastCreated;
    if (prev !== undefined) {
      prev.nextCreated = c;
      prev.linkVersion = this.chainsVersion;
    }
    this.lastCreated = c;
  }

  /** `-X name`: the chain must exist, be a user chain, be empty and unreferenced. */
  deleteChain(name: string): void {
    const c = this.chains.get(name);
    if (c?.builtin === true && this.created) {
      // nf_tables lets `-X` remove an empty base chain, which iptables shows again as an empty
      // built-in chain with policy ACCEPT: so nothing visible changes, or the chain is busy.
      if (c.rules.length > 0) throw kernelRefused('CHAIN_DEL', 'Device or resource busy', `chain ${name}`);
      return;
    }
    if (c === undefined || c.builtin) throw refused('No chain/target/match by that name');
    if (c.rules.length > 0 || this.references(name) > 0) {
      throw kernelRefused('CHAIN_DEL', 'Device or resource busy', `chain ${name}`);
    }
    this.chains.delete(name);
    this.refs?.delete(name);
    this.chainsVersion++;
    this.invalidateSummaries();
  }

  /** `-X` alone: every user chain, all or nothing, failing on the first (in name order) in use. */
  deleteAllUserChains(): void {
    const names = this.userChainNames();
    for (const name of names) {
      const c = this.chains.get(name) as DraftChain;
      if (c.rules.length > 0 || this.references(name) > 0) {
        throw kernelRefused('CHAIN_DEL', 'Device or resource busy', `chain ${name}`);
      }
    }
    for (const name of names) {
      this.chains.delete(name);
      this.refs?.delete(name);
    }
    this.chainsVersion++;
    this.invalidateSummaries();
  }

  flush(name: string | undefined): void {
    if (name === undefined) {
      for (const c of this.chains.values()) this.flushChain(c);
      return;
    }
    this.flushChain(this.need(name));
    this.created = true;
  }

  private flushChain(c: DraftChain): void {
    if (c.rules.length === 0) return;
    for (const r of c.rules) this.removeRef(c.name, r);
    c.rules = [];
    c.owned = true;
    c.jumps = [];
    c.allowedMask = ALL_HOOKS;
    c.summaryValid = true;
  }

  /** `-Z [chain [num]]`: counters of rules (and built-in chains) back to zero. */
  zero(name: string | undefined, num: number | undefined): void {
    if (name !== undefined && !this.created) throw refused('No chain/target/match by that name');
    const targets = name === undefined ? [...this.chains.values()] : [this.need(name)];
    for (const c of targets) {
      if (num !== undefined) {
        if (num > c.rules.length) throw refused('Index of deletion too big');
        const r = c.rules[num - 1] as Rule;
        if (r.counters !== undefined) this.writable(c)[num - 1] = withoutCounters(r);
        continue;
      }
      if (c.builtin) c.counters = ZERO;
      if (c.rules.some((r) => r.counters !== undefined)) {
        const rules = this.writable(c);
        for (let k = 0; k < rules.length; k++) {
          const r = rules[k] as Rule;
          if (r.counters !== undefined) rules[k] = withoutCounters(r);
        }
      }
    }
  }

  /** `-E old new`: rules jumping to the chain follow it. */
  rename(oldName: string, newName: string): void {
    this.chainsVersion++;
    this.invalidateSummaries();
    const c = this.chains.get(oldName);
    // The real tool looks for the new name first.
    if (this.chains.has(newName)) throw refused('File exists');
    if (c === undefined || c.builtin) throw refused('No chain/target/match by that name');
    const index = this.refIndex();
    const from = index.get(oldName);
    this.chains.delete(oldName);
    const renamed: DraftChain = { ...c, name: newName, jumpTarget: undefined, gotoTarget: undefined };
    this.chains.set(newName, renamed);
    if (from !== undefined) {
      for (const fromName of from.keys()) {
        const fc = this.chains.get(fromName === oldName ? newName : fromName);
        if (fc === undefined) continue;
        const rules = this.writable(fc);
        for (let k = 0; k < rules.length; k++) {
          const r = rules[k] as Rule;
          if (jumpTarget(r) === oldName) rules[k] = { ...r, target: { ...(r.target as { kind: 'jump' | 'goto'; chain: string }), chain: newName } };
        }
      }
      index.delete(oldName);
      index.set(newName, from);
    }
    // Outgoing references are recorded under the chain's name as source.
    for (const m of index.values()) {
      const n = m.get(oldName);
      if (n !== undefined) {
        m.delete(oldName);
        m.set(newName, n);
      }
    }
    this.created = true;
  }

  /** `-P chain policy` and restore's built-in chain lines. */
  setPolicy(name: string, policy: string, counters?: Counters): void {
    const c = this.chains.get(name);
    if (c === undefined || !c.builtin) throw refused('Bad built-in chain name');
    if (policy !== 'ACCEPT' && policy !== 'DROP') throw refused("Bad policy name. Run `dmesg' for more information");
    c.policy = policy;
    if (counters !== undefined) c.counters = counters;
    this.created = true;
  }

  // -------------------------------------------------------------------------------------------
  // Internals

  private writable(c: DraftChain): Rule[] {
    // Any change but an append (which updates it itself) makes the chain's summary stale.
    c.summaryValid = false;
    if (!c.owned) {
      c.rules = c.rules.slice();
      c.owned = true;
    }
    return c.rules;
  }

  private refIndex(): Map<string, Map<string, number>> {
    if (this.refs === undefined) {
      this.refs = new Map();
      for (const c of this.chains.values()) for (const r of c.rules) this.addRef(c.name, r);
    }
    return this.refs;
  }

  private addRef(from: string, rule: Rule): void {
    const to = jumpTarget(rule);
    if (to === undefined || this.refs === undefined) return;
    let m = this.refs.get(to);
    if (m === undefined) {
      m = new Map<string, number>();
      this.refs.set(to, m);
    }
    m.set(from, (m.get(from) ?? 0) + 1);
  }

  private removeRef(from: string, rule: Rule): void {
    const to = jumpTarget(rule);
    if (to === undefined || this.refs === undefined) return;
    const m = this.refs.get(to);
    const n = m?.get(from);
    if (m === undefined || n === undefined) return;
    if (n <= 1) m.delete(from);
    else m.set(from, n - 1);
  }

  /** Hooks a chain runs from: its own for a built-in chain, else those of the chains jumping to it. */
  private hooksOf(chain: string): Set<Hook> {
    const hooks = new Set<Hook>();
    // Nothing can jump to a built-in chain, so its hook is all there is.
    if (this.chains.get(chain)?.builtin === true) return hooks.add(chain as Hook);
    const index = this.refIndex();
    const seen = new Set<string>([chain]);
    const queue = [chain];
    while (queue.length > 0) {
      const name = queue.pop() as string;
      const c = this.chains.get(name);
      if (c?.builtin) hooks.add(name as Hook);
      for (const from of index.get(name)?.keys() ?? []) {
        if (!seen.has(from)) {
          seen.add(from);
          queue.push(from);
        }
      }
    }
    return hooks;
  }

  /** The kernel's checks for adding `rule` to chain `c`. */
  private validate(c: DraftChain, rule: Rule, op: RuleOp): void {
    if (refusedInTable(rule, this.name)) throw kernelRefused(op, 'Invalid argument', `rule in chain ${c.name}`);
    if (this.deferHookChecks) return;
    const allowed = ruleHooks(rule);
    const to = jumpTarget(rule);
    if (allowed === undefined && to === undefined) return;
    const hooks = this.hooksOf(c.name);
    if (allowed !== undefined) for (const h of hooks) if (!allowed.includes(h)) throw kernelRefused(op, 'Invalid argument', `rule in chain ${c.name}`);
    if (to === undefined || hooks.size === 0) return;
    // A jump makes the target's subtree reachable from these hooks: check it, and look for loops.
    const bad = this.checkSubtree(to, hooks, c.name);
    if (bad !== undefined) throw kernelRefused(op, bad, `rule in chain ${c.name}`);
  }

  /**
   * Walks the chains reachable from `start` (iteratively, so deep chains cannot overflow the
   * stack): the errno of the first rule not allowed from `hooks`, or "Too many links" when a
   * chain on the current path (or `origin`) is reached again. Undefined when all is well.
   */
  private checkSubtree(start: string, hooks: ReadonlySet<Hook>, origin: string | undefined): string | undefined {
    const onPath = new Set<string>();
    if (origin !== undefined) onPath.add(origin);
    const done = new Set<string>();
    const stack: { name: string; rules: readonly Rule[]; k: number }[] = [];
    const enter = (name: string): string | undefined => {
      if (onPath.has(name)) return 'Too many links';
      if (done.has(name)) return undefined;
      const sub = this.chains.get(name);
      if (sub === undefined) return undefined;
      onPath.add(name);
      stack.push({ name, rules: sub.rules, k: 0 });
      return undefined;
    };
    const first = enter(start);
    if (first !== undefined) return first;
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as { name: string; rules: readonly Rule[]; k: number };
      if (top.k >= top.rules.length) {
        stack.pop();
        onPath.delete(top.name);
        done.add(top.name);
        continue;
      }
      const r = top.rules[top.k++] as Rule;
      const rh = ruleHooks(r);
      if (rh !== undefined) for (const h of hooks) if (!rh.includes(h)) return 'Invalid argument';
      const next = jumpTarget(r);
      if (next !== undefined) {
        const bad = enter(next);
        if (bad !== undefined) return bad;
      }
    }
    return undefined;
  }

  /** Adds one rule to a chain's summary: the chain it jumps to and the hooks it allows. */
  private summarise(c: DraftChain, rule: Rule): void {
    const to = jumpTarget(rule);
    if (to !== undefined) {
      // The parser just resolved this name (same string object): no map lookup needed.
      const resolved = this.lastResolved;
      const t = resolved !== undefined && resolved.name === to && this.lastChainVersion === this.chainsVersion ? resolved : this.chains.get(to);
      if (t !== undefined) c.jumps = appended(c.jumps as DraftChain[], t);
    }
    c.allowedMask &= ruleHookMask(rule);
  }

  /** Summaries hold chain objects: after a chain goes away or is renamed, rebuild them all. */
  private invalidateSummaries(): void {
    for (const ch of this.chains.values()) ch.summaryValid = false;
    this.lastResolved = undefined;
  }

  /**
   * The deferred hook and loop checks over the whole table: true when every rule reachable from
   * a built-in chain is allowed there and no loop is reachable. One walk from the built-in
   * chains finds loops (three colours) and gives the reachable chains in postorder; reversed,
   * that is an order in which every chain comes before the chains it jumps to, so hook masks
   * spread from the built-ins in one pass over it.
   */
  validateAll(): boolean {
    // Per chain: the hooks it allows (restricted rules narrow them) and the chains it jumps to,
    // as kept by appends or rescanned.
    for (const c of this.chains.values()) {
      c.hookMask = 0;
      c.colour = 0;
      if (!c.summaryValid) {
        c.jumps = NO_JUMPS as DraftChain[];
        c.allowedMask = ALL_HOOKS;
        for (const rule of c.rules) this.summarise(c, rule);
        c.summaryValid = true;
      }
    }
    // Colour 1: on the path, 2: done. Nothing jumps to a built-in chain, so each is a root.
    const order: DraftChain[] = [];
    const stack: DraftChain[] = [];
    const next: number[] = [];
    for (const hook of BUILTIN_CHAINS[this.name]) {
      const root = this.chains.get(hook);
      if (root === undefined) continue;
      root.hookMask = HOOK_BIT[hook] ?? 0;
      root.colour = 1;
      stack.push(root);
      next.push(0);
      while (stack.length > 0) {
        const top = stack.length - 1;
        const c = stack[top] as DraftChain;
        const jumps = c.jumps as DraftChain[];
        const k = next[top] as number;
        if (k >= jumps.length) {
          c.colour = 2;
          order.push(c);
          stack.pop();
          next.pop();
          continue;
        }
        next[top] = k + 1;
        const t = jumps[k] as DraftChain;
        if (t.colour === 1) return false;
        if (t.colour === 0) {
          t.colour = 1;
          stack.push(t);
          next.push(0);
        }
      }
    }
    for (let i = order.length - 1; i >= 0; i--) {
      const c = order[i] as DraftChain;
      const mask = c.hookMask;
      if ((mask & ~c.allowedMask) !== 0) return false;
      const jumps = c.jumps as DraftChain[];
      for (let k = 0; k < jumps.length; k++) (jumps[k] as DraftChain).hookMask |= mask;
    }
    return true;
  }
}


/**
 * `a` with `x` appended: a new array of the exact size while it is short (most chains hold a
 * few rules, and an array grown by push reserves room for 16 more), else `a` itself, pushed to.
 */
function appended<T>(a: T[], x: T): T[] {
  switch (a.length) {
    case 0:
      return [x];
    case 1:
      return [a[0] as T, x];
    case 2:
      return [a[0] as T, a[1] as T, x];
    default:
      a.push(x);
      return a;
  }
}

function withoutCounters(r: Rule): Rule {
  const { counters: _c, ...rest } = r;
  return rest;
}

/** strcmp order of chain names (byte order; equal to code-unit order for ASCII names). */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
