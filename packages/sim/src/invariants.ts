/**
 * Invariants: plain functions of a read-only {@link WorldView}, checked after every step. A
 * violation stops the run with the step, the time, a message and the state that shows it.
 *
 * Some properties only hold once things settle (a controller needs a few steps to follow a Pod
 * change): {@link settled} turns a list of problems into an invariant that fires only when one
 * problem persists longer than the settle time. Others must hold at every instant (a masquerade
 * chain must never be empty once programmed): those are checked strictly, so they catch
 * transient windows, not just end states.
 */
import type { Rule, Ruleset, TableName } from '@netsim/netfilter';
import type { Pod } from '@netsim/kube';
import type { InvariantResult } from './engine.ts';
import type { JsonValue } from './json.ts';
import { describeDnat, dnatRules, isPodLive, podKey, ruleIdentity, type DnatRule, type WorldView } from './view.ts';
import { shortUid } from './render.ts';

/**
 * A named check over the world view.
 *
 * @example
 * ```ts
 * const fewRules: Invariant = {
 *   name: 'at most 100 nat rules per node',
 *   check: (view) => view.nodes.some((n) => count(view.ruleset(n.name)) > 100) ? 'too many rules' : undefined,
 * };
 * ```
 */
export interface Invariant {
  readonly name: string;
  check(view: WorldView): InvariantResult;
}

/** An invariant, or a factory for one with per-run memory (called once per run). */
export type InvariantSource = Invariant | (() => Invariant);

/** Resolve a source into a fresh invariant for one run. */
export function instantiate(src: InvariantSource): Invariant {
  return typeof src === 'function' ? src() : src;
}

/** One thing wrong now; `key` identifies it across steps (the same stale rule keeps its key). */
export interface Problem {
  readonly key: string;
  /** The node it is on: only a disruption of that node (or of every node) excuses it. Absent: any disruption does. */
  readonly node?: string;
  readonly message: string;
  readonly state?: JsonValue;
}

/**
 * An invariant that fires when a problem has persisted for longer than `settleMs` (or the
 * view's default settle time), counting from the problem's appearance or the last disruption,
 * whichever is later (disruptions: scenario actions, faults until they end, agent starts, and
 * informer relists, when a controller blinded by a fault learns the truth).
 */
export function settled(
  name: string,
  problems: (view: WorldView) => readonly Problem[],
  opts: {
    readonly settleMs?: number;
    /**
     * The problems depend only on the Pods, the Services and the nodes' rules (iptables and nftables): recompute them
     * only when one of those changed (all are immutable, so identity tells). Most steps change none.
     */
    readonly dependsOnPodsAndRulesOnly?: boolean;
  } = {},
): () => Invariant {
  return () => {
    const since = new Map<string, number>();
    let memoPods: unknown = undefined;
    let memoServices: unknown = undefined;
    let memoRules: unknown[] = [];
    let memo: readonly Problem[] = [];
    // A method, not a named arrow: some TypeScript runners (tsx's keepNames) pay a defineProperty
    // for every named arrow, here once per invariant and run.
    const h = {
      compute(this: void, view: WorldView): readonly Problem[] {
        if (opts.dependsOnPodsAndRulesOnly !== true) return problems(view);
        const pods = view.pods();
        const nodes = view.nodes;
        // The iptables and the nftables rulesets of each node, in turn.
        const services = view.services();
        let same = pods === memoPods && services === memoServices && nodes.length * 2 === memoRules.length;
        for (let i = 0; same && i < nodes.length; i++) {
          const name = (nodes[i] as { readonly name: string }).name;
          same = view.ruleset(name) === memoRules[2 * i] && view.nftRuleset?.(name) === memoRules[2 * i + 1];
        }
        if (same) return memo;
        memoPods = pods;
        memoServices = services;
        memoRules = nodes.flatMap((n) => [view.ruleset(n.name), view.nftRuleset?.(n.name)]);
        memo = problems(view);
        return memo;
      },
    };
    const compute = h.compute;
    /** The problem list the last check saw: when the memo hands it back unchanged, the keys in `since` are its keys. */
    let lastChecked: readonly Problem[] | undefined;
    return {
      name,
      check(view) {
        const settleMs = opts.settleMs ?? view.settleMs;
        const now = view.nowMs;
        const current = compute(view);
        if (current.length === 0) {
          if (since.size > 0) since.clear();
          lastChecked = current;
          return undefined;
        }
        // The same list as at the last check has the same keys, all already in `since` (and
        // nothing else): skip the bookkeeping of appearances and disappearances.
        const same = opts.dependsOnPodsAndRulesOnly === true && current === lastChecked;
        lastChecked = current;
        const seen = same ? undefined : new Set<string>();
        let worst: { readonly p: Problem; readonly ageMs: number } | undefined;
        // A problem counts from when it appeared, or from the last disruption if later: a
        // controller is not blamed while a fault keeps it blind, only after it has had the
        // settle time to converge.
        const anywhere = view.lastDisruptionMs;
        for (const p of current) {
          const calm = p.node === undefined ? anywhere : view.calmSince(p.node);
          seen?.add(p.key);
          let s = since.get(p.key);
          if (s === undefined) {
            s = now;
            since.set(p.key, s);
          }
          const from = Math.max(s, calm);
          const ageMs = now - from;
          if ((ageMs > settleMs || settleMs === 0) && worst === undefined) worst = { p, ageMs };
          else if (settleMs > 0) view.recheckAt(from + settleMs + 1);
        }
        if (seen !== undefined && since.size > seen.size) for (const k of [...since.keys()]) if (!seen.has(k)) since.delete(k);
        if (worst === undefined) return undefined;
        return {
          message: settleMs === 0 ? worst.p.message : `${worst.p.message} (for ${worst.ageMs}ms, longer than the ${settleMs}ms settle time)`,
          ...(worst.p.state !== undefined ? { state: worst.p.state } : {}),
        };
      },
    };
  };
}

