/**
 * **Datapath probes succeed**: packets sent through the nodes' real kernels (their rules,
 * conntrack, routing) reach whom the world says they must, with the source address the world says
 * they keep. Every probe is derived from the world (Pods, Services, EndpointSlices, nodes) and
 * applies only where an agent declares the job (`provides`, published annotations):
 *
 * - **Pod egress** (`pod-egress-masquerade`): a Pod reaching a host outside the cluster is
 *   answered, seen from its node's address (masqueraded); a Pod reaching a Pod on another node is
 *   seen from its own address (not masqueraded).
 * - **Services** (`service-proxy`), for every TCP and UDP port whose endpoints all answer on it:
 *   the ClusterIP from Pods (each endpoint Pod included: a Pod reaching itself is the hairpin
 *   case); the NodePort from an external client on every node, under `externalTrafficPolicy`
 *   Cluster (any endpoint) and Local (the node's own endpoints with the client's source kept, or,
 *   with none, dropped). Endpoints follow kube-proxy's rules: the ready ones, else the serving
 *   terminating ones. UDP flows keep their source port from round to round, so a conntrack entry
 *   toward an endpoint that went away is noticed (kube-proxy must clear UDP conntrack); a flow may
 *   keep reaching an endpoint that drains (serving and terminating), whose flows kube-proxy keeps;
 *   one that keeps a NAT from before a policy change (kube-proxy leaves those) is judged by a fresh
 *   flow.
 * - **Published mappings** (annotations an agent declares): the node port reaches the Pod.
 *
 * A failure is a finding when every node it involves (where the packet enters, and the nodes of
 * the Pods it must reach) has been calm for the settle time, and the expectation itself has not
 * changed within it (a Pod became ready, an endpoint was removed).
 */
import type { EndpointSlice, Pod, Service, ServicePort } from '@netsim/kube';
import type { DatapathRole } from '../agent.ts';
import type { ClusterDatapath, ProbeOutcome } from '../datapath.ts';
import { EXTERNAL_IP, EXTERNAL_PORT, LB_IP } from '../datapath.ts';
import type { JsonObject } from '../json.ts';
import { isPodLive, podKey, type AgentView, type NodeInfo, type WorldView } from '../view.ts';
import type { CountingInvariant } from './counting.ts';
import { declaredAnnotations, holdsIp } from './facts.ts';

export const DATAPATH_PROBES = 'datapath probes succeed';

/** What a probing invariant is given by the world it runs in: the data plane and the objects it derives probes from. */
export interface ProbeWorld {
  readonly datapath: ClusterDatapath;
  readonly nodes: readonly NodeInfo[];
  nowMs(): number;
  /** Runs `fn` every `periodMs`, each time in its own step. */
  every(periodMs: number, label: string, fn: () => void): void;
  pods(): readonly Pod[];
  services(): readonly Service[];
  endpointSlices(): readonly EndpointSlice[];
  agents(node: string): readonly AgentView[];
  /** A trace event (a probe whose result changed). */
  emit(type: string, fields: JsonObject): void;
}

/** An invariant that sends packets: the world builds its data plane for it and attaches it. */
export interface ProbingInvariant extends CountingInvariant {
  readonly needsDatapath: true;
  attach(world: ProbeWorld): void;
}

/** Whether an invariant wants the data plane. */
export function isProbing(inv: unknown): inv is ProbingInvariant {
  return typeof inv === 'object' && inv !== null && (inv as Partial<ProbingInvariant>).needsDatapath === true && typeof (inv as Partial<ProbingInvariant>).attach === 'function';
}

/** One probe's last result. */
interface Result {
  readonly id: string;
  readonly ok: boolean;
  readonly message: string;
  readonly atMs: number;
  /** The nodes it depends on: a disruption of any of them excuses it. */
  readonly nodes: readonly string[];
  /** Since when the expectation has been what it is. */
  readonly expectedSinceMs: number;
  readonly state: JsonObject;
}

/** A probe to run this round. */
interface Probe {
  readonly id: string;
  /** What the world expects, in a stable form: when it changes, the settle time starts again. */
  readonly expectation: string;
  readonly nodes: readonly string[];
  run(now: number): { readonly ok: boolean; readonly message: string; readonly hops?: string; readonly inconclusive?: boolean };
}

