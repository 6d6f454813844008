/**
 * `nft -f` as a pure function: one input is one transaction, applied whole or not at all.
 *
 * The stages follow the real tool (nft 1.0.6 with the kernel's nf_tables):
 * 1. parse — syntax errors;
 * 2. evaluate — userspace checks (unknown `@set`, element types, interval conflicts); nft still
 *    evaluates after a syntax error, so both kinds are reported together;
 * 3. commit — the kernel processes every message of the batch, reports each failing one (missing
 *    table, chain or jump target, `File exists`, `Device or resource busy`, hooks a chain type may
 *    not use, statements a hook may not run, loops) and then aborts the whole batch.
 */
import type { Command, Named, RawElement } from './commands.ts';
import { describeType } from './datatypes.ts';
import { automerge, checkConflicts, keyId, LocatedError, typeElement } from './elements.ts';
import { closest, NftError, type Diagnostic, type NftErrorCode, type Span } from './errors.ts';
import { parse } from './parser.ts';
import type { Chain, DataType, Element, Family, Hook, NftObject, NftSet, NftVersion, Rule, Ruleset, SetFlag, Stmt, Table } from './types.ts';
import { DEFAULT_NFT_VERSION } from './types.ts';

export interface ApplyOptions {
  /** Name printed in error messages (default `stdin`... nft prints the path it was given). */
  readonly file?: string;
  /** nft release to imitate (default 1.0.6: `destroy` is a syntax error there). */
  readonly version?: NftVersion;
}

const ERRNO = {
  ENOENT: 'No such file or directory',
  EEXIST: 'File exists',
  EBUSY: 'Device or resource busy',
  EOPNOTSUPP: 'Operation not supported',
  ELOOP: 'Too many levels of symbolic links',
  EMLINK: 'Too many links',
  EINVAL: 'Invalid argument',
} as const;
type Errno = keyof typeof ERRNO;

class KernelError extends Error {
  constructor(
    readonly errno: Errno,
    readonly span: Span,
    /** Messages of the same command that fail first with the same errno (a rule's anonymous sets). */
    readonly before: readonly Span[] = [],
  ) {
    super(ERRNO[errno]);
  }
}

interface WChain {
  name: string;
  handle: number;
  base?: Chain['base'];
  comment?: string;
  rules: { rule: Rule; batch: number; jumps?: readonly { readonly chain: string; readonly span: Span }[] }[];
}

interface WSet {
  set: NftSet;
  /** By {@link keyId}, in insertion order. */
  elements: Map<string, { el: Element; batch: number }>;
}

interface WTable {
  family: Family;
  name: string;
  handle: number;
  comment?: string;
  dormant: boolean;
  objects: Map<string, NftObject>;
  sets: Map<string, WSet>;
  chains: Map<string, WChain>;
  /** Chains this batch adds that the kernel refuses: in nft's cache all the same (no "did you mean"), absent from the kernel. */
  refused?: Set<string>;
  nextHandle: number;
  /** Rule-add commands of this batch, with their spans, for the sticky validation failure. */
  ruleCmds: { batch: number; span: Span; anon?: readonly Span[] }[];
  touched: boolean;
}

function objKey(kind: NftObject['kind'], name: string): string {
  return `${kind}\u0000${name}`;
}

function key(family: Family, name: string): string {
  return `${family}\u0000${name}`;
}

function fromTable(t: Table): WTable {
  return {
    family: t.family,
    name: t.name,
    handle: t.handle,
    ...(t.comment !== undefined && { comment: t.comment }),
    dormant: t.dormant,
    objects: new Map((t.objects ?? []).map((o) => [objKey(o.kind, o.name), o])),
    sets: new Map(t.sets.map((s) => [s.name, { set: s, elements: new Map(s.elements.map((el) => [keyId(el.key), { el, batch: -1 }])) }])),
    chains: new Map(
      t.chains.map((c) => [
        c.name,
        { name: c.name, handle: c.handle, ...(c.base !== undefined && { base: c.base }), ...(c.comment !== undefined && { comment: c.comment }), rules: c.rules.map((rule) => ({ rule, batch: -1 })) },
      ]),
    ),
    nextHandle: t.nextHandle,
    ruleCmds: [],
    touched: false,
  };
}

function toTable(w: WTable, orig: Table | undefined): Table {
  if (!w.touched && orig !== undefined) return orig;
  return {
    family: w.family,
    name: w.name,
    handle: w.handle,
    ...(w.comment !== undefined && { comment: w.comment }),
    dormant: w.dormant,
    ...(w.objects.size > 0 && { objects: [...w.objects.values()] }),
    sets: [...w.sets.values()].map((s) => ({ ...s.set, elements: [...s.elements.values()].map((e) => e.el) })),
    chains: [...w.chains.values()].map((c) => ({
      name: c.name,
      handle: c.handle,
      ...(c.base !== undefined && { base: c.base }),
      ...(c.comment !== undefined && { comment: c.comment }),
      rules: c.rules.map((r) => r.rule),
    })),
    nextHandle: w.nextHandle,
  };
}

