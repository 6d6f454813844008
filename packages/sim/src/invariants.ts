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
import type { Rule, TableName } from '@netsim/netfilter';
import type { InvariantResult } from './engine.ts';
import type { JsonValue } from './json.ts';
import { describeDnat, dnatRules, isPodLive, podKey, ruleIdentity, type WorldView } from './view.ts';
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
     * The problems depend only on the Pods and the nodes' rules: recompute them only when one of
     * those changed (both are immutable, so identity tells). Most steps change neither.
     */
    readonly dependsOnPodsAndRulesOnly?: boolean;
  } = {},
): () => Invariant {
  return () => {
    const since = new Map<string, number>();
    let memoPods: unknown = undefined;
    let memoRules: unknown[] = [];
    let memo: readonly Problem[] = [];
    const compute = (view: WorldView): readonly Problem[] => {
      if (opts.dependsOnPodsAndRulesOnly !== true) return problems(view);
      const pods = view.pods();
      const nodes = view.nodes;
      let same = pods === memoPods && nodes.length === memoRules.length;
      for (let i = 0; same && i < nodes.length; i++) same = view.ruleset((nodes[i] as { readonly name: string }).name) === memoRules[i];
      if (same) return memo;
      memoPods = pods;
      memoRules = nodes.map((n) => view.ruleset(n.name));
      memo = problems(view);
      return memo;
    };
    return {
      name,
      check(view) {
        const settleMs = opts.settleMs ?? view.settleMs;
        const now = view.nowMs;
        const current = compute(view);
        if (current.length === 0) {
          if (since.size > 0) since.clear();
          return undefined;
        }
        const seen = new Set<string>();
        let worst: { readonly p: Problem; readonly ageMs: number } | undefined;
        // A problem counts from when it appeared, or from the last disruption if later: a
        // controller is not blamed while a fault keeps it blind, only after it has had the
        // settle time to converge.
        const calm = view.lastDisruptionMs;
        for (const p of current) {
          seen.add(p.key);
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
        if (since.size > seen.size) for (const k of [...since.keys()]) if (!seen.has(k)) since.delete(k);
        if (worst === undefined) return undefined;
        return {
          message: settleMs === 0 ? worst.p.message : `${worst.p.message} (for ${worst.ageMs}ms, longer than the ${settleMs}ms settle time)`,
          ...(worst.p.state !== undefined ? { state: worst.p.state } : {}),
        };
      },
    };
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
  return settled(
    'no stale DNAT',
    (view) => {
      const out: Problem[] = [];
      const byIp = new Map<string, ReturnType<WorldView['pods']>[number]>();
      for (const p of view.pods()) if (isPodLive(p)) byIp.set(p.status.podIP as string, p);
      for (const node of view.nodes) {
        const rs = view.ruleset(node.name);
        for (const chain of opts.chains) {
          for (const d of dnatRules(rs, table, chain)) {
            const where = `DNAT ${describeDnat(d)} in ${chain} on ${node.name}`;
            const key = `${node.name}|${chain}|${d.dport ?? '*'}|${d.toIp ?? '?'}:${d.toPort ?? '*'}`;
            const ip = d.toIp;
            if (ip === undefined) continue;
            const pod = byIp.get(ip);
            if (pod !== undefined && pod.spec.nodeName === node.name) {
              const proto = d.proto === 17 ? 'UDP' : 'TCP';
              const declared = pod.spec.containers.some((c) => c.ports.some((p) => p.containerPort === d.toPort && p.protocol === proto));
              if (declared || d.toPort === undefined) continue;
              out.push({ key, message: `${where} is stale: ${podKey(pod)} has ${ip} but declares no ${proto} port ${d.toPort}`, state: { node: node.name, chain, rule: describeDnat(d), pod: podKey(pod) } });
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
            out.push({ key, message: `${where} is stale: ${why}`, state: { node: node.name, chain, index: d.index, rule: describeDnat(d), ...(owner !== undefined ? { formerOwner: owner.pod, formerUid: owner.uid } : {}) } });
          }
        }
      }
      return out;
    },
    { ...(opts.settleMs !== undefined ? { settleMs: opts.settleMs } : {}), dependsOnPodsAndRulesOnly: true },
  );
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

/** **No duplicate rules**: no chain holds the same rule twice. */
export function noDuplicateRules(opts: NoDuplicateRulesOptions = {}): () => Invariant {
  const table = opts.table ?? 'nat';
  return () => {
    // Rules are immutable and keep their identity across changes to other rules: canonicalise each once.
    const ids = new WeakMap<Rule, string>();
    const idOf = (r: Rule): string => {
      let id = ids.get(r);
      if (id === undefined) {
        id = ruleIdentity(r);
        ids.set(r, id);
      }
      return id;
    };
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
            const seen = new Map<string, number>();
            chain.rules.forEach((r, i) => {
              const id = idOf(r);
              const first = seen.get(id);
              if (first === undefined) seen.set(id, i + 1);
              else out.push({ key: `${node.name}|${name}|${id}`, message: `${name} on ${node.name} holds the same rule at positions ${first} and ${i + 1}`, state: { node: node.name, chain: name, positions: [first, i + 1] } });
            });
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
  return settled(
    'annotations agree with rules',
    (view) => {
      const out: Problem[] = [];
      for (const node of view.nodes) {
        const rules = dnatRules(view.ruleset(node.name), table, opts.chain);
        const claimed = new Set<number>();
        for (const pod of view.pods()) {
          if (pod.spec.nodeName !== node.name || !isPodLive(pod)) continue;
          const text = pod.metadata.annotations[opts.annotation];
          if (text === undefined) continue;
          const maps = parseMappings(text);
          if (typeof maps === 'string') {
            out.push({ key: `${podKey(pod)}|malformed`, message: `${podKey(pod)}'s ${opts.annotation} annotation ${maps}`, state: { pod: podKey(pod), annotation: text } });
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
              message: `${podKey(pod)} publishes node port ${m.nodePort} → ${pod.status.podIP ?? '?'}:${m.podPort}/${m.protocol} but ${opts.chain} on ${node.name} has no such DNAT rule`,
              state: { node: node.name, pod: podKey(pod), mapping: { ...m }, rules: rules.map(describeDnat) },
            });
          }
        }
        for (const d of rules) {
          if (claimed.has(d.index)) continue;
          out.push({ key: `${node.name}|unclaimed|${d.dport ?? '*'}|${d.toIp ?? '?'}:${d.toPort ?? '*'}`, message: `DNAT ${describeDnat(d)} in ${opts.chain} on ${node.name} is published by no Pod annotation`, state: { node: node.name, rule: describeDnat(d) } });
        }
      }
      return out;
    },
    { ...(opts.settleMs !== undefined ? { settleMs: opts.settleMs } : {}), dependsOnPodsAndRulesOnly: true },
  );
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
        if (p.atMs - view.lastDisruptionMs <= settleMs && view.lastDisruptionMs >= 0) continue;
        return {
          message: `probe ${p.id} failed at t=${p.atMs}ms: ${p.outcome}${p.detail !== '' ? ` (${p.detail})` : ''}, ${view.lastDisruptionMs < 0 ? 'with no disruption at all' : `${p.atMs - view.lastDisruptionMs}ms after the last disruption (settle time ${settleMs}ms)`}`,
          state: { probe: p.id, outcome: p.outcome, detail: p.detail },
        };
      }
      return undefined;
    },
  };
}
