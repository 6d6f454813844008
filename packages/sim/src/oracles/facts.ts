/**
 * What the built-in oracles read from the world, computed once per Pod list: who holds each Pod
 * IP now, which mappings every Pod publishes under the annotations its node's agents declare,
 * and which Services select which Pods.
 */
import type { Pod, Service } from '@netsim/kube';
import type { PublishedAnnotation, PublishedMapping } from '../agent.ts';
import { isPodLive, podKey, type AgentView, type WorldView } from '../view.ts';

/** One Pod's published mappings under one declared annotation. */
export interface Publication {
  readonly pod: Pod;
  readonly key: string;
  /** `undefined`: the value cannot be read. */
  readonly mappings: readonly PublishedMapping[] | undefined;
  readonly text: string;
}

export interface ClusterFacts {
  /** The Pod holding each IP now (not completed; a live one before a terminating one). */
  readonly holders: ReadonlyMap<string, Pod>;
  /** Publications of live Pods per node, for the annotations that node's agents declare. */
  readonly publications: ReadonlyMap<string, readonly Publication[]>;
  /** Who publishes `node|PROTO|nodePort` (live Pods, and terminating ones still running). */
  readonly publishers: ReadonlyMap<string, readonly { readonly pod: Pod; readonly mapping: PublishedMapping }[]>;
  /**
   * The same for completed (Succeeded or Failed) Pods still in the API: agents such as Antrea's
   * NodePortLocal keep a completed Pod's mappings, to its last IP, until the Pod is deleted.
   */
  readonly completedPublishers: ReadonlyMap<string, readonly { readonly pod: Pod; readonly mapping: PublishedMapping }[]>;
}

/** A Pod that ran and completed (Succeeded or Failed), its status still showing its last IP. */
function isCompleted(p: Pod): boolean {
  return (p.status.phase === 'Succeeded' || p.status.phase === 'Failed') && p.status.podIP !== undefined && p.status.podIP !== '' && p.spec.hostNetwork !== true;
}

/** A Pod being deleted gracefully whose containers still run (a preStop hook, a slow shutdown): it holds its IP and serves. */
export function isTerminatingRunning(p: Pod): boolean {
  return p.metadata.deletionTimestamp !== undefined && p.status.phase === 'Running' && holdsIp(p);
}

/** A Pod that has an IP and is not done: Succeeded and Failed Pods have released theirs. */
export function holdsIp(p: Pod): boolean {
  return p.status.podIP !== undefined && p.status.podIP !== '' && p.status.phase !== 'Succeeded' && p.status.phase !== 'Failed' && p.spec.hostNetwork !== true;
}

/** The annotations the agents on a node declare, deduplicated by key. */
export function declaredAnnotations(agents: readonly AgentView[]): PublishedAnnotation[] {
  const out: PublishedAnnotation[] = [];
  for (const a of agents) for (const d of a.declares?.annotations ?? []) if (!out.some((x) => x.key === d.key)) out.push(d);
  return out;
}

/** Whether a Service's selector selects the Pod (an empty selector selects none, as for endpoints). */
export function selects(s: Service, p: Pod): boolean {
  const sel = s.spec.selector ?? {};
  const keys = Object.keys(sel);
  if (keys.length === 0 || s.metadata.namespace !== p.metadata.namespace) return false;
  return keys.every((k) => p.metadata.labels[k] === sel[k]);
}

/** Memoised facts: recomputed when the Pod list changes (annotation parsers are pure). */
export function factsMemo(): (view: WorldView) => ClusterFacts {
  let lastPods: readonly Pod[] | undefined;
  let last: ClusterFacts | undefined;
  const parsed = new Map<string, readonly PublishedMapping[] | undefined>();
  return (view) => {
    const pods = view.pods();
    if (pods === lastPods && last !== undefined) return last;
    const holders = new Map<string, Pod>();
    for (const p of pods) {
      if (!holdsIp(p)) continue;
      const ip = p.status.podIP as string;
      const cur = holders.get(ip);
      if (cur === undefined || (!isPodLive(cur) && isPodLive(p))) holders.set(ip, p);
    }
    const publications = new Map<string, Publication[]>();
    const publishers = new Map<string, { readonly pod: Pod; readonly mapping: PublishedMapping }[]>();
    const completedPublishers = new Map<string, { readonly pod: Pod; readonly mapping: PublishedMapping }[]>();
    for (const node of view.nodes) {
      const decl = declaredAnnotations(view.agents?.(node.name) ?? []);
      const list: Publication[] = [];
      if (decl.length > 0) {
        for (const p of pods) {
          const completed = isCompleted(p);
          const live = isPodLive(p);
          if (p.spec.nodeName !== node.name || (!live && !completed && !isTerminatingRunning(p))) continue;
          for (const d of decl) {
            const text = p.metadata.annotations[d.key];
            if (text === undefined) continue;
            const memoKey = `${d.key}\u0000${text}`;
            let m = parsed.get(memoKey);
            if (!parsed.has(memoKey)) {
              if (parsed.size > 4096) parsed.clear();
              m = safeParse(d, text);
              parsed.set(memoKey, m);
            }
            // A terminating Pod still running keeps its IP and may keep its mappings until it
            // stops: they are its own (not stale), but whether they are served is not judged.
            if (live) list.push({ pod: p, key: d.key, mappings: m, text });
            const into = completed ? completedPublishers : publishers;
            for (const mapping of m ?? []) {
              const k = `${node.name}|${mapping.protocol}|${mapping.nodePort}`;
              const l = into.get(k) ?? [];
              l.push({ pod: p, mapping });
              into.set(k, l);
            }
          }
        }
      }
      publications.set(node.name, list);
    }
    lastPods = pods;
    last = { holders, publications, publishers, completedPublishers };
    return last;
  };
}

function safeParse(d: PublishedAnnotation, text: string): readonly PublishedMapping[] | undefined {
  try {
    return d.parse(text);
  } catch {
    return undefined;
  }
}

/** `default/web-1 (uid 1a2b)`. */
export function podWho(p: Pod, shortUid: (u: string) => string): string {
  return `${podKey(p)} (uid ${shortUid(p.metadata.uid)})`;
}
