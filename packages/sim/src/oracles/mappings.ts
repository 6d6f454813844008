/**
 * **Published mappings are served**: every mapping a live Pod publishes under an annotation its
 * node's agent declares can be read, is unique on the node, and has its DNAT rule (node port →
 * the Pod's IP and port, in a chain a packet can meet); and, where the agent declares which Pods
 * are eligible, every eligible Pod publishes its mappings and no other Pod publishes any, once the
 * node has settled. A controller that publishes nothing for an eligible Pod fails.
 *
 * Strict, like owned chains: a mapping that has been served (published, eligible where
 * eligibility is declared, with its DNAT rule) for the settle time stays served at every instant
 * while the same Pod publishes it and stays eligible. A restart that flushes the rules and
 * refills them one by one takes served mappings away meanwhile; an atomic restore does not. A
 * mapping served only briefly may still go while the agent works through the events before it
 * (a Service that stopped and started selecting the Pod again within that time). A node reboot
 * (its rules lost) starts the node's bookkeeping afresh.
 */
import { settled, type Problem } from '../invariants.ts';
import type { InvariantResult } from '../engine.ts';
import { podKey, type WorldView } from '../view.ts';
import type { CountingInvariant } from './counting.ts';
import { factsMemo } from './facts.ts';
import { reachableDnatMemo } from './reachable.ts';
import { isPodLive } from '../view.ts';

export const MAPPINGS_SERVED = 'published mappings are served';

/**
 * @example
 * ```ts
 * const world = new World({ seed: 1, cluster, controller, invariants: [publishedMappingsServed()] });
 * ```
 */