/** Statements a hook or chain type forbids: the kernel's expression `validate` callbacks. */
function stmtAllowed(s: Stmt, hook: Hook, type: Chain['base'] extends infer B ? (B extends { type: infer T } ? T : never) : never): boolean {
  switch (s.kind) {
    case 'nat':
      if (type !== 'nat') return false;
      if (s.nat === 'dnat' || s.nat === 'redirect') return hook === 'prerouting' || hook === 'output';
      // masquerade is postrouting only; snat also at input.
      return s.nat === 'masquerade' ? hook === 'postrouting' : hook === 'postrouting' || hook === 'input';
    case 'reject':
      return hook === 'input' || hook === 'forward' || hook === 'output' || hook === 'prerouting';
    case 'field-set':
      // `rt mtu` needs a route: not before the routing decision.
      if (s.source.kind === 'text') return hook === 'forward' || hook === 'output' || hook === 'postrouting';
      return true;
    case 'match':
      if (s.left.kind === 'fib' && s.left.flags.includes('iif')) return hook === 'prerouting' || hook === 'input' || hook === 'forward';
      if (s.left.kind === 'fib' && s.left.flags.includes('oif')) return hook === 'output' || hook === 'postrouting' || hook === 'forward';
      return true;
    case 'verdict':
    case 'vmap':
    case 'counter':
    case 'log':
    case 'limit':
    case 'meta-set':
    case 'ct-set':
    case 'set-update':
    case 'notrack':
    case 'quota':
    case 'ct-count':
    case 'synproxy':
    case 'objref':
      return true;
  }
}

/** Chains a rule can continue into: jump/goto verdicts, anonymous vmaps and named verdict maps. */
function successors(rule: Rule, t: WTable): { chain: string; batch: number }[] {
  const out: { chain: string; batch: number }[] = [];
  for (const s of rule.stmts) {
    if (s.kind === 'verdict' && (s.verdict.kind === 'jump' || s.verdict.kind === 'goto')) out.push({ chain: s.verdict.chain, batch: -1 });
    if (s.kind === 'vmap') {
      if (s.lookup.map.kind === 'anon') {
        for (const e of s.lookup.map.elements) {
          const v = e.data?.[0];
          if (v?.type === 'verdict' && (v.v.kind === 'jump' || v.v.kind === 'goto')) out.push({ chain: v.v.chain, batch: -1 });
        }
      } else {
        const set = t.sets.get(s.lookup.map.name);
        for (const { el, batch } of set?.elements.values() ?? []) {
          const v = el.data?.[0];
          if (v?.type === 'verdict' && (v.v.kind === 'jump' || v.v.kind === 'goto')) out.push({ chain: v.v.chain, batch });
        }
      }
    }
  }
  return out;
}

/**
 * The kernel's table validation, from every base chain: the batch index from which it fails
 * (the latest message on the first failing path), or undefined when it passes.
 */
function validate(t: WTable): { batch: number; errno: Errno; span?: Span } | undefined {
  let worst: { batch: number; errno: Errno; span?: Span } | undefined;
  const note = (batch: number, errno: Errno, span?: Span): void => {
    if (worst === undefined || batch < worst.batch) worst = { batch, errno, ...(span !== undefined && { span }) };
  };
  // Every base chain walks the same rules: their successors are worked out once.
  const succ = new Map<Rule, { chain: string; batch: number }[]>();
  const successorsOf = (rule: Rule): { chain: string; batch: number }[] => {
    let out = succ.get(rule);
    if (out === undefined) {
      out = successors(rule, t);
      succ.set(rule, out);
    }
    return out;
  };
  for (const base of t.chains.values()) {
    if (base.base === undefined) continue;
    const { hook, type } = base.base;
    const visited = new Set<string>();
    const onPath = new Set<string>();
    const walk = (c: WChain, pathBatch: number, depth: number): void => {
      if (depth > 16) {
        note(pathBatch, 'ELOOP');
        return;
      }
      onPath.add(c.name);
      for (const { rule, batch, jumps } of c.rules) {
        const b = Math.max(pathBatch, batch);
        for (const s of rule.stmts) if (!stmtAllowed(s, hook, type)) note(b, 'EOPNOTSUPP');
        for (const next of successorsOf(rule)) {
          const nb = Math.max(b, next.batch);
          if (onPath.has(next.chain)) {
            // The kernel names the jump that closes the loop.
            note(nb, 'EMLINK', nb === batch ? jumps?.find((j) => j.chain === next.chain)?.span : undefined);
            continue;
          }
          if (visited.has(next.chain)) continue;
          const nc = t.chains.get(next.chain);
          if (nc === undefined) continue;
          visited.add(next.chain);
          walk(nc, nb, depth + 1);
        }
      }
      onPath.delete(c.name);
    };
    walk(base, -1, 0);
  }
  return worst;
}

const NAT_HOOKS: readonly Hook[] = ['prerouting', 'input', 'output', 'postrouting'];

/** The result of {@link nftApply}: the new ruleset, or the error nft prints (and nothing applied). */
export type ApplyResult = { readonly ok: true; readonly ruleset: Ruleset } | { readonly ok: false; readonly error: NftError };