/**
 * The DNAT rules of chains, remembered per rule array: rule arrays are immutable and a chain keeps
 * its array until its rules change, so most steps reuse the last answer. One memo per invariant
 * source, shared by its runs (it holds arrays weakly).
 */
function dnatMemo(): (ruleset: Ruleset, table: TableName, chain: string) => readonly DnatRule[] {
  const memo = new WeakMap<readonly Rule[], { readonly table: TableName; readonly chain: string; readonly dnat: readonly DnatRule[] }>();
  return (ruleset, table, chain) => {
    const c = ruleset.tables[table].chains[chain];
    if (c === undefined) return [];
    const hit = memo.get(c.rules);
    // A renamed chain keeps its rule array: the memo holds the name it was computed for.
    if (hit !== undefined && hit.table === table && hit.chain === chain) return hit.dnat;
    const dnat = dnatRules(ruleset, table, chain);
    memo.set(c.rules, { table, chain, dnat });
    return dnat;
  };
}

/** Live Pods by IP (the last one listed wins), and live Pods per node in list order: remembered for the last Pod list. */
function livePodsMemo(): (pods: readonly Pod[]) => { readonly byIp: ReadonlyMap<string, Pod>; readonly byNode: ReadonlyMap<string, readonly Pod[]> } {
  let lastPods: readonly Pod[] | undefined;
  let last: { readonly byIp: ReadonlyMap<string, Pod>; readonly byNode: ReadonlyMap<string, readonly Pod[]> } = { byIp: new Map(), byNode: new Map() };
  return (pods) => {
    if (pods === lastPods) return last;
    const byIp = new Map<string, Pod>();
    const byNode = new Map<string, Pod[]>();
    for (const p of pods) {
      if (!isPodLive(p)) continue;
      byIp.set(p.status.podIP as string, p);
      const n = p.spec.nodeName;
      if (n === undefined) continue;
      let l = byNode.get(n);
      if (l === undefined) {
        l = [];
        byNode.set(n, l);
      }
      l.push(p);
    }
    lastPods = pods;
    last = { byIp, byNode };
    return last;
  };
}

// ---- no stale DNAT -------------------------------------------------------------------------------

export interface NoStaleDnatOptions {
  /** The chains holding per-Pod DNAT rules, e.g. `['ANTREA-NODE-PORT-LOCAL']`. */
  readonly chains: readonly string[];
  readonly table?: TableName;
  readonly settleMs?: number;
}

/**
 * **No stale DNAT**: every DNAT rule in the named chains targets the current IP and a declared
 * port (with its protocol) of a live Pod on that node.
 */