export function publishedMappingsServed(opts: { readonly settleMs?: number } = {}): () => CountingInvariant {
  return () => {
    const facts = factsMemo();
    const dnat = new Map<string, ReturnType<typeof reachableDnatMemo>>();
    const count = { n: 0 };
    /**
     * Per node: the mappings served at the last check (`uid|ip|PROTO|nodePort|podPort`), each with
     * the time it has been served since, and the node's boots then.
     */
    const served = new Map<string, { readonly keys: Map<string, number>; readonly boots: number }>();
    const strict = (view: WorldView): InvariantResult => {
      const f = facts(view);
      const services = view.services();
      for (const node of view.nodes) {
        const boots = view.boots?.(node.name) ?? 0;
        const agents = view.agents?.(node.name) ?? [];
        const rules = dnatOf(node.name)(view.ruleset(node.name));
        const before = served.get(node.name);
        const now = new Map<string, number>();
        const settleMs = opts.settleMs ?? view.settleMs;
        for (const pub of f.publications.get(node.name) ?? []) {
          const ip = pub.pod.status.podIP;
          if (pub.mappings === undefined || ip === undefined) continue;
          const decl = agents.flatMap((a) => a.declares?.annotations ?? []).find((d) => d.key === pub.key);
          const eligible = decl?.eligible?.(pub.pod, services);
          for (const m of pub.mappings) {
            if (eligible !== undefined && !eligible.some((e) => e.podPort === m.podPort && e.protocol === m.protocol)) continue;
            const k = `${pub.pod.metadata.uid}|${ip}|${m.protocol}|${m.nodePort}|${m.podPort}`;
            const proto = m.protocol === 'UDP' ? 17 : 6;
            const has = rules.some((d) => d.dport === m.nodePort && (d.proto === proto || d.proto === 0) && d.toIp === ip && d.toPort === m.podPort);
            const since = before !== undefined && before.boots === boots ? before.keys.get(k) : undefined;
            if (has) now.set(k, since ?? view.nowMs);
            else if (since !== undefined && view.nowMs - since >= settleMs) {
              served.clear();
              return {
                message: `${podKey(pub.pod)} publishes node port ${m.nodePort} → ${ip}:${m.podPort}/${m.protocol} on ${node.name} and its DNAT rule served it, but the rule is gone while the mapping is still published (a window in which the mapping is not served)`,
                state: { node: node.name, pod: podKey(pub.pod), nodePort: m.nodePort, podPort: m.podPort, protocol: m.protocol },
              };
            }
          }
        }
        served.set(node.name, { keys: now, boots });
      }
      return undefined;
    };
    const dnatOf = (node: string): ReturnType<typeof reachableDnatMemo> => {
      let memo = dnat.get(node);
      if (memo === undefined) {
        memo = reachableDnatMemo();
        dnat.set(node, memo);
      }
      return memo;
    };
    const inv = settled(
      MAPPINGS_SERVED,
      (view) => {
        const f = facts(view);
        const out: Problem[] = [];
        const services = view.services();
        for (const node of view.nodes) {
          const agents = view.agents?.(node.name) ?? [];
          const rules = dnatOf(node.name)(view.ruleset(node.name));
          const used = new Map<string, string>();
          for (const pub of f.publications.get(node.name) ?? []) {
            const who = podKey(pub.pod);
            count.n++;
            if (pub.mappings === undefined) {
              out.push({ key: `${node.name}|${who}|${pub.key}|unreadable`, node: node.name, message: `${who}'s ${pub.key} annotation cannot be read: ${pub.text}`, state: { pod: who, annotation: pub.text } });
              continue;
            }
            for (const m of pub.mappings) {
              const k = `${m.protocol}|${m.nodePort}`;
              const other = used.get(k);
              if (other !== undefined && other !== who) out.push({ key: `${node.name}|dup|${k}`, node: node.name, message: `node port ${m.nodePort}/${m.protocol} on ${node.name} is published by both ${other} and ${who}`, state: { node: node.name, nodePort: m.nodePort } });
              used.set(k, who);
              const ip = pub.pod.status.podIP;
              const proto = m.protocol === 'UDP' ? 17 : 6;
              if (rules.some((d) => d.dport === m.nodePort && (d.proto === proto || d.proto === 0) && d.toIp === ip && d.toPort === m.podPort)) continue;
              out.push({
                key: `${node.name}|${who}|${m.protocol}|${m.nodePort}|${m.podPort}`,
                node: node.name,
                message: `${who} publishes node port ${m.nodePort} → ${ip ?? '?'}:${m.podPort}/${m.protocol} on ${node.name}, but no DNAT rule a packet can meet there sends it to the Pod`,
                state: { node: node.name, pod: who, nodePort: m.nodePort, podPort: m.podPort, protocol: m.protocol },
              });
            }
          }
          // Eligibility, where declared.
          for (const a of agents) {
            for (const d of a.declares?.annotations ?? []) {
              if (d.eligible === undefined) continue;
              for (const p of view.pods()) {
                if (p.spec.nodeName !== node.name || !isPodLive(p)) continue;
                const want = d.eligible(p, services);
                const pub = (f.publications.get(node.name) ?? []).find((x) => x.pod === p && x.key === d.key);
                const have = pub?.mappings ?? [];
                count.n++;
                for (const w of want) {
                  if (have.some((m) => m.podPort === w.podPort && m.protocol === w.protocol)) continue;
                  out.push({ key: `${node.name}|${podKey(p)}|${d.key}|missing|${w.podPort}/${w.protocol}`, node: node.name, message: `${podKey(p)} on ${node.name} is eligible for a ${d.key} mapping of port ${w.podPort}/${w.protocol} (${a.name}), but publishes none`, state: { pod: podKey(p), port: w.podPort, protocol: w.protocol } });
                }
                for (const m of have) {
                  if (want.some((w) => w.podPort === m.podPort && w.protocol === m.protocol)) continue;
                  out.push({ key: `${node.name}|${podKey(p)}|${d.key}|extra|${m.podPort}/${m.protocol}`, node: node.name, message: `${podKey(p)} on ${node.name} publishes ${d.key} node port ${m.nodePort} → ${m.podPort}/${m.protocol}, but no Service makes that port eligible`, state: { pod: podKey(p), port: m.podPort, protocol: m.protocol } });
                }
              }
            }
          }
        }
        return out;
      },
      { ...(opts.settleMs !== undefined ? { settleMs: opts.settleMs } : {}) },
    )();
    return { name: inv.name, check: (v) => strict(v) ?? inv.check(v), examined: () => count.n };
  };
}