/** Applies an `nft -f` input to `ruleset`; throws {@link NftError} when the real tool would fail. */
export function nftApply(ruleset: Ruleset, text: string, opts: ApplyOptions = {}): Ruleset {
  const r = tryNftApply(ruleset, text, opts);
  if (!r.ok) throw r.error;
  return r.ruleset;
}

/** {@link nftApply} without throwing. */
export function tryNftApply(ruleset: Ruleset, text: string, opts: ApplyOptions = {}): ApplyResult {
  const file = opts.file ?? '/dev/stdin';
  const parsed = parse(text, { version: opts.version ?? DEFAULT_NFT_VERSION });
  const diags: Diagnostic[] = [...parsed.diagnostics];
  const tx = new Transaction(ruleset);
  const evalDiags: Diagnostic[] = [];
  // The kernel answers the batch's messages in order: its errors come in batch order.
  const kernelDiags: (Diagnostic & { batch: number })[] = [];
  parsed.commands.forEach((cmd, i) => {
    try {
      tx.apply(cmd, i);
    } catch (e) {
      if (e instanceof LocatedError) {
        const code: NftErrorCode = e.code;
        evalDiags.push({ code, span: e.span, message: e.message, ...(e.related !== undefined && { related: e.related }) });
      } else if (e instanceof KernelError) {
        for (const span of e.before) kernelDiags.push({ code: 'kernel', span, message: `Could not process rule: ${e.message}`, batch: i });
        kernelDiags.push({ code: 'kernel', span: e.span, message: `Could not process rule: ${e.message}`, batch: i });
      } else throw e;
    }
  });
  diags.push(...evalDiags);
  if (diags.length === 0) {
    kernelDiags.push(...tx.validateAll());
    kernelDiags.sort((a, b) => a.batch - b.batch);
    diags.push(...kernelDiags.map(({ batch: _batch, ...d }) => d));
  }
  if (diags.length > 0) return { ok: false, error: new NftError(file, text, diags.slice(0, 10), parsed.lineMap) };
  return { ok: true, ruleset: tx.result() };
}

/** Set key types a match's expression must have exactly (see {@link Transaction.checkSetTypes}). */
const DISTINCT_TYPES: ReadonlySet<DataType> = new Set<DataType>(['ipv4_addr', 'inet_service', 'inet_proto', 'ifname', 'mark']);

class Transaction {
  private readonly tables = new Map<string, WTable>();
  private readonly order: string[] = [];
  private readonly orig = new Map<string, Table>();
  private nextTableHandle: number;
  /** Kernel errors found at commit-time validation: per table, the failing batch index. */

  constructor(rs: Ruleset) {
    let h = 0;
    for (const t of rs.tables) {
      const k = key(t.family, t.name);
      this.orig.set(k, t);
      this.order.push(k);
      h = Math.max(h, t.handle);
    }
    this.nextTableHandle = h + 1;
  }

  /** The last table looked up: commands come in long runs on one table. */
  private last: { family: Family; name: string; w: WTable } | undefined;

  private table(family: Family, name: string): WTable | undefined {
    const l = this.last;
    if (l !== undefined && l.family === family && l.name === name) return l.w;
    const w = this.lookupTable(family, name);
    this.last = w === undefined ? undefined : { family, name, w };
    return w;
  }

  private lookupTable(family: Family, name: string): WTable | undefined {
    const k = key(family, name);
    let w = this.tables.get(k);
    if (w === undefined) {
      const t = this.orig.get(k);
      if (t === undefined) return undefined;
      w = fromTable(t);
      this.tables.set(k, w);
    }
    return w;
  }

  /** A table nft looks up in its cache before sending the batch: a missing one is a userspace error. */
  private needCached(family: Family, n: Named): WTable {
    if (this.table(family, n.name) === undefined) throw new LocatedError(this.tableHint(n.name) ?? ERRNO.ENOENT, n.span);
    return this.need(family, n);
  }

  /** Every table nft's cache holds now (the ruleset's and this batch's), in listing order. */
  private allTables(): WTable[] {
    const out: WTable[] = [];
    for (const k of this.order) {
      const [family, name] = k.split('\u0000') as [Family, string];
      const w = this.lookupTable(family, name);
      if (w !== undefined) out.push(w);
    }
    return out;
  }

  /** nft's "did you mean" for a missing table (table_lookup_fuzzy), as the whole message. */
  private tableHint(name: string): string | undefined {
    const t = closest(name, this.allTables().map((w) => [w.name, w] as const));
    return t === undefined ? undefined : `${ERRNO.ENOENT}; did you mean table \u2018${t.name}\u2019 in family ${t.family}?`;
  }

  /** nft's "did you mean" for a missing chain (chain_lookup_fuzzy, every table). */
  private chainHint(name: string): string | undefined {
    const hit = closest(name, this.allTables().flatMap((w) => [...w.chains.keys()].map((c) => [c, { c, w }] as const)));
    return hit === undefined ? undefined : `${ERRNO.ENOENT}; did you mean chain \u2018${hit.c}\u2019 in table ${hit.w.family} \u2018${hit.w.name}\u2019?`;
  }