export function noStaleDnat(opts: NoStaleDnatOptions): () => Invariant {
  const table = opts.table ?? 'nat';
  const dnats = dnatMemo();
  return () => {
    const live = livePodsMemo();
    return settled(
      'no stale DNAT',
      (view) => {
        const out: Problem[] = [];
        const { byIp } = live(view.pods());
        for (const node of view.nodes) {
          const rs = view.ruleset(node.name);
          for (const chain of opts.chains) {
            for (const d of dnats(rs, table, chain)) {
              const ip = d.toIp;
              if (ip === undefined) continue;
              const pod = byIp.get(ip);
              if (pod !== undefined && pod.spec.nodeName === node.name) {
                const proto = d.proto === 17 ? 'UDP' : 'TCP';
                if (d.toPort === undefined || pod.spec.containers.some((c) => c.ports.some((p) => p.containerPort === d.toPort && p.protocol === proto))) continue;
                out.push({
                  key: staleKey(node.name, chain, d),
                  node: node.name,
                  message: `DNAT ${describeDnat(d)} in ${chain} on ${node.name} is stale: ${podKey(pod)} has ${ip} but declares no ${proto} port ${d.toPort}`,
                  state: { node: node.name, chain, rule: describeDnat(d), pod: podKey(pod) },
                });
                continue;
              }
              const owner = view.ipOwner(ip);
              let why: string;
              if (pod !== undefined) why = `${ip} is ${podKey(pod)} on ${pod.spec.nodeName ?? '?'}, not on ${node.name}`;
              else if (owner === undefined) why = `no Pod ever had ${ip}`;
              else {
                const now = view.pods().find((p) => podKey(p) === owner.pod);
                if (now === undefined) why = `${ip} was ${owner.pod} (uid ${shortUid(owner.uid)}), which is gone`;
                else if (now.metadata.uid !== owner.uid)
                  why = `${ip} was ${owner.pod} (uid ${shortUid(owner.uid)}) but ${owner.pod} is now ${now.status.podIP ?? 'without an IP'} (uid ${shortUid(now.metadata.uid)})`;
                else why = `${ip} was ${owner.pod} (uid ${shortUid(owner.uid)}), which ${now.metadata.deletionTimestamp !== undefined ? 'is terminating' : `is now ${now.status.podIP ?? 'without an IP'}`}`;
              }
              out.push({
                key: staleKey(node.name, chain, d),
                  node: node.name,
                message: `DNAT ${describeDnat(d)} in ${chain} on ${node.name} is stale: ${why}`,
                state: { node: node.name, chain, index: d.index, rule: describeDnat(d), ...(owner !== undefined ? { formerOwner: owner.pod, formerUid: owner.uid } : {}) },
              });
            }
          }
        }
        return out;
      },
      { ...(opts.settleMs !== undefined ? { settleMs: opts.settleMs } : {}), dependsOnPodsAndRulesOnly: true },
    )();
  };
}

function staleKey(node: string, chain: string, d: DnatRule): string {
  return `${node}|${chain}|${d.dport ?? '*'}|${d.toIp ?? '?'}:${d.toPort ?? '*'}`;
}

// ---- chain never empty -----------------------------------------------------------------------------

export interface ChainNeverEmptyOptions {
  readonly chain: string;
  readonly table?: TableName;
  /** Extra requirement once programmed: returns what is missing, or undefined. */
  readonly required?: (rules: readonly Rule[]) => string | undefined;
  readonly name?: string;
}

/** A requirement: some rule has this target (e.g. `MASQUERADE`). */
export function hasTarget(kind: NonNullable<Rule['target']>['kind']): (rules: readonly Rule[]) => string | undefined {
  return (rules) => (rules.some((r) => r.target?.kind === kind) ? undefined : `no ${kind} rule`);
}

/**
 * **Masquerade chain never empty once programmed**: after the chain first holds a rule on a node,
 * it must hold rules (and every required one) at every instant. Strict: a window of one step
 * is a violation, which is what catches a flush before a refill.
 */
export function chainNeverEmpty(opts: ChainNeverEmptyOptions): () => Invariant {
  const table = opts.table ?? 'nat';
  return () => {
    const programmed = new Map<string, number>();
    return {
      name: opts.name ?? `${opts.chain} never empty once programmed`,
      check(view) {
        for (const node of view.nodes) {
          const c = view.ruleset(node.name).tables[table].chains[opts.chain];
          const n = c?.rules.length ?? 0;
          const had = programmed.get(node.name);
          if (had === undefined) {
            if (n > 0 && (opts.required === undefined || opts.required(c?.rules ?? []) === undefined)) programmed.set(node.name, n);
            continue;
          }
          if (c === undefined) return { message: `${opts.chain} on ${node.name} was deleted after it had been programmed`, state: { node: node.name, chain: opts.chain, rules: 0 } };
          if (n === 0) return { message: `${opts.chain} on ${node.name} is empty (it had ${had} rules)`, state: { node: node.name, chain: opts.chain, rules: 0 } };
          const missing = opts.required?.(c.rules);
          if (missing !== undefined) return { message: `${opts.chain} on ${node.name} is missing a required rule: ${missing}`, state: { node: node.name, chain: opts.chain, rules: n } };
          if (n > had) programmed.set(node.name, n);
        }
        return undefined;
      },
    };
  };
}