/** One endpoint of a Service port, as kube-proxy reads it from the EndpointSlices. */
interface Ep {
  readonly ip: string;
  readonly port: number;
  readonly node: string;
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  readonly pod: Pod | undefined;
}

const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

function provides(agents: readonly AgentView[], role: DatapathRole): boolean {
  return agents.some((a) => (a.declares?.provides ?? []).includes(role));
}

/** A source port for a flow that must keep it, stable per probe (outside the ephemeral range). */
function stickyPort(id: string): number {
  let h = 2166136261;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619) >>> 0;
  return 20000 + (h % 10000);
}

function listensOn(p: Pod, port: number, protocol: string): boolean {
  return p.spec.containers.some((c) => c.ports.some((cp) => cp.containerPort === port && cp.protocol === protocol));
}

function ipOf(ep: string | undefined): string {
  if (ep === undefined) return '?';
  const i = ep.lastIndexOf(':');
  return i < 0 ? ep : ep.slice(0, i);
}

/** Endpoints of one Service port, from its slices. */
function endpointsOf(svc: Service, sp: ServicePort, slices: readonly EndpointSlice[], byUid: ReadonlyMap<string, Pod>): Ep[] {
  const out: Ep[] = [];
  for (const s of slices) {
    if (s.metadata.namespace !== svc.metadata.namespace || s.metadata.labels[SERVICE_NAME_LABEL] !== svc.metadata.name) continue;
    const port = s.ports.find((p) => (p.name ?? '') === (sp.name ?? '') && p.protocol === sp.protocol);
    if (port === undefined) continue;
    for (const e of s.endpoints) {
      for (const ip of e.addresses) {
        out.push({ ip, port: port.port, node: e.nodeName ?? '', ready: e.conditions.ready, serving: e.conditions.serving, terminating: e.conditions.terminating, pod: e.targetRef === undefined ? undefined : byUid.get(e.targetRef.uid) });
      }
    }
  }
  return out;
}

/** kube-proxy's endpoint choice: the ready ones, else the serving terminating ones. */
function usable(eps: readonly Ep[]): Ep[] {
  const ready = eps.filter((e) => e.ready);
  return ready.length > 0 ? ready : eps.filter((e) => e.serving && e.terminating);
}

/** A failed probe, with its packets hop by hop when the data plane keeps them. */
function fail(o: ProbeOutcome, message: string): { readonly ok: false; readonly message: string; readonly hops?: string } {
  return { ok: false, message, ...(o.hops !== undefined ? { hops: o.hops } : {}) };
}

function fmt(o: ProbeOutcome): string {
  return `${o.outcome}${o.detail !== '' ? ` (${o.detail})` : ''}`;
}

/**
 * The probes of the current world: a pure function of the objects and the data plane's running
 * Pod namespaces.
 */
/**
 * The sticky UDP flows: per probe, how many times the flow was started afresh and whether it has
 * been answered yet. A flow that has never been answered starts again on a new port each round (a
 * client whose first requests time out retries from a new socket); once answered it keeps its
 * port, so a conntrack entry toward an endpoint that went away is noticed.
 */
type UdpFlows = Map<string, { generation: number; answered: boolean }>;