  /** nft's "did you mean" for a missing set or map (set_lookup_fuzzy, every table). */
  private setHint(name: string): string | undefined {
    const hit = closest(name, this.allTables().flatMap((w) => [...w.sets.values()].map((s) => [s.set.name, { s, w }] as const)));
    return hit === undefined ? undefined : `${ERRNO.ENOENT}; did you mean ${hit.s.set.isMap ? 'map' : 'set'} \u2018${hit.s.set.name}\u2019 in table ${hit.w.family} \u2018${hit.w.name}\u2019?`;
  }

  private need(family: Family, n: Named): WTable {
    const t = this.table(family, n.name);
    if (t === undefined) throw new KernelError('ENOENT', n.span);
    t.touched = true;
    return t;
  }

  result(): Ruleset {
    const tables: Table[] = [];
    for (const k of this.order) {
      const w = this.tables.get(k);
      const o = this.orig.get(k);
      if (w === undefined) {
        if (o !== undefined) tables.push(o);
        continue;
      }
      tables.push(toTable(w, o));
    }
    return { tables };
  }

  /** Set by a failure after which the kernel reports no validation errors. */
  skipValidation = false;

  validateAll(): (Diagnostic & { batch: number })[] {
    const out: (Diagnostic & { batch: number })[] = [];
    if (this.skipValidation) return out;
    for (const w of this.tables.values()) {
      if (!w.touched || w.ruleCmds.length === 0) continue;
      const v = validate(w);
      if (v === undefined) continue;
      for (const r of w.ruleCmds) {
        if (r.batch < v.batch) continue;
        // The failing rule is named (or its jump, for a loop); a later one fails at its anonymous
        // sets too, which are sent before it.
        const message = `Could not process rule: ${ERRNO[v.errno]}`;
        if (r.batch === v.batch) {
          out.push({ code: 'kernel', span: v.span ?? r.span, message, batch: r.batch });
          continue;
        }
        for (const a of r.anon ?? []) out.push({ code: 'kernel', span: a, message, batch: r.batch });
        out.push({ code: 'kernel', span: r.span, message, batch: r.batch });
      }
    }
    return out;
  }

  apply(cmd: Command, batch: number): void {
    switch (cmd.kind) {
      case 'table': {
        const existing = this.table(cmd.family, cmd.name.name);
        if (existing !== undefined) {
          if (cmd.op === 'create') throw new KernelError('EEXIST', cmd.name.span);
          if (cmd.comment !== undefined) existing.comment = cmd.comment;
          existing.touched = true;
          return;
        }
        const k = key(cmd.family, cmd.name.name);
        const w: WTable = {
          family: cmd.family,
          name: cmd.name.name,
          handle: this.nextTableHandle++,
          ...(cmd.comment !== undefined && { comment: cmd.comment }),
          dormant: cmd.dormant === true,
          objects: new Map(),
          sets: new Map(),
          chains: new Map(),
          nextHandle: 1,
          ruleCmds: [],
          touched: true,
        };
        this.tables.set(k, w);
        this.last = undefined;
        this.orig.delete(k);
        if (!this.order.includes(k)) this.order.push(k);
        else {
          // Recreated after a delete in this batch: it moves to the end of the list.
          this.order.splice(this.order.indexOf(k), 1);
          this.order.push(k);
        }
        return;
      }
      case 'chain': {
        const t = this.needCached(cmd.family, cmd.table);
        const existing = t.chains.get(cmd.name.name);
        if (cmd.base !== undefined) {
          const ok = cmd.base.type === 'filter' || (cmd.base.type === 'nat' && NAT_HOOKS.includes(cmd.base.hook)) || (cmd.base.type === 'route' && cmd.base.hook === 'output');
          // nat chains must run after conntrack (priority above -200).
          if (!ok || (cmd.base.type === 'nat' && cmd.base.priority <= -200)) {
            if (existing === undefined) (t.refused ??= new Set()).add(cmd.name.name);
            throw new KernelError('EOPNOTSUPP', cmd.errSpan ?? cmd.name.span);
          }
        }
        // A policy belongs to base chains: on a regular one the kernel refuses it.
        if (cmd.base === undefined && cmd.policySpan !== undefined && existing?.base === undefined) {
          if (existing === undefined) (t.refused ??= new Set()).add(cmd.name.name);
          throw new KernelError('EOPNOTSUPP', cmd.policySpan);
        }
        if (existing !== undefined) {
          if (cmd.op === 'create') throw new KernelError('EEXIST', cmd.name.span);
          if (cmd.base !== undefined && existing.base !== undefined) {
            const policy = cmd.base.policy ?? cmd.policy;
            if (policy !== undefined) existing.base = { ...existing.base, policy };
          } else if (cmd.base !== undefined) throw new KernelError('EEXIST', cmd.name.span);
          if (cmd.comment !== undefined) existing.comment = cmd.comment;
          return;
        }
        const base = cmd.base === undefined ? undefined : { type: cmd.base.type, hook: cmd.base.hook, priority: cmd.base.priority, policy: cmd.base.policy ?? cmd.policy ?? 'accept' };
        t.chains.set(cmd.name.name, {
          name: cmd.name.name,
          handle: t.nextHandle++,
          ...(base !== undefined && { base }),
          ...(cmd.comment !== undefined && { comment: cmd.comment }),
          rules: [],
        });
        return;
      }
      case 'rule':
        return this.rule(cmd, batch);
      case 'set':
        return this.set(cmd, batch);
      case 'object': {
        const t = this.need(cmd.family, cmd.table);
        const k = objKey(cmd.obj.kind, cmd.name.name);
        if (t.objects.has(k)) {
          if (cmd.op === 'create') throw new KernelError('EEXIST', cmd.name.span);
          return;
        }
        t.objects.set(k, { ...cmd.obj, handle: t.nextHandle++ });
        return;
      }
      case 'element':
        return this.element(cmd, batch);
      case 'delete':
        return this.del(cmd);
      case 'flush':
        return this.flush(cmd);
    }
  }