// ---- no duplicate rules ----------------------------------------------------------------------------

export interface NoDuplicateRulesOptions {
  readonly table?: TableName;
  /** Only these chains (default: every chain of the table). */
  readonly chains?: readonly string[];
  readonly settleMs?: number;
}

/**
 * A rule's identity, canonicalised once per rule: rules are immutable and keep their identity
 * across changes to other rules (and across runs that replay the same commands), so one of these
 * serves every run of an invariant factory.
 */
export function ruleIdentities(): (r: Rule) => string {
  const ids = new WeakMap<Rule, string>();
  return (r) => {
    let id = ids.get(r);
    if (id === undefined) {
      id = ruleIdentity(r);
      ids.set(r, id);
    }
    return id;
  };
}

/**
 * Finds a chain's repeated rules, remembered per node, table and chain: a chain's problems depend
 * only on its (immutable) rule array. Shared by `noDuplicateRules` (one table, messages without
 * the table) and the built-in `noDuplicateRulesAnywhere` (every table, messages naming it).
 */
export function duplicateRuleFinder(idOf: (r: Rule) => string, opts: { readonly nameTable: boolean }): (node: string, table: TableName, name: string, rules: readonly Rule[]) => readonly Problem[] {
  const lastByChain = new Map<string, { readonly rules: readonly Rule[]; readonly problems: readonly Problem[] }>();
  return (node, table, name, rules) => {
    const where = opts.nameTable ? `${node}|${table}|${name}` : `${node}|${name}`;
    const hit = lastByChain.get(where);
    if (hit !== undefined && hit.rules === rules) return hit.problems;
    const problems: Problem[] = [];
    const seen = new Map<string, number>();
    rules.forEach((r, i) => {
      const id = idOf(r);
      const first = seen.get(id);
      if (first !== undefined) {
        const positions = [first, i + 1];
        problems.push(
          opts.nameTable
            ? { key: `${where}|${id}`, node, message: `${table} ${name} on ${node} holds the same rule at positions ${first} and ${i + 1}`, state: { node, table, chain: name, positions } }
            : { key: `${where}|${id}`, node, message: `${name} on ${node} holds the same rule at positions ${first} and ${i + 1}`, state: { node, chain: name, positions } },
        );
      } else seen.set(id, i + 1);
    });
    lastByChain.set(where, { rules, problems });
    return problems;
  };
}

/** **No duplicate rules**: no chain holds the same rule twice. */
export function noDuplicateRules(opts: NoDuplicateRulesOptions = {}): () => Invariant {
  const table = opts.table ?? 'nat';
  const idOf = ruleIdentities();
  return () => {
    const duplicates = duplicateRuleFinder(idOf, { nameTable: false });
    return settled(
      'no duplicate rules',
      (view) => {
        const out: Problem[] = [];
        for (const node of view.nodes) {
          const t = view.ruleset(node.name).tables[table];
          const names = opts.chains ?? Object.keys(t.chains).sort();
          for (const name of names) {
            const chain = t.chains[name];
            if (chain === undefined || chain.rules.length < 2) continue;
            for (const p of duplicates(node.name, table, name, chain.rules)) out.push(p);
          }
        }
        return out;
      },
      { settleMs: opts.settleMs ?? 0, dependsOnPodsAndRulesOnly: true },
    )();
  };
}

// ---- annotations agree with rules ------------------------------------------------------------------

export interface AnnotationsAgreeOptions {
  /** The Pod annotation listing mappings, e.g. `nodeportlocal.antrea.io`. */
  readonly annotation: string;
  readonly chain: string;
  readonly table?: TableName;
  readonly settleMs?: number;
}

interface Mapping {
  readonly podPort: number;
  readonly nodePort: number;
  readonly protocol: string;
}

