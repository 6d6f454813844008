/**
 * **No stale DNAT**, from the world alone: every DNAT rule a packet can meet (any chain of the
 * nat table reachable from a hook) that sends traffic into a node's Pod CIDR must lead to the Pod
 * the traffic is meant for. It is stale when no Pod holds the address any more, when the Pod
 * holding it is not the one the node port was published for (the IP was reused), or when the
 * rule sits in a chain an agent owns and publishes mappings for, and no Pod publishes it; and, on
 * a node whose agents proxy Services, when it sends to a port of the Pod that no Service selecting
 * the Pod targets (its targetPort, a number or a container port's name resolved on the Pod) and
 * the Pod publishes no mapping to: a Service whose targetPort or selector changed must stop
 * sending to the old port, or to the Pods it no longer selects. The same holds for every nftables `dnat to` reachable from a `nat` base chain on prerouting or output
 * (through jumps, gotos and verdict maps), named `nft FAMILY TABLE CHAIN`.
 */
import type { Problem } from '../invariants.ts';
import type { CountingInvariant } from './counting.ts';
import { settled } from '../invariants.ts';
import { shortUid } from '../render.ts';
import { describeDnat, podKey, type DnatRule, type WorldView } from '../view.ts';
import type { Pod, Service } from '@netsim/kube';
import { declaredAnnotations, factsMemo, podWho, selects, type ClusterFacts } from './facts.ts';
import { nftReachableDnatMemo } from './nftReachable.ts';
import { inCidr, reachableDnatMemo } from './reachable.ts';

export const NO_STALE_DNAT = 'no stale DNAT anywhere';


/** What the check reads of a DNAT rule or an nft `dnat to` statement. */
type Dnat = Pick<DnatRule, 'chain' | 'proto' | 'dport' | 'toIp' | 'toPort'>;

function proto(d: Dnat): 'TCP' | 'UDP' | undefined {
  return d.proto === 6 ? 'TCP' : d.proto === 17 ? 'UDP' : undefined;
}

/** When the current holder of an IP got it, in words. */
function since(view: WorldView, ip: string): string {
  const o = view.ipOwner(ip);
  return o?.sinceMs !== undefined ? ` since t=${o.sinceMs}ms` : '';
}

/** The `port/PROTO` targets of the Services selecting a Pod: numeric targetPorts as they are, named ones resolved on the Pod's container ports. */
function serviceTargets(services: readonly Service[], p: Pod): Set<string> {
  const out = new Set<string>();
  for (const s of services) {
    if (!selects(s, p)) continue;
    for (const sp of s.spec.ports) {
      if (typeof sp.targetPort === 'number') out.add(`${sp.targetPort}/${sp.protocol}`);
      else for (const c of p.spec.containers) for (const cp of c.ports) if (cp.name === sp.targetPort && cp.protocol === sp.protocol) out.add(`${cp.containerPort}/${sp.protocol}`);
    }
  }
  return out;
}