  private rule(cmd: Extract<Command, { kind: 'rule' }>, batch: number): void {
    // Userspace: every @set must exist (in the ruleset or earlier in this batch); looking one up
    // in a missing table fails before the rest of the rule is evaluated.
    const t0 = this.table(cmd.family, cmd.table.name);
    if (t0 === undefined && cmd.body.setRefs.length > 0) throw new LocatedError(ERRNO.ENOENT, cmd.table.span);
    const ee = cmd.body.evalError;
    if (ee !== undefined) throw new LocatedError(ee.message, ee.span, ee.related);
    for (const ref of cmd.body.setRefs) {
      if (t0?.sets.get(ref.name) === undefined) {
        throw new LocatedError(this.setHint(ref.name) ?? ERRNO.ENOENT, { line: ref.span.line, col: ref.span.col - 1, endCol: ref.span.endCol });
      }
    }
    this.checkSetTypes(cmd, t0);
    // Without the table, the rule's anonymous sets (sent before it) fail as well.
    if (t0 === undefined) {
      const hint = this.tableHint(cmd.table.name);
      if (hint !== undefined) throw new LocatedError(hint, cmd.table.span);
      throw new KernelError('ENOENT', cmd.table.span, (cmd.body.anonSpans ?? []).flatMap((a) => [cmd.table.span, a]));
    }
    const t = this.need(cmd.family, cmd.table);
    const chain = t.chains.get(cmd.chain.name);
    if (chain === undefined) {
      if (t.refused?.has(cmd.chain.name) === true) throw new KernelError('ENOENT', cmd.chain.span);
      // With a near name in its cache nft fails before sending the batch, and says which.
      const hint = this.chainHint(cmd.chain.name);
      if (hint !== undefined) throw new LocatedError(hint, cmd.chain.span);
      throw new KernelError('ENOENT', cmd.chain.span);
    }
    for (const target of cmd.body.targets) {
      if (!t.chains.has(target.name)) {
        if (t.refused?.has(target.name) === true) throw new KernelError('ENOENT', target.span);
        const hint = this.chainHint(target.name);
        if (hint !== undefined) throw new LocatedError(hint, target.span);
        throw new KernelError('ENOENT', target.span);
      }
    }
    // A jump or goto statement to a base chain: the kernel refuses the verdict (at its chain name).
    for (const j of cmd.body.jumps) {
      if (t.chains.get(j.chain)?.base === undefined) continue;
      const target = cmd.body.targets.find((n) => n.name === j.chain && n.span.line === j.span.line && n.span.endCol === j.span.endCol);
      if (target !== undefined) throw new KernelError('EOPNOTSUPP', target.span);
    }
    for (const ref of cmd.body.objRefs ?? []) {
      if (!t.objects.has(objKey(ref.type, ref.name))) throw new KernelError('ENOENT', ref.span);
    }
    let updates = 0;
    for (const st of cmd.body.stmts) {
      if (st.kind !== 'set-update') continue;
      const updateSpan = cmd.body.updateSpans?.[updates++] ?? cmd.span;
      const ws = t.sets.get(st.set);
      if (ws === undefined) continue;
      // A timeout on the element needs a set with timeouts.
      if (st.timeoutMs !== undefined && !ws.set.flags.includes('timeout') && ws.set.timeoutMs === undefined) throw new KernelError('EOPNOTSUPP', updateSpan);
      // nft gives the set its default size; a set created in this same batch also becomes dynamic.
      const committed = this.orig.get(key(cmd.family, cmd.table.name))?.sets.some((x) => x.name === st.set && x.handle === ws.set.handle) === true;
      const flags: readonly SetFlag[] = committed || ws.set.flags.includes('dynamic') ? ws.set.flags : [...ws.set.flags, 'dynamic'];
      ws.set = { ...ws.set, size: ws.set.size ?? 65535, flags };
    }
    const rule: Rule = { handle: t.nextHandle++, stmts: cmd.body.stmts, ...(cmd.body.comment !== undefined && { comment: cmd.body.comment }) };
    const entry = { rule, batch, jumps: cmd.body.jumps };
    const pos = cmd.position;
    if (pos === undefined) {
      if (cmd.op === 'insert') chain.rules.unshift(entry);
      else chain.rules.push(entry);
    } else if (pos.kind === 'handle') {
      const i = chain.rules.findIndex((r) => r.rule.handle === pos.n);
      if (i < 0) throw new KernelError('ENOENT', pos.span);
      if (cmd.op === 'replace') chain.rules[i] = { rule: { ...rule, handle: pos.n }, batch };
      else chain.rules.splice(cmd.op === 'insert' ? i : i + 1, 0, entry);
    } else if (pos.kind === 'position') {
      const i = chain.rules.findIndex((r) => r.rule.handle === pos.n);
      if (i < 0) throw new KernelError('ENOENT', pos.span);
      chain.rules.splice(cmd.op === 'insert' ? i : i + 1, 0, entry);
    } else {
      if (pos.n > chain.rules.length) throw new KernelError('ENOENT', pos.span);
      chain.rules.splice(cmd.op === 'insert' ? pos.n : pos.n + 1, 0, entry);
    }
    const anon = cmd.body.anonSpans;
    t.ruleCmds.push({ batch, span: cmd.span, ...(anon !== undefined && { anon }) });
  }