function probesOf(w: ProbeWorld, flows: UdpFlows): Probe[] {
  const dp = w.datapath;
  const out: Probe[] = [];
  const pods = w.pods().filter((p) => isPodLive(p) || (p.metadata.deletionTimestamp !== undefined && holdsIp(p) && p.status.phase === 'Running'));
  const byUid = new Map(pods.map((p) => [p.metadata.uid, p] as const));
  const nodeIp = new Map(w.nodes.map((n) => [n.name, n.ip] as const));
  const hostOf = (p: Pod | undefined): string | undefined => (p === undefined ? undefined : dp.podHost(p.metadata.uid));
  const live = pods.filter((p) => isPodLive(p) && hostOf(p) !== undefined).sort((a, b) => (podKey(a) < podKey(b) ? -1 : 1));
  const agentsOf = new Map(w.nodes.map((n) => [n.name, w.agents(n.name)] as const));
  const role = (node: string, r: DatapathRole): boolean => provides(agentsOf.get(node) ?? [], r);

  // ---- Pod egress and Pod-to-Pod ----
  for (const p of live) {
    const node = p.spec.nodeName ?? '';
    if (!role(node, 'pod-egress-masquerade')) continue;
    const from = hostOf(p) as string;
    const ip = nodeIp.get(node) ?? '?';
    out.push({
      id: `pod egress ${podKey(p)} → ${EXTERNAL_IP}:${EXTERNAL_PORT}`,
      expectation: `${p.metadata.uid}|${ip}`,
      nodes: [node],
      run(now) {
        const o = dp.probeTcp(from, EXTERNAL_IP, EXTERNAL_PORT, now);
        if (!o.ok) return fail(o, `${podKey(p)} on ${node} cannot reach ${EXTERNAL_IP}:${EXTERNAL_PORT} outside the cluster: ${fmt(o)}`);
        if (ipOf(o.peer) !== ip) return fail(o, `${podKey(p)}'s egress to ${EXTERNAL_IP}:${EXTERNAL_PORT} arrives from ${o.peer ?? '?'}, not masqueraded to its node ${node}'s ${ip}`);
        return { ok: true, message: '' };
      },
    });
    // Across nodes: the first Pod (by key) of every other node that listens on a TCP port.
    for (const n of w.nodes) {
      if (n.name === node) continue;
      const q = live.find((x) => x.spec.nodeName === n.name && x.spec.containers.some((c) => c.ports.some((cp) => cp.protocol === 'TCP')));
      if (q === undefined) continue;
      const port = q.spec.containers.flatMap((c) => c.ports).find((cp) => cp.protocol === 'TCP')?.containerPort ?? 0;
      const to = q.status.podIP ?? '';
      const qHost = hostOf(q);
      const src = p.status.podIP ?? '';
      out.push({
        id: `pod to pod ${podKey(p)} → ${podKey(q)}:${port}`,
        expectation: `${p.metadata.uid}|${src}|${q.metadata.uid}|${to}`,
        nodes: [node, n.name],
        run(now) {
          const o = dp.probeTcp(from, to, port, now);
          if (!o.ok) return fail(o, `${podKey(p)} on ${node} cannot reach ${podKey(q)} at ${to}:${port} on ${n.name}: ${fmt(o)}`);
          if (o.server !== qHost) return fail(o, `${podKey(p)}'s connection to ${to}:${port} (${podKey(q)}) was accepted by ${o.server ?? '?'}`);
          if (ipOf(o.peer) !== src) return fail(o, `${podKey(p)}'s connection to ${podKey(q)} at ${to}:${port} arrives from ${o.peer ?? '?'}: Pod-to-Pod traffic lost its source ${src} (masqueraded inside the cluster)`);
          return { ok: true, message: '' };
        },
      });
    }
  }

  // ---- Services ----
  const slices = w.endpointSlices();
  for (const svc of w.services()) {
    const clusterIP = svc.spec.clusterIP;
    if (clusterIP === undefined || clusterIP === '' || clusterIP === 'None') continue;
    const name = `${svc.metadata.namespace}/${svc.metadata.name}`;
    for (const sp of svc.spec.ports) {
      if (sp.protocol !== 'TCP' && sp.protocol !== 'UDP') continue;
      const udp = sp.protocol === 'UDP';
      const eps = endpointsOf(svc, sp, slices, byUid);
      // Every endpoint must answer on its port, or a failure could be the workload's, not the proxy's.
      if (eps.some((e) => e.pod === undefined || hostOf(e.pod) === undefined || e.pod.status.podIP !== e.ip || !listensOn(e.pod, e.port, sp.protocol))) continue;
      const cluster = usable(eps);
      // A UDP flow keeps its conntrack entry to an endpoint that turned terminating but still
      // serves: kube-proxy clears the flows of endpoints that stop serving, not of those that
      // drain (KEP-1669), so reaching one of those is no fault.
      // Such an endpoint going away is a change of what the flow may reach: the settle time starts again.
      const drainingEps = (list: readonly Ep[]): Ep[] => (udp ? list.filter((e) => e.serving && e.terminating) : []);
      const drainingOf = (list: readonly Ep[]): Set<string> => new Set(drainingEps(list).map((e) => hostOf(e.pod) ?? ''));
      /** Whether a flow that reached `server` met an endpoint it may reach: a wanted one, or a draining one it kept. */
      const mayReach = (server: string | null, want: ReadonlySet<string>, draining: ReadonlySet<string>): boolean => server !== null && (want.has(server) || draining.has(server));
      const hostsOf = (list: readonly Ep[]): Set<string> => new Set(list.map((e) => hostOf(e.pod) ?? ''));
      const sig = (list: readonly Ep[]): string => list.map((e) => `${e.ip}:${e.port}`).sort().join(',');
      const send = (from: string, to: string, port: number, id: string, now: number): ProbeOutcome & { readonly peer?: string; readonly reached?: string } => {
        if (!udp) return dp.probeTcp(from, to, port, now);
        const f = flows.get(id) ?? { generation: 0, answered: false };
        flows.set(id, f);
        const o = dp.probeUdp(from, to, port, stickyPort(`${id}#${f.generation}`), now);
        if (o.ok) f.answered = true;
        else if (!f.answered) f.generation++;
        return o;
      };
      const backendName = (host: string | null): string => {
        const e = eps.find((x) => hostOf(x.pod) === host);
        return e?.pod !== undefined ? `${podKey(e.pod)} (${e.ip})` : (host ?? '?');
      };
      if (cluster.length > 0) {
        // ClusterIP from Pods: every endpoint Pod (hairpin) and the first Pod of every node.
        const clients: Pod[] = [];
        for (const e of cluster) if (e.pod !== undefined && isPodLive(e.pod) && !clients.includes(e.pod)) clients.push(e.pod);
        for (const n of w.nodes) {
          const first = live.find((x) => x.spec.nodeName === n.name);
          if (first !== undefined && !clients.includes(first)) clients.push(first);
        }
        const want = hostsOf(cluster);
        const draining = drainingOf(eps);
        for (const c of clients) {
          const node = c.spec.nodeName ?? '';
          if (!role(node, 'service-proxy')) continue;
          const from = hostOf(c);
          if (from === undefined) continue;
          const id = `ClusterIP ${name}:${sp.port}/${sp.protocol} from ${podKey(c)}`;
          out.push({
            id,
            expectation: `${c.metadata.uid}|${sig(cluster)}|${sig(drainingEps(eps))}`,
            nodes: [node, ...cluster.map((e) => e.node)],
            run(now) {
              const o = send(from, clusterIP, sp.port, id, now);
              // A reply from another Pod of the same bridge is switched straight back to the client
              // (br_netfilter is not modelled): the data plane cannot judge that path.
              const reached = ('reached' in o ? o.reached : undefined) ?? o.server ?? undefined;
              if (!o.ok && reached !== undefined && reached !== from && cluster.some((e) => hostOf(e.pod) === reached && e.node === node)) return { ok: true, message: '', inconclusive: true };
              if (!o.ok) return fail(o, `${podKey(c)} on ${node} cannot reach Service ${name} at ${clusterIP}:${sp.port}/${sp.protocol}${cluster.some((e) => e.pod === c) ? ' (it is one of its endpoints)' : ''}: ${fmt(o)}; endpoints ${sig(cluster)}`);
              if (!mayReach(o.server, want, draining)) return fail(o, `${podKey(c)}'s ${sp.protocol} flow to Service ${name} at ${clusterIP}:${sp.port} reached ${backendName(o.server)}, not one of its endpoints ${sig(cluster)}`);
              return { ok: true, message: '' };
            },
          });
        }
      }
      // NodePort from outside, on every node whose agents proxy Services.
      const nodePort = sp.nodePort;
      if ((svc.spec.type !== 'NodePort' && svc.spec.type !== 'LoadBalancer') || nodePort === undefined) continue;
      const local = svc.spec.externalTrafficPolicy === 'Local';
      for (const n of w.nodes) {
        if (!role(n.name, 'service-proxy')) continue;
        // The policy is part of the flow's identity: a UDP flow keeps its source port (and its
        // conntrack entry) across endpoint changes, but a policy change is a new flow, since
        // kube-proxy does not clear the conntrack entries of a Service whose policy changed.
        const id = `NodePort ${name} ${n.ip}:${nodePort}/${sp.protocol} from ${LB_IP} (${local ? 'Local' : 'Cluster'})`;
        if (!local) {
          if (cluster.length === 0) continue;
          const want = hostsOf(cluster);
          const draining = drainingOf(eps);
          out.push({
            id,
            expectation: `cluster|${sig(cluster)}|${sig(drainingEps(eps))}`,
            nodes: [n.name, ...cluster.map((e) => e.node)],
            run(now) {
              const o = send('lb', n.ip, nodePort, id, now);
              if (!o.ok) return fail(o, `an external client (${LB_IP}) cannot reach Service ${name} at node port ${n.ip}:${nodePort}/${sp.protocol} on ${n.name}: ${fmt(o)}; endpoints ${sig(cluster)}`);
              if (!mayReach(o.server, want, draining)) return fail(o, `an external ${sp.protocol} flow to ${n.ip}:${nodePort} (Service ${name}) reached ${backendName(o.server)}, not one of its endpoints ${sig(cluster)}`);
              return { ok: true, message: '' };
            },
          });
          continue;
        }
        const nodeEps = eps.filter((e) => e.node === n.name);
        const mine = usable(nodeEps);
        const want = hostsOf(mine);
        const draining = drainingOf(nodeEps);
        out.push({
          id,
          expectation: `local|${sig(mine)}|${sig(drainingEps(nodeEps))}`,
          nodes: [n.name],
          run(now) {
            const o = send('lb', n.ip, nodePort, id, now);
            if (mine.length === 0) {
              if (!o.ok) return { ok: true, message: '' };
              // A UDP flow keeps its port, so its conntrack entry keeps the DNAT to an endpoint on
              // another node it met before the proxy applied the policy: kube-proxy clears flows of
              // endpoints that went away, not of a changed policy, and this endpoint still serves.
              // A fresh flow tells whether the rules drop it now.
              if (udp && o.server !== null && hostsOf(cluster).has(o.server) && !dp.probeUdp('lb', n.ip, nodePort, undefined, now).ok) return { ok: true, message: '' };
              return fail(o, `an external ${sp.protocol} flow to ${n.ip}:${nodePort} (Service ${name}, externalTrafficPolicy Local) reached ${backendName(o.server)}, but ${n.name} has no endpoint of it: it must be dropped there`);
            }
            if (!o.ok) return fail(o, `an external client (${LB_IP}) cannot reach Service ${name} (externalTrafficPolicy Local) at ${n.ip}:${nodePort}/${sp.protocol}: ${fmt(o)}; ${n.name}'s endpoints ${sig(mine)}`);
            // A UDP flow keeps its port, so its conntrack entry keeps the NAT of the rules it first
            // met (a DNAT to another node's endpoint, or a masquerade, of a moment before the
            // proxy applied the policy): kube-proxy clears UDP entries of removed endpoints, not
            // of a changed policy. A fresh flow tells whether the rules are right now.
            if ((!mayReach(o.server, want, draining) || ipOf(o.peer) !== LB_IP) && udp) {
              const fresh = dp.probeUdp('lb', n.ip, nodePort, undefined, now);
              if (fresh.ok && fresh.server !== null && want.has(fresh.server) && ipOf(fresh.peer) === LB_IP) return { ok: true, message: '' };
            }
            if (!mayReach(o.server, want, draining)) return fail(o, `an external ${sp.protocol} flow to ${n.ip}:${nodePort} (Service ${name}, externalTrafficPolicy Local) reached ${backendName(o.server)}, not one of ${n.name}'s own endpoints ${sig(mine)}`);
            if (ipOf(o.peer) !== LB_IP) return fail(o, `an external ${sp.protocol} flow from ${LB_IP} to ${n.ip}:${nodePort} (Service ${name}, externalTrafficPolicy Local) reached ${backendName(o.server)} from ${o.peer ?? '?'}: the client's source was not kept`);
            return { ok: true, message: '' };
          },
        });
      }
    }
  }

  // ---- Published mappings (NodePortLocal and the like) ----
  for (const n of w.nodes) {
    const decl = declaredAnnotations(agentsOf.get(n.name) ?? []);
    if (decl.length === 0) continue;
    for (const p of live) {
      if (p.spec.nodeName !== n.name) continue;
      const pHost = hostOf(p);
      for (const d of decl) {
        const text = p.metadata.annotations[d.key];
        if (text === undefined) continue;
        let mappings;
        try {
          mappings = d.parse(text);
        } catch {
          mappings = undefined;
        }
        for (const m of mappings ?? []) {
          if (!listensOn(p, m.podPort, m.protocol)) continue;
          const id = `${d.key} ${n.ip}:${m.nodePort}/${m.protocol} → ${podKey(p)}:${m.podPort}`;
          out.push({
            id,
            expectation: `${p.metadata.uid}|${p.status.podIP ?? ''}`,
            nodes: [n.name],
            run(now) {
              // A new flow each round: clearing conntrack when a mapping moves is a Service proxy's contract, not every mapper's.
              const o = m.protocol === 'UDP' ? dp.probeUdp('lb', n.ip, m.nodePort, undefined, now) : dp.probeTcp('lb', n.ip, m.nodePort, now);
              if (!o.ok) return fail(o, `${podKey(p)} publishes node port ${n.ip}:${m.nodePort}/${m.protocol} → ${m.podPort}, but an external client cannot reach it: ${fmt(o)}`);
              if (o.server !== pHost) return fail(o, `${podKey(p)} publishes node port ${n.ip}:${m.nodePort}/${m.protocol} → ${m.podPort}, but the connection was accepted by ${o.server ?? '?'}`);
              return { ok: true, message: '' };
            },
          });
        }
      }
    }
  }
  return out;
}