function parseMappings(text: string): Mapping[] | string {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return 'is not JSON';
  }
  if (!Array.isArray(v)) return 'is not a JSON array';
  const out: Mapping[] = [];
  for (const e of v as unknown[]) {
    const o = e as { podPort?: unknown; nodePort?: unknown; protocol?: unknown };
    if (typeof o.podPort !== 'number' || typeof o.nodePort !== 'number' || typeof o.protocol !== 'string') return `has an entry without numeric podPort/nodePort and a protocol: ${JSON.stringify(e)}`;
    out.push({ podPort: o.podPort, nodePort: o.nodePort, protocol: o.protocol.toLowerCase() });
  }
  return out;
}

/**
 * **Annotations agree with rules**: every mapping a live Pod's annotation publishes has its DNAT
 * rule (node port → Pod IP:port), and every DNAT rule in the chain is published by a Pod.
 */
export function annotationsAgreeWithRules(opts: AnnotationsAgreeOptions): () => Invariant {
  const table = opts.table ?? 'nat';
  const dnats = dnatMemo();
  // Annotation texts repeat from step to step (a Pod keeps its annotation while its status
  // changes) and from run to run: parse each once (a bounded memo of a pure function).
  const parsed = new Map<string, readonly Mapping[] | string>();
  const parse = (text: string): readonly Mapping[] | string => {
    let m = parsed.get(text);
    if (m === undefined) {
      if (parsed.size >= 4096) parsed.clear();
      m = parseMappings(text);
      parsed.set(text, m);
    }
    return m;
  };
  return () => {
    const live = livePodsMemo();
    return settled(
      'annotations agree with rules',
      (view) => {
        const out: Problem[] = [];
        const { byNode } = live(view.pods());
        for (const node of view.nodes) {
          const rules = dnats(view.ruleset(node.name), table, opts.chain);
          const claimed = new Set<number>();
          for (const pod of byNode.get(node.name) ?? []) {
            const text = pod.metadata.annotations[opts.annotation];
            if (text === undefined) continue;
            const maps = parse(text);
            if (typeof maps === 'string') {
              out.push({ key: `${podKey(pod)}|malformed`, node: node.name, message: `${podKey(pod)}'s ${opts.annotation} annotation ${maps}`, state: { pod: podKey(pod), annotation: text } });
              continue;
            }
            for (const m of maps) {
              const proto = m.protocol === 'udp' ? 17 : 6;
              const r = rules.find((d) => d.dport === m.nodePort && d.proto === proto && d.toIp === pod.status.podIP && d.toPort === m.podPort);
              if (r !== undefined) {
                claimed.add(r.index);
                continue;
              }
              out.push({
                key: `${node.name}|${podKey(pod)}|${m.nodePort}`,
                node: node.name,
                message: `${podKey(pod)} publishes node port ${m.nodePort} → ${pod.status.podIP ?? '?'}:${m.podPort}/${m.protocol} but ${opts.chain} on ${node.name} has no such DNAT rule`,
                state: { node: node.name, pod: podKey(pod), mapping: { ...m }, rules: rules.map(describeDnat) },
              });
            }
          }
          for (const d of rules) {
            if (claimed.has(d.index)) continue;
            out.push({ node: node.name, key: `${node.name}|unclaimed|${d.dport ?? '*'}|${d.toIp ?? '?'}:${d.toPort ?? '*'}`, message: `DNAT ${describeDnat(d)} in ${opts.chain} on ${node.name} is published by no Pod annotation`, state: { node: node.name, rule: describeDnat(d) } });
          }
        }
        return out;
      },
      { ...(opts.settleMs !== undefined ? { settleMs: opts.settleMs } : {}), dependsOnPodsAndRulesOnly: true },
    )();
  };
}

// ---- probes succeed ----------------------------------------------------------------------------------

/**
 * **Probes succeed**: no probe fails later than `settleMs` (default: the view's) after the last
 * disruption.
 */
export function probesSucceed(opts: { readonly settleMs?: number } = {}): Invariant {
  return {
    name: 'probes succeed',
    check(view) {
      const settleMs = opts.settleMs ?? view.settleMs;
      for (const p of view.probes()) {
        if (p.ok) continue;
        const calm = p.node === undefined ? view.lastDisruptionMs : view.calmSince(p.node);
        if (p.atMs - calm <= settleMs && calm >= 0) continue;
        return {
          message: `probe ${p.id} failed at t=${p.atMs}ms: ${p.outcome}${p.detail !== '' ? ` (${p.detail})` : ''}, ${calm < 0 ? 'with no disruption at all' : `${p.atMs - calm}ms after the last disruption (settle time ${settleMs}ms)`}`,
          state: { probe: p.id, outcome: p.outcome, detail: p.detail },
        };
      }
      return undefined;
    },
  };
}