  /** Lookups in a named set or map must match its key type (and a vmap needs a verdict map). */
  private checkSetTypes(cmd: Extract<Command, { kind: 'rule' }>, t: WTable | undefined): void {
    if (t === undefined) return;
    for (const m of cmd.body.setMatches ?? []) {
      const set = t.sets.get(m.name)?.set;
      const want = set?.keyType.length === 1 ? set.keyType[0] : undefined;
      // Types that never convert into each other (nft's datatype check; integer subtypes are left alone).
      if (want !== undefined && want !== m.type && DISTINCT_TYPES.has(want) && DISTINCT_TYPES.has(m.type)) {
        throw new LocatedError(`datatype mismatch, expected ${describeType(m.type)}, expression has type ${describeType(want)}`, m.ref, m.left);
      }
    }
    for (const s of cmd.body.stmts) {
      if (s.kind === 'vmap' && s.lookup.map.kind === 'ref') {
        const set = t.sets.get(s.lookup.map.name)?.set;
        const ref = cmd.body.setRefs.find((r) => r.name === (s.lookup.map as { name: string }).name);
        if (set !== undefined && ref !== undefined && (!set.isMap || set.dataType?.[0] !== 'verdict')) {
          throw new LocatedError(`Expression is not a map`, { line: ref.span.line, col: ref.span.col - 1, endCol: ref.span.endCol });
        }
      }
    }
  }

  private set(cmd: Extract<Command, { kind: 'set' }>, batch: number): void {
    const t = this.table(cmd.family, cmd.table.name);
    const d = cmd.decl;
    if (d.keyType === undefined) throw new LocatedError('set definition does not specify key', cmd.name.span);
    // With auto-merge, overlapping elements merge instead of conflicting. A set whose elements
    // fail still goes into nft's cache: later commands find it.
    const check = (): void => {
      if (t !== undefined && d.elements !== undefined && d.keyType !== undefined) this.typeAll(d.elements, { keyType: d.keyType, ...(d.dataType !== undefined && { dataType: d.dataType }) }, d.flags.includes('interval'), [], d.autoMerge !== true);
    };
    const tt = this.needCached(cmd.family, cmd.table);
    const existing = tt.sets.get(cmd.name.name);
    if (existing !== undefined) {
      check();
      if (cmd.op === 'create') throw new KernelError('EEXIST', cmd.name.span);
      // The kernel takes an add of an existing set only when it declares the same set: key and
      // data types, flags (a timeout implies its flag) and element counters; the comment, size,
      // policy and timeout value may differ.
      const e = existing.set;
      const flags = d.timeoutMs !== undefined && !d.flags.includes('timeout') ? [...d.flags, 'timeout'] : d.flags;
      const same = (a: readonly string[] | undefined, b: readonly string[] | undefined): boolean => (a ?? []).length === (b ?? []).length && (a ?? []).every((x, i) => x === (b ?? [])[i]);
      const sameFlags = flags.length === e.flags.length && flags.every((f) => (e.flags as readonly string[]).includes(f));
      if (!same(e.keyType, d.keyType) || !same(e.dataType, d.dataType) || !sameFlags || e.counter !== d.counter) throw new KernelError('EEXIST', cmd.name.span);
      if (d.elements !== undefined) this.addElements(existing, d.elements, batch, false);
      return;
    }
    const dynamicSize = d.flags.includes('dynamic') && d.size === undefined && d.keyTypeof !== undefined ? 65535 : d.size;
    const set: NftSet = {
      name: cmd.name.name,
      handle: tt.nextHandle++,
      isMap: d.isMap,
      keyType: d.keyType,
      ...(d.keyTypeof !== undefined && { keyTypeof: d.keyTypeof }),
      ...(d.dataType !== undefined && { dataType: d.dataType }),
      ...(d.dataTypeof !== undefined && { dataTypeof: d.dataTypeof }),
      // A set timeout implies the timeout flag (the kernel sets it).
      flags: d.timeoutMs !== undefined && !d.flags.includes('timeout') ? [...d.flags, 'timeout'] : d.flags,
      ...(d.autoMerge === true && { autoMerge: true }),
      ...(d.timeoutMs !== undefined && { timeoutMs: d.timeoutMs }),
      ...(d.gcIntervalMs !== undefined && { gcIntervalMs: d.gcIntervalMs }),
      ...(dynamicSize !== undefined && { size: dynamicSize }),
      counter: d.counter,
      ...(d.comment !== undefined && { comment: d.comment }),
      ...(d.policy !== undefined && { policy: d.policy }),
      elements: [],
    };
    const w: WSet = { set, elements: new Map() };
    tt.sets.set(cmd.name.name, w);
    check();
    if (d.elements !== undefined) this.addElements(w, d.elements, batch, false);
  }