/**
 * The built-in datapath probes (see the module comment). They run every `everyMs` (default
 * 1000 ms) once the world attaches its data plane, and count every probe sent.
 *
 * @example
 * ```ts
 * const world = new World({ seed: 1, cluster, controller, invariants: [datapathProbes()] });
 * ```
 */
export function datapathProbes(opts: { readonly settleMs?: number; readonly everyMs?: number } = {}): () => ProbingInvariant {
  return () => {
    let count = 0;
    let results: Result[] = [];
    const expected = new Map<string, { readonly expectation: string; readonly sinceMs: number }>();
    const wasOk = new Map<string, boolean>();
    const flows: UdpFlows = new Map();
    return {
      name: DATAPATH_PROBES,
      needsDatapath: true,
      examined: () => count,
      attach(w) {
        w.every(opts.everyMs ?? 1000, 'datapath probes', () => {
          const now = w.nowMs();
          const next: Result[] = [];
          const seen = new Set<string>();
          for (const p of probesOf(w, flows)) {
            if (seen.has(p.id)) continue;
            seen.add(p.id);
            const before = expected.get(p.id);
            const sinceMs = before !== undefined && before.expectation === p.expectation ? before.sinceMs : now;
            expected.set(p.id, { expectation: p.expectation, sinceMs });
            const r = p.run(now);
            if (r.inconclusive !== true) count++;
            next.push({ id: p.id, ok: r.ok, message: r.message, atMs: now, nodes: [...new Set(p.nodes)].filter((x) => x !== ''), expectedSinceMs: sinceMs, state: { probe: p.id } });
            const prev = wasOk.get(p.id);
            // News only: a first failure, or a change.
            if (prev === undefined ? !r.ok : prev !== r.ok) w.emit('probe.result', { probe: p.id, ok: r.ok, outcome: r.ok ? 'ok' : 'failed', detail: r.message, builtin: true, ...(r.hops !== undefined ? { hops: r.hops } : {}) });
            wasOk.set(p.id, r.ok);
          }
          for (const id of [...expected.keys()]) if (!seen.has(id)) {
            expected.delete(id);
            wasOk.delete(id);
            flows.delete(id);
          }
          results = next;
        });
      },
      check(view: WorldView) {
        const settleMs = opts.settleMs ?? view.settleMs;
        for (const r of results) {
          if (r.ok) continue;
          let calm = r.expectedSinceMs;
          for (const n of r.nodes) calm = Math.max(calm, view.calmSince(n));
          if (r.nodes.length === 0) calm = Math.max(calm, view.lastDisruptionMs);
          if (r.atMs - calm <= settleMs) continue;
          return { message: `${r.message} (at t=${r.atMs}ms, ${r.atMs - calm}ms after ${r.nodes.join(', ') || 'the cluster'} last changed; settle time ${settleMs}ms)`, state: r.state };
        }
        return undefined;
      },
    };
  };
}
