/**
 * The read-only view of the world that invariants and probes observe. Checkers look at the world
 * from outside (TigerBeetle's StateChecker): they never share state with the controller under
 * test, and every object they get is immutable.
 */
import { formatIpv4, type Rule, type Ruleset, type TableName } from '@netsim/netfilter';
import type { Pod, Service } from '@netsim/kube';
import type { Ruleset as NftRuleset } from '@netsim/nftables';
import type { AgentState, ControllerDeclaration } from './agent.ts';

/** A node as the world built it. */
export interface NodeInfo {
  readonly name: string;
  /** The node's InternalIP. */
  readonly ip: string;
  /** The node's Pod CIDR (`a.b.c.d/n`). */
  readonly podCidr: string;
}

/** The last result of one probe target. */
export interface ProbeRecord {
  /** Stable id, e.g. `npl-health lb→node-1:61001`. */
  readonly id: string;
  readonly kind: string;
  readonly ok: boolean;
  /** `established`, `reset`, `timeout`, … and why. */
  readonly outcome: string;
  readonly detail: string;
  readonly atMs: number;
  /** The node whose agents the result depends on (absent: any node's). */
  readonly node?: string;
}

/** Who had an IP last: how a message can say "10.244.1.5 was web-0". */
export interface IpOwner {
  readonly pod: string;
  readonly uid: string;
  readonly node: string;
  /** When that Pod got the IP. */
  readonly sinceMs?: number;
}

/** One agent as checkers see it: its lifecycle and what its controller declares. */
export interface AgentView {
  /** `node/controller`. */
  readonly name: string;
  readonly node: string;
  readonly state: AgentState;
  readonly incarnation: number;
  readonly declares?: ControllerDeclaration;
  /** Times its process failed on its own (a controller error under the crash policy), not by an injected fault. */
  readonly ownFailuresMs: readonly number[];
  /** Why each of those failures happened (the controller's error), in the same order. */
  readonly ownFailureReasons?: readonly string[];
}

/** A read-only view of the world after a step. */
export interface WorldView {
  readonly nowMs: number;
  readonly nodes: readonly NodeInfo[];
  /** The node's current rules (its kernel state). */
  ruleset(node: string): Ruleset;
  /** The node's current nftables ruleset (its kernel state); absent in hand-made views: none. */
  nftRuleset?(node: string): NftRuleset;
  /** Every Pod in the API server, sorted by key. */
  pods(): readonly Pod[];
  /** Every Service in the API server, sorted by key. */
  services(): readonly Service[];
  /** The state of the controller under test's agent on `node` (`down` when none runs there). */
  agentState(node: string): AgentState;
  /** The latest result of every probe target, sorted by id. */
  probes(): readonly ProbeRecord[];
  /** The run's default settle time: how long transient disagreement is tolerated after a disruption. */
  readonly settleMs: number;
  /**
   * When the cluster was last disturbed anywhere (Kubernetes change, fault, injected restart); the
   * current time while a disruption is in progress; -1 if none yet. Reading it changes nothing.
   */
  readonly lastDisruptionMs: number;
  /**
   * Since when `node` has been calm: the end of the latest disruption of that node or of every
   * node (the current time while one is in progress), -1 if none. A process restarting after its
   * own failure is no disruption. Reading it changes nothing.
   */
  calmSince(node: string): number;
  /** Every agent on `node`, the controller under test's first (absent in hand-made views: none). */
  agents?(node: string): readonly AgentView[];
  /** Every `informer.resync` so far, in order: which node's agents, when (absent in hand-made views: none). */
  resyncs?(): readonly { readonly node: string; readonly atMs: number }[];
  /** The latest times (ascending, a bounded number) at which a command on `node` met an injected iptables or nft failure. */
  injectedFailuresMs?(node: string): readonly number[];
  /** How many times `node` rebooted (its kernel state lost); absent: never. */
  boots?(node: string): number;
  /** The last Pod that had `ip` (now or before), if any. */
  ipOwner(ip: string): IpOwner | undefined;
  /** Ask for invariants to be checked again at `atMs` (when a settle time ends), even if nothing else happens then. */
  recheckAt(atMs: number): void;
}

/** A Pod that is (or should be) serving: bound to the node, running with an IP, not terminating. */
export function isPodLive(p: Pod): boolean {
  return p.status.phase === 'Running' && p.status.podIP !== undefined && p.status.podIP !== '' && p.metadata.deletionTimestamp === undefined;
}

/** `namespace/name`. */
export function podKey(p: Pod): string {
  return `${p.metadata.namespace}/${p.metadata.name}`;
}

/** A DNAT rule as invariants see it. */
export interface DnatRule {
  readonly table: TableName;
  readonly chain: string;
  /** 1-based position in the chain. */
  readonly index: number;
  /** 6 tcp, 17 udp, 0 any. */
  readonly proto: number;
  readonly dport?: number;
  readonly toIp?: string;
  readonly toPort?: number;
  readonly rule: Rule;
}

/** `tcp --dport 61001 → 10.244.1.5:8080` */
export function describeDnat(d: Pick<DnatRule, 'proto' | 'dport' | 'toIp' | 'toPort'>): string {
  const proto = d.proto === 6 ? 'tcp ' : d.proto === 17 ? 'udp ' : '';
  const port = d.dport !== undefined ? `--dport ${d.dport} ` : '';
  return `${proto}${port}→ ${d.toIp ?? '?'}${d.toPort !== undefined ? `:${d.toPort}` : ''}`;
}

/** The DNAT rules of a chain (an absent chain has none). */
export function dnatRules(ruleset: Ruleset, table: TableName, chain: string): DnatRule[] {
  const c = ruleset.tables[table].chains[chain];
  if (c === undefined) return [];
  const out: DnatRule[] = [];
  c.rules.forEach((rule, i) => {
    const t = rule.target;
    if (t?.kind !== 'DNAT') return;
    let dport: number | undefined;
    for (const m of rule.matches) {
      if ((m.kind === 'tcp' || m.kind === 'udp') && m.dport !== undefined && !m.dport.negate && m.dport.range.from === m.dport.range.to) dport = m.dport.range.from;
    }
    const proto = rule.proto !== undefined && !rule.proto.negate ? rule.proto.proto : 0;
    out.push({
      table,
      chain,
      index: i + 1,
      proto,
      ...(dport !== undefined ? { dport } : {}),
      ...(t.to?.minIp !== undefined ? { toIp: formatIpv4(t.to.minIp) } : {}),
      ...(t.to?.minPort !== undefined ? { toPort: t.to.minPort } : {}),
      rule,
    });
  });
  return out;
}

/** A canonical text of a rule for equality (object keys sorted, counters ignored). */
export function ruleIdentity(rule: Rule): string {
  const { counters: _counters, ...rest } = rule;
  return canonical(rest);
}

/**
 * `JSON.stringify` with object keys sorted and undefined-valued keys left out (array elements
 * print `undefined`, holes nothing). Written as plain loops: it runs on every new rule.
 */
function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'undefined';
  if (Array.isArray(v)) {
    let s = '[';
    for (let i = 0; i < v.length; i++) {
      if (i > 0) s += ',';
      if (i in v) s += canonical(v[i]);
    }
    return s + ']';
  }
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  let n = 0;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    if (o[k] !== undefined) keys[n++] = k;
  }
  keys.length = n;
  keys.sort();
  let s = '{';
  for (let i = 0; i < n; i++) {
    const k = keys[i] as string;
    if (i > 0) s += ',';
    s += JSON.stringify(k) + ':' + canonical(o[k]);
  }
  return s + '}';
}