  private typeAll(raws: readonly RawElement[], typing: Parameters<typeof typeElement>[0], interval: boolean, existing: readonly Element[], checkOverlap = true): Element[] {
    const typed = raws.map((r) => {
      const el = typeElement(typing, r);
      if (!interval && el.key.some((k) => k.kind === 'range')) {
        const kind = r.key.some((k) => k.kind === 'prefix') ? 'prefix' : 'range';
        throw new LocatedError(`You must add 'flags interval' to your set declaration if you want to add ${kind} elements`, r.span);
      }
      return el;
    });
    if (interval && checkOverlap) checkConflicts(existing, typed.map((el, i) => ({ el, span: (raws[i] as RawElement).span })));
    return typed;
  }

  private addElements(w: WSet, raws: readonly RawElement[], batch: number, exclusive: boolean, spans?: readonly Span[]): void {
    const s = w.set;
    if (s.autoMerge === true && s.flags.includes('interval') && s.keyType.length === 1) {
      const typedM = raws.map((r) => typeElement({ keyType: s.keyType }, r));
      const merged = automerge([...[...w.elements.values()].map((e) => e.el), ...typedM], s.keyType[0] as DataType);
      w.elements = new Map(merged.map((el) => [keyId(el.key), { el, batch }]));
      return;
    }
    const typed = this.typeAll(raws, { keyType: s.keyType, ...(s.dataType !== undefined && { dataType: s.dataType }) }, s.flags.includes('interval'), s.flags.includes('interval') ? [...w.elements.values()].map((e) => e.el) : []);
    // One command listing a key twice with other data: nft finds it before sending the batch.
    const inCommand = new Map<string, Element>();
    typed.forEach((el, i) => {
      const id = keyId(el.key);
      const before = inCommand.get(id);
      if (before !== undefined && JSON.stringify(before.data) !== JSON.stringify(el.data)) {
        const raw = raws[i] as RawElement;
        // Seen on nft 1.0.6 / Linux 6.18: this failure also keeps the table validation from reporting.
        this.skipValidation = true;
        throw new KernelError('EEXIST', spans?.[i] ?? raw.keySpan ?? raw.span);
      }
      inCommand.set(id, el);
    });
    typed.forEach((el, i) => {
      const withCounter = s.counter && el.counter === undefined ? { ...el, counter: { packets: 0, bytes: 0 } } : el;
      const id = keyId(el.key);
      const at = w.elements.get(id);
      if (at !== undefined && at.batch === batch && !exclusive && JSON.stringify(at.el.data) === JSON.stringify(el.data)) return;
      if (at !== undefined) {
        const raw = raws[i] as RawElement;
        // The kernel refuses an existing key under `create`, and under `add` when the data differs.
        if (exclusive || JSON.stringify(at.el.data) !== JSON.stringify(el.data)) throw new KernelError('EEXIST', spans?.[i] ?? raw.keySpan ?? raw.span);
        return;
      }
      w.elements.set(id, { el: withCounter, batch });
    });
    w.set = { ...s };
  }

  private element(cmd: Extract<Command, { kind: 'element' }>, batch: number): void {
    const t0 = this.table(cmd.family, cmd.table.name);
    if (t0 === undefined) throw new LocatedError(this.tableHint(cmd.table.name) ?? ERRNO.ENOENT, cmd.table.span);
    const w0 = t0.sets.get(cmd.set.name);
    if (w0 === undefined) throw new LocatedError(this.setHint(cmd.set.name) ?? ERRNO.ENOENT, cmd.set.span);
    const t = this.need(cmd.family, cmd.table);
    const w = t.sets.get(cmd.set.name) as WSet;
    if (cmd.op === 'add' || cmd.op === 'create') {
      for (const r of cmd.elements) {
        if (r.data?.kind === 'verdict' && r.data.chain !== undefined && !t.chains.has(r.data.chain.name)) throw new KernelError('ENOENT', r.data.chain.span);
      }
      this.addElements(w, cmd.elements, batch, cmd.op === 'create');
      return;
    }
    const s = w.set;
    for (const r of cmd.elements) {
      const el = typeElement({ keyType: s.keyType }, { key: r.key, span: r.span });
      const id = keyId(el.key);
      if (!w.elements.has(id)) {
        if (cmd.op !== 'delete') continue;
        // nft keeps interval sets' elements in its cache and finds the missing one itself.
        if (s.flags.includes('interval')) throw new LocatedError('element does not exist', r.keySpan ?? r.span);
        throw new KernelError('ENOENT', r.keySpan ?? r.span);
      }
      w.elements.delete(id);
    }
  }