/** The problems of one node's DNAT rules. */
function nodeProblems(view: WorldView, node: string, rules: readonly Dnat[], facts: ClusterFacts, cidrs: readonly string[], count: { n: number }): Problem[] {
  const out: Problem[] = [];
  const agents = view.agents?.(node) ?? [];
  // Chains owned by an agent that publishes mappings: their rules must each be published.
  const publishingChains = new Set<string>();
  for (const a of agents) if ((a.declares?.annotations ?? []).length > 0) for (const c of a.declares?.ownedChains ?? []) if (c.table === 'nat') publishingChains.add(c.chain);
  const annotating = declaredAnnotations(agents).length > 0;
  const proxying = agents.some((a) => (a.declares?.provides ?? []).includes('service-proxy'));
  const targets = new Map<string, Set<string>>();
  const targetsOf = (p: Pod): Set<string> => {
    let t = targets.get(p.metadata.uid);
    if (t === undefined) {
      t = serviceTargets(view.services(), p);
      targets.set(p.metadata.uid, t);
    }
    return t;
  };
  for (const d of rules) {
    const ip = d.toIp;
    if (ip === undefined || !cidrs.some((c) => inCidr(c, ip))) continue;
    count.n++;
    const rule = `DNAT ${describeDnat(d)} in ${d.chain} on ${node}`;
    const key = `${node}|${d.chain}|${d.proto}|${d.dport ?? '*'}|${ip}:${d.toPort ?? '*'}`;
    const holder = facts.holders.get(ip);
    const p = proto(d);
    const publishers = d.dport !== undefined && p !== undefined && annotating ? (facts.publishers.get(`${node}|${p}|${d.dport}`) ?? []) : [];
    // A completed Pod's own published mapping, to its last IP: kept until the Pod is deleted (as
    // Antrea's NodePortLocal does, antrea-io/antrea#6531), even once the IP is released or reused.
    const completedOwn = d.dport !== undefined && p !== undefined && annotating ? (facts.completedPublishers.get(`${node}|${p}|${d.dport}`) ?? []) : [];
    if (completedOwn.some((x) => x.pod.status.podIP === ip && x.mapping.podPort === d.toPort)) continue;
    if (holder === undefined) {
      const o = view.ipOwner(ip);
      const was = o === undefined ? `no Pod ever had ${ip}` : `${ip} was ${o.pod} (uid ${shortUid(o.uid)})${o.sinceMs !== undefined ? ` from t=${o.sinceMs}ms` : ''}, and no Pod holds it now`;
      out.push({ key, node, message: `${rule} is stale: ${was}`, state: { node, chain: d.chain, rule: describeDnat(d), ...(o !== undefined ? { formerOwner: o.pod, formerUid: o.uid } : {}) } });
      continue;
    }
    if (publishers.length > 0 && !publishers.some((x) => x.pod.metadata.uid === holder.metadata.uid)) {
      const pub = publishers[0];
      if (pub === undefined) continue;
      out.push({
        key,
        node,
        message: `${rule} is stale: ${ip} belongs to ${podWho(holder, shortUid)}${since(view, ip)}, but node port ${d.dport ?? '?'}/${p ?? '?'} is published for ${podWho(pub.pod, shortUid)} at ${pub.pod.status.podIP ?? '?'}`,
        state: { node, chain: d.chain, rule: describeDnat(d), holder: podKey(holder), holderUid: holder.metadata.uid, publishedFor: podKey(pub.pod) },
      });
      continue;
    }
    if (publishingChains.has(d.chain) && !publishers.some((x) => x.pod.metadata.uid === holder.metadata.uid && x.mapping.podPort === d.toPort)) {
      out.push({
        key,
        node,
        message: `${rule} is stale: ${ip} belongs to ${podWho(holder, shortUid)}${since(view, ip)}, which publishes no mapping ${d.dport ?? '?'} → ${d.toPort ?? '?'}/${p ?? '?'}`,
        state: { node, chain: d.chain, rule: describeDnat(d), holder: podKey(holder), holderUid: holder.metadata.uid },
      });
      continue;
    }
    // A Service proxy's DNAT to a Pod port no selecting Service targets (and no mapping the Pod publishes).
    if (proxying && !publishingChains.has(d.chain) && d.toPort !== undefined && p !== undefined && !publishers.some((x) => x.pod.metadata.uid === holder.metadata.uid && x.mapping.podPort === d.toPort) && !targetsOf(holder).has(`${d.toPort}/${p}`)) {
      out.push({
        key,
        node,
        message: `${rule} is stale: ${ip} belongs to ${podWho(holder, shortUid)}${since(view, ip)}, and no Service selecting it targets port ${d.toPort}/${p} (${[...targetsOf(holder)].sort().join(', ') || 'none selects it'})`,
        state: { node, chain: d.chain, rule: describeDnat(d), holder: podKey(holder), holderUid: holder.metadata.uid },
      });
    }
  }
  return out;
}

/**
 * The built-in, controller-agnostic "no stale DNAT" (see the module comment). A problem is
 * forgiven while its node is disrupted and for the settle time after.
 *
 * @example
 * ```ts
 * const world = new World({ seed: 1, cluster, controller, invariants: [staleDnatAnywhere()] });
 * ```
 */
export function staleDnatAnywhere(opts: { readonly settleMs?: number; readonly name?: string } = {}): () => CountingInvariant {
  return () => {
    const facts = factsMemo();
    const dnat = new Map<string, ReturnType<typeof reachableDnatMemo>>();
    const nftDnat = new Map<string, ReturnType<typeof nftReachableDnatMemo>>();
    const count = { n: 0 };
    const inv = settled(
      opts.name ?? NO_STALE_DNAT,
      (view) => {
        const f = facts(view);
        const cidrs = view.nodes.map((n) => n.podCidr);
        const out: Problem[] = [];
        for (const node of view.nodes) {
          let memo = dnat.get(node.name);
          if (memo === undefined) {
            memo = reachableDnatMemo();
            dnat.set(node.name, memo);
          }
          for (const p of nodeProblems(view, node.name, memo(view.ruleset(node.name)), f, cidrs, count)) out.push(p);
          const nft = view.nftRuleset?.(node.name);
          if (nft === undefined || nft.tables.length === 0) continue;
          let nftMemo = nftDnat.get(node.name);
          if (nftMemo === undefined) {
            nftMemo = nftReachableDnatMemo();
            nftDnat.set(node.name, nftMemo);
          }
          for (const p of nodeProblems(view, node.name, nftMemo(nft), f, cidrs, count)) out.push(p);
        }
        return out;
      },
      { ...(opts.settleMs !== undefined ? { settleMs: opts.settleMs } : {}), dependsOnPodsAndRulesOnly: true },
    )();
    return { name: inv.name, check: (v) => inv.check(v), examined: () => count.n };
  };
}