  private del(cmd: Extract<Command, { kind: 'delete' }>): void {
    const destroy = cmd.op === 'destroy';
    const t = this.table(cmd.family, cmd.table.name);
    if (t === undefined) {
      if (destroy) return;
      throw new KernelError('ENOENT', cmd.table.span);
    }
    t.touched = true;
    switch (cmd.what) {
      case 'table':
        this.tables.delete(key(cmd.family, cmd.table.name));
        this.last = undefined;
        this.orig.delete(key(cmd.family, cmd.table.name));
        this.order.splice(this.order.indexOf(key(cmd.family, cmd.table.name)), 1);
        return;
      case 'chain': {
        const name = cmd.name as Named;
        const c = t.chains.get(name.name);
        if (c === undefined) {
          if (destroy) return;
          throw new KernelError('ENOENT', name.span);
        }
        // The kernel deletes the chain's rules with it; only a jump, goto or verdict map to it keeps it.
        if (this.referenced(t, name.name)) throw new KernelError('EBUSY', name.span);
        t.chains.delete(name.name);
        return;
      }
      case 'set':
      case 'map': {
        const name = cmd.name as Named;
        if (!t.sets.has(name.name)) {
          if (destroy) return;
          throw new KernelError('ENOENT', name.span);
        }
        const used = [...t.chains.values()].some((c) => c.rules.some((r) => JSON.stringify(r.rule.stmts).includes(`"name":${JSON.stringify(name.name)}`) || JSON.stringify(r.rule.stmts).includes(`"set":${JSON.stringify(name.name)}`)));
        if (used) throw new KernelError('EBUSY', name.span);
        t.sets.delete(name.name);
        return;
      }
      case 'counter':
      case 'quota':
      case 'limit':
      case 'ct helper': {
        const name = cmd.name as Named;
        const k = objKey(cmd.what, name.name);
        if (!t.objects.has(k)) {
          if (destroy) return;
          throw new KernelError('ENOENT', name.span);
        }
        const what = cmd.what;
        const used = [...t.chains.values()].some((c) => c.rules.some((r) => r.rule.stmts.some((x) => x.kind === 'objref' && x.type === what && x.name === name.name)));
        if (used) throw new KernelError('EBUSY', name.span);
        t.objects.delete(k);
        return;
      }
      case 'rule': {
        const name = cmd.name as Named;
        const c = t.chains.get(name.name);
        if (c === undefined) {
          if (destroy) return;
          throw new KernelError('ENOENT', name.span);
        }
        const h = cmd.handle as { n: number; span: Span };
        const i = c.rules.findIndex((r) => r.rule.handle === h.n);
        if (i < 0) {
          if (destroy) return;
          throw new KernelError('ENOENT', h.span);
        }
        c.rules.splice(i, 1);
        return;
      }
    }
  }

  private referenced(t: WTable, chain: string): boolean {
    for (const c of t.chains.values()) for (const r of c.rules) if (successors(r.rule, t).some((s) => s.chain === chain)) return true;
    for (const s of t.sets.values()) {
      for (const { el } of s.elements.values()) {
        const v = el.data?.[0];
        if (v?.type === 'verdict' && (v.v.kind === 'jump' || v.v.kind === 'goto') && v.v.chain === chain) return true;
      }
    }
    return false;
  }

  private flush(cmd: Extract<Command, { kind: 'flush' }>): void {
    if (cmd.what === 'ruleset') {
      for (const k of [...this.order]) {
        this.tables.delete(k);
        this.last = undefined;
        this.orig.delete(k);
      }
      this.order.length = 0;
      return;
    }
    const t = cmd.what === 'set' || cmd.what === 'map' ? this.needCached(cmd.family, cmd.table) : this.need(cmd.family, cmd.table);
    if (cmd.what === 'table') {
      for (const c of t.chains.values()) c.rules = [];
      return;
    }
    if (cmd.what === 'chain') {
      const c = t.chains.get(cmd.name.name);
      if (c === undefined) {
        const hint = this.chainHint(cmd.name.name);
        if (hint !== undefined) throw new LocatedError(hint, cmd.name.span);
        throw new KernelError('ENOENT', cmd.name.span);
      }
      c.rules = [];
      return;
    }
    const s = t.sets.get(cmd.name.name);
    if (s === undefined) throw new LocatedError(ERRNO.ENOENT, cmd.name.span);
    s.elements = new Map();
  }
}

export { automerge };
