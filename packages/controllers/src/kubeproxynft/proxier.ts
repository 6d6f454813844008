/**
 * kube-proxy in nftables mode (`pkg/proxy/nftables/proxier.go`), one per node, writing table
 * `ip kube-proxy` through `ctx.nft` as knftables does (one `nft -f -` transaction per sync):
 *
 * - Base chains `filter-prerouting`, `filter-input`, `filter-forward`, `filter-output` (filter,
 *   priority dstnat - 10: they see pre-DNAT addresses), `filter-output-post-dnat` (dstnat + 10),
 *   `nat-prerouting`, `nat-output` (dstnat) and `nat-postrouting` (srcnat), each jumping to the
 *   helper chains: `services` dispatches on the `service-ips` verdict map (ClusterIP . proto .
 *   port) and, for local destinations, `service-nodeports` (proto . port); `masquerading`
 *   masquerades what `mark-for-masquerade` marked (bit 0x4000); `service-endpoints-check` and
 *   `nodeport-endpoints-check` reject or drop through `no-endpoint-services` /
 *   `no-endpoint-nodeports`; `cluster-ips-check` rejects unknown ports of the `cluster-ips` set.
 * - Per service port: `service-HASH-ns/name/proto/port` (Cluster policy: off-cluster sources
 *   marked for masquerade, then `numgen random mod N vmap` over the endpoints),
 *   `local-HASH-…` (Local policy: this node's endpoints), `external-HASH-…` (NodePort entry:
 *   masquerade for Cluster policy; Pod and host sources short-circuited to the Cluster chain for
 *   Local), and per endpoint `endpoint-HASH-…__IP/port` (hairpin masquerade, `dnat to`).
 * - A full sync (the first one, the hourly one, and the one after any failure) re-creates and
 *   flushes the fixed chains, flushes the sets and maps and refills them. A partial sync writes
 *   only the map elements that changed (kube-proxy keeps what it wrote in memory) and the chains
 *   of the Services that changed. Chains no longer used are flushed and deleted at least one
 *   second later (kernels before 6.2 see a chain unreferenced only a little after the element
 *   pointing to it is gone); a chain used again before then leaves the to-delete list.
 * - After a successful sync, conntrack entries of UDP endpoints that went away are deleted.
 */
import type { ControllerContext, InformerHandle } from '@netsim/sim';
import { isNftExecError } from '@netsim/sim';
import { errorMessage, isProgrammerError } from '../errors.ts';
import { buildEndpointsMap, buildServicePortMap, categorizeEndpoints, type EndpointInfo, type ServicePortInfo } from '../kubeproxy/servicePorts.ts';
import {
  CLUSTER_IPS_CHECK_CHAIN,
  CLUSTER_IPS_SET,
  FIREWALL_CHECK_CHAIN,
  FIREWALL_IPS_MAP,
  KUBE_PROXY_TABLE,
  MARK_MASQ_CHAIN,
  MASQUERADING_CHAIN,
  NODEPORT_ENDPOINTS_CHECK_CHAIN,
  NODEPORT_IPS_SET,
  NO_ENDPOINT_NODEPORTS_MAP,
  NO_ENDPOINT_SERVICES_MAP,
  REJECT_CHAIN,
  SERVICES_CHAIN,
  SERVICE_ENDPOINTS_CHECK_CHAIN,
  SERVICE_IPS_MAP,
  SERVICE_NODEPORTS_MAP,
  isServiceChainName,
  servicePortChainNameBase,
  servicePortEndpointChainNameBase,
} from './names.ts';

/** `fmt.Sprintf("%#08x", 1<<14)`. */
export const NFT_MASQUERADE_MARK = '0x004000';
/** kube-proxy's full-sync period (the bounded-frequency runner's maximum interval). */
export const NFT_FULL_SYNC_PERIOD_MS = 3_600_000;
/** How long a chain stays flushed before kube-proxy deletes it. */
export const STALE_CHAIN_DELAY_MS = 1000;

/**
 * The bug the faulty proxy carries:
 * - `partial-sync-after-failure` (the default): after a failed transaction it goes on with partial
 *   syncs, the mechanism of kubernetes/kubernetes#112604 (reported for the iptables proxier; the
 *   nftables proxier has forced a full sync after every failed transaction since its first
 *   version, so this is that iptables bug transplanted, not an nftables-mode report);
 * - `stale-chain-reuse`: a chain flushed as unused and used again before its deletion was due
 *   stays in the stale list and is deleted under a reference a second later, failing the whole
 *   deletion transaction with "Device or resource busy" — kubernetes/kubernetes#122604, an
 *   nftables-mode bug, fixed by kubernetes/kubernetes#122605 (what the fixed proxy does).
 */
export type KubeProxyNftFlaw = 'partial-sync-after-failure' | 'stale-chain-reuse';

export interface NftProxierOptions {
  /** `--cluster-cidr` (`--detect-local-mode=ClusterCIDR`). */
  readonly clusterCidr: string;
  /** `--nftables-sync-period`: the retry delay after a failed sync. */
  readonly syncPeriodMs: number;
  /** `--nftables-min-sync-period`. */
  readonly minSyncPeriodMs: number;
  /** `--nodeport-addresses`: `all` (unset: every local address) or `primary` (the node's InternalIP). */
  readonly nodePortAddresses: 'all' | 'primary';
  readonly flaw?: KubeProxyNftFlaw;
}

interface BaseChain {
  readonly name: string;
  readonly type: 'filter' | 'nat';
  readonly hook: 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting';
  readonly priority: number;
}

/** The base chains, as knftables creates them (dstnat is -100, srcnat 100). */
export const NFT_BASE_CHAINS: readonly BaseChain[] = [
  { name: 'filter-prerouting', type: 'filter', hook: 'prerouting', priority: -110 },
  { name: 'filter-input', type: 'filter', hook: 'input', priority: -110 },
  { name: 'filter-forward', type: 'filter', hook: 'forward', priority: -110 },
  { name: 'filter-output', type: 'filter', hook: 'output', priority: -110 },
  { name: 'filter-output-post-dnat', type: 'filter', hook: 'output', priority: -90 },
  { name: 'nat-prerouting', type: 'nat', hook: 'prerouting', priority: -100 },
  { name: 'nat-output', type: 'nat', hook: 'output', priority: -100 },
  { name: 'nat-postrouting', type: 'nat', hook: 'postrouting', priority: 100 },
];

/** The jumps from the base chains to the top-level regular chains, in kube-proxy's order. */
export const NFT_JUMP_CHAINS: readonly { readonly dst: string; readonly src: string; readonly extra: string }[] = [
  { dst: NODEPORT_ENDPOINTS_CHECK_CHAIN, src: 'filter-input', extra: 'ct state new' },
  { dst: SERVICE_ENDPOINTS_CHECK_CHAIN, src: 'filter-input', extra: 'ct state new' },
  { dst: SERVICE_ENDPOINTS_CHECK_CHAIN, src: 'filter-forward', extra: 'ct state new' },
  { dst: SERVICE_ENDPOINTS_CHECK_CHAIN, src: 'filter-output', extra: 'ct state new' },
  { dst: FIREWALL_CHECK_CHAIN, src: 'filter-prerouting', extra: 'ct state new' },
  { dst: FIREWALL_CHECK_CHAIN, src: 'filter-output', extra: 'ct state new' },
  { dst: SERVICES_CHAIN, src: 'nat-output', extra: '' },
  { dst: SERVICES_CHAIN, src: 'nat-prerouting', extra: '' },
  { dst: MASQUERADING_CHAIN, src: 'nat-postrouting', extra: '' },
  { dst: CLUSTER_IPS_CHECK_CHAIN, src: 'filter-forward', extra: 'ct state new' },
  { dst: CLUSTER_IPS_CHECK_CHAIN, src: 'filter-output-post-dnat', extra: 'ct state new' },
];

/** One knftables transaction being built: the lines of `nft -f -`. */
class Tx {
  readonly lines: string[] = [];
  add(line: string): void {
    this.lines.push(line);
  }
  get empty(): boolean {
    return this.lines.length === 0;
  }
  text(): string {
    return `${this.lines.join('\n')}\n`;
  }
}

const T = `ip ${KUBE_PROXY_TABLE}`;

/** `{ KEY : VALUE }` of one element (`comment "…"` after the key, as knftables writes it). */
function elementBody(key: string, value: string | undefined, comment: string | undefined): string {
  return `{ ${key}${comment !== undefined ? ` comment "${comment}"` : ''}${value !== undefined ? ` : ${value}` : ''} }`;
}

/**
 * kube-proxy's `nftElementStorage`: what one set or map holds, as kube-proxy last wrote it. It
 * adds only new or changed elements and deletes the ones a sync no longer ensured.
 */
class ElementStorage {
  readonly #kind: 'set' | 'map';
  readonly #name: string;
  readonly #elements = new Map<string, string>();
  #leftover = new Set<string>();

  constructor(kind: 'set' | 'map', name: string) {
    this.#kind = kind;
    this.#name = name;
  }

  /** Forget everything and flush the container (full syncs). */
  reset(tx: Tx): void {
    this.#elements.clear();
    tx.add(`flush ${this.#kind} ${T} ${this.#name}`);
    this.#leftover = new Set();
  }

  ensure(tx: Tx, key: string, value?: string, comment?: string): void {
    const v = value ?? '';
    const existing = this.#elements.get(key);
    if (existing === undefined) {
      tx.add(`add element ${T} ${this.#name} ${elementBody(key, value, comment)}`);
      this.#elements.set(key, v);
      return;
    }
    if (existing !== v) {
      tx.add(`delete element ${T} ${this.#name} ${elementBody(key, undefined, undefined)}`);
      tx.add(`add element ${T} ${this.#name} ${elementBody(key, value, comment)}`);
      this.#elements.set(key, v);
    }
    this.#leftover.delete(key);
  }

  cleanupLeftovers(tx: Tx): void {
    for (const key of [...this.#leftover].sort()) {
      tx.add(`delete element ${T} ${this.#name} ${elementBody(key, undefined, undefined)}`);
      this.#elements.delete(key);
    }
    this.#leftover = new Set(this.#elements.keys());
  }
}

/** The port name of a service port (`ns/name:port` → `port`, `ns/name` → ``). */
function portName(svc: ServicePortInfo): string {
  return svc.nameString.length > svc.namespacedName.length ? svc.nameString.slice(svc.namespacedName.length + 1) : '';
}

interface NftServiceNames {
  readonly cluster: string;
  readonly local: string;
  readonly external: string;
}

function serviceNames(svc: ServicePortInfo): NftServiceNames {
  const base = servicePortChainNameBase(svc.namespacedName, portName(svc), svc.protocol);
  return { cluster: `service-${base}`, local: `local-${base}`, external: `external-${base}` };
}

function endpointChain(svc: ServicePortInfo, ep: EndpointInfo): string {
  return `endpoint-${servicePortEndpointChainNameBase(svc.namespacedName, portName(svc), svc.protocol, ep.str)}`;
}

/** The chain names `nft list table` shows (`\tchain NAME {`). */
export function listedChains(listing: string): string[] {
  const out: string[] = [];
  for (const line of listing.split('\n')) {
    const m = /^\tchain (\S+) \{$/.exec(line);
    if (m?.[1] !== undefined) out.push(m[1]);
  }
  return out;
}

/** conntrack-tools' message when `-D` matched nothing. */
const NO_CONNECTION_TO_DELETE = '0 flow entries have been deleted';

export class NftProxier {
  readonly ctx: ControllerContext;
  readonly opts: NftProxierOptions;
  readonly services: InformerHandle<'Service'>;
  readonly slices: InformerHandle<'EndpointSlice'>;
  readonly #queue;
  #initialized = false;
  #needFullSync = true;
  /** The first full sync of a process deletes and re-creates the base chains (their properties may have changed). */
  #flushed = false;
  #lastFullSyncMs = Number.NEGATIVE_INFINITY;
  #lastFingerprints = new Map<string, string>();
  #lastEndpoints = new Map<string, EndpointInfo[]>();
  /**
   * UDP endpoints gone since the last successful sync whose flows are still to be cleared: a
   * failed sync keeps them for the next one (kube-proxy's conntrack clean-up reconciles against the
   * current endpoints instead; see docs/fidelity.md).
   */
  #pendingStaleUdp: { readonly svc: ServicePortInfo; readonly ep: EndpointInfo }[] = [];
  /** Chains flushed as no longer used, and since when. */
  readonly staleChains = new Map<string, number>();
  readonly #clusterIPs = new ElementStorage('set', CLUSTER_IPS_SET);
  readonly #serviceIPs = new ElementStorage('map', SERVICE_IPS_MAP);
  readonly #firewallIPs = new ElementStorage('map', FIREWALL_IPS_MAP);
  readonly #noEndpointServices = new ElementStorage('map', NO_ENDPOINT_SERVICES_MAP);
  readonly #noEndpointNodePorts = new ElementStorage('map', NO_ENDPOINT_NODEPORTS_MAP);
  readonly #serviceNodePorts = new ElementStorage('map', SERVICE_NODEPORTS_MAP);

  constructor(ctx: ControllerContext, opts: NftProxierOptions) {
    this.ctx = ctx;
    this.opts = opts;
    this.services = ctx.informers.services();
    this.slices = ctx.informers.endpointSlices();
    this.#queue = ctx.workqueue<'sync'>('sync-runner');
  }

  async run(): Promise<void> {
    const request = (): void => {
      if (this.#initialized) this.#queue.add('sync');
    };
    this.services.addEventHandler({ onAdd: request, onUpdate: request, onDelete: request });
    this.slices.addEventHandler({ onAdd: request, onUpdate: request, onDelete: request });
    this.ctx.informers.start();
    if (!(await this.ctx.informers.waitForCacheSync())) return;
    this.#initialized = true;
    this.#queue.add('sync');
    this.ctx.go('sync-runner', () => this.#runner());
  }

  stop(): void {
    this.#queue.shutDown();
  }

  async #runner(): Promise<void> {
    for (;;) {
      const item = await this.#queue.get();
      if (item === undefined) return;
      let ok = false;
      try {
        ok = await this.syncProxyRules();
      } finally {
        this.#queue.done(item);
      }
      if (!ok) {
        this.ctx.log.info('Sync failed', { retryingTimeMs: this.opts.syncPeriodMs });
        this.#queue.addAfter('sync', this.opts.syncPeriodMs);
      }
      await this.ctx.sleep(this.opts.minSyncPeriodMs);
    }
  }

  /** Deletes the chains flushed at least a second ago, in one transaction of their own. */
  async #deleteStaleChains(now: number): Promise<void> {
    const tx = new Tx();
    for (const [chain, since] of [...this.staleChains].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (since >= now - STALE_CHAIN_DELAY_MS) continue;
      tx.add(`delete chain ${T} ${chain}`);
      this.staleChains.delete(chain);
    }
    if (tx.empty) return;
    this.ctx.log.info('Deleting stale nftables chains', { numChains: tx.lines.length });
    try {
      await this.ctx.nft.apply(tx.text());
    } catch (e) {
      if (isProgrammerError(e) || !isNftExecError(e)) throw e;
      // The chains still there are found stale again (with a later time) at the end of the sync.
      this.ctx.log.error('Unable to delete stale chains; will retry later', { error: errorMessage(e) });
    }
  }

  #setup(tx: Tx): void {
    tx.add(`add table ${T} { comment "rules for kube-proxy" ; }`);
    if (!this.#flushed) {
      for (const bc of NFT_BASE_CHAINS) {
        tx.add(`add chain ${T} ${bc.name}`);
        tx.add(`delete chain ${T} ${bc.name}`);
      }
      this.#flushed = true;
    }
    for (const bc of NFT_BASE_CHAINS) {
      tx.add(`add chain ${T} ${bc.name} { type ${bc.type} hook ${bc.hook} priority ${bc.priority} ; }`);
      tx.add(`flush chain ${T} ${bc.name}`);
    }
    const created = new Set<string>();
    for (const j of NFT_JUMP_CHAINS) {
      ensureChain(tx, j.dst, created, false);
      tx.add(`add rule ${T} ${j.src} ${j.extra !== '' ? `${j.extra} ` : ''}jump ${j.dst}`);
    }
    for (const c of [SERVICES_CHAIN, CLUSTER_IPS_CHECK_CHAIN, MASQUERADING_CHAIN, MARK_MASQ_CHAIN]) ensureChain(tx, c, created, false);
    tx.add(`add rule ${T} ${MARK_MASQ_CHAIN} mark set mark or ${NFT_MASQUERADE_MARK}`);
    tx.add(`add rule ${T} ${MASQUERADING_CHAIN} mark and ${NFT_MASQUERADE_MARK} == 0 return`);
    tx.add(`add rule ${T} ${MASQUERADING_CHAIN} mark set mark xor ${NFT_MASQUERADE_MARK}`);
    tx.add(`add rule ${T} ${MASQUERADING_CHAIN} masquerade fully-random`);
    tx.add(`add set ${T} ${CLUSTER_IPS_SET} { type ipv4_addr ; comment "Active ClusterIPs" ; }`);
    tx.add(`add rule ${T} ${CLUSTER_IPS_CHECK_CHAIN} ip daddr @${CLUSTER_IPS_SET} reject comment "Reject traffic to invalid ports of ClusterIPs"`);
    tx.add(`add set ${T} ${NODEPORT_IPS_SET} { type ipv4_addr ; comment "IPs that accept NodePort traffic" ; }`);
    const all = this.opts.nodePortAddresses === 'all';
    if (all) tx.add(`delete set ${T} ${NODEPORT_IPS_SET}`);
    else {
      tx.add(`flush set ${T} ${NODEPORT_IPS_SET}`);
      tx.add(`add element ${T} ${NODEPORT_IPS_SET} { ${this.ctx.nodeInfo.ip} }`);
    }
    tx.add(`add map ${T} ${NO_ENDPOINT_SERVICES_MAP} { type ipv4_addr . inet_proto . inet_service : verdict ; comment "vmap to drop or reject packets to services with no endpoints" ; }`);
    tx.add(`add map ${T} ${NO_ENDPOINT_NODEPORTS_MAP} { type inet_proto . inet_service : verdict ; comment "vmap to drop or reject packets to service nodeports with no endpoints" ; }`);
    tx.add(`add chain ${T} ${REJECT_CHAIN} { comment "helper for @no-endpoint-services / @no-endpoint-nodeports" ; }`);
    tx.add(`flush chain ${T} ${REJECT_CHAIN}`);
    tx.add(`add rule ${T} ${REJECT_CHAIN} reject`);
    tx.add(`add rule ${T} ${SERVICE_ENDPOINTS_CHECK_CHAIN} ip daddr . meta l4proto . th dport vmap @${NO_ENDPOINT_SERVICES_MAP}`);
    if (all) tx.add(`add rule ${T} ${NODEPORT_ENDPOINTS_CHECK_CHAIN} ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @${NO_ENDPOINT_NODEPORTS_MAP}`);
    else tx.add(`add rule ${T} ${NODEPORT_ENDPOINTS_CHECK_CHAIN} ip daddr @${NODEPORT_IPS_SET} meta l4proto . th dport vmap @${NO_ENDPOINT_NODEPORTS_MAP}`);
    tx.add(`add map ${T} ${FIREWALL_IPS_MAP} { type ipv4_addr . inet_proto . inet_service : verdict ; comment "destinations that are subject to LoadBalancerSourceRanges" ; }`);
    tx.add(`add rule ${T} ${FIREWALL_CHECK_CHAIN} ip daddr . meta l4proto . th dport vmap @${FIREWALL_IPS_MAP}`);
    tx.add(`add map ${T} ${SERVICE_IPS_MAP} { type ipv4_addr . inet_proto . inet_service : verdict ; comment "ClusterIP, ExternalIP and LoadBalancer IP traffic" ; }`);
    tx.add(`add map ${T} ${SERVICE_NODEPORTS_MAP} { type inet_proto . inet_service : verdict ; comment "NodePort traffic" ; }`);
    tx.add(`add rule ${T} ${SERVICES_CHAIN} ip daddr . meta l4proto . th dport vmap @${SERVICE_IPS_MAP}`);
    if (all) tx.add(`add rule ${T} ${SERVICES_CHAIN} fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @${SERVICE_NODEPORTS_MAP}`);
    else tx.add(`add rule ${T} ${SERVICES_CHAIN} ip daddr @${NODEPORT_IPS_SET} meta l4proto . th dport vmap @${SERVICE_NODEPORTS_MAP}`);
    for (const s of [this.#clusterIPs, this.#serviceIPs, this.#firewallIPs, this.#noEndpointServices, this.#noEndpointNodePorts, this.#serviceNodePorts]) s.reset(tx);
  }

  /** One sync. Returns false when it failed (and must be retried). */
  async syncProxyRules(): Promise<boolean> {
    const now = this.ctx.now();
    if (now - this.#lastFullSyncMs >= NFT_FULL_SYNC_PERIOD_MS) this.#needFullSync = true;
    const tryPartialSync = !this.#needFullSync;
    const svcPortMap = buildServicePortMap(this.services.lister.keys().flatMap((k) => this.services.lister.getByKey(k) ?? []));
    const endpointsMap = buildEndpointsMap(
      this.slices.lister.keys().flatMap((k) => this.slices.lister.getByKey(k) ?? []),
      this.ctx.node,
    );
    // The change trackers' view: which Services changed since the last sync, which UDP endpoints went away.
    const fingerprints = new Map<string, string>();
    for (const svc of svcPortMap.values()) fingerprints.set(svc.namespacedName, (fingerprints.get(svc.namespacedName) ?? '') + JSON.stringify([svc, endpointsMap.get(svc.key) ?? []]));
    const updated = new Set<string>();
    for (const [nn, fp] of fingerprints) if (this.#lastFingerprints.get(nn) !== fp) updated.add(nn);
    const staleUdp = this.#pendingStaleUdp;
    this.#pendingStaleUdp = [];
    for (const svc of svcPortMap.values()) {
      if (svc.protocol !== 'udp') continue;
      const cur = new Set((endpointsMap.get(svc.key) ?? []).map((e) => e.str));
      for (const e of this.#lastEndpoints.get(svc.key) ?? []) if (!cur.has(e.str)) staleUdp.push({ svc, ep: e });
    }
    this.#lastFingerprints = fingerprints;
    this.#lastEndpoints = endpointsMap;

    if (this.staleChains.size > 0) await this.#deleteStaleChains(now);

    const tx = new Tx();
    if (!tryPartialSync) this.#setup(tx);
    const activeChains = new Set<string>();
    const masqLocal = `ip saddr ${this.opts.clusterCidr}`;
    const masqNotLocal = `ip saddr != ${this.opts.clusterCidr}`;
    for (const svc of svcPortMap.values()) {
      const { protocol } = svc;
      const names = serviceNames(svc);
      const cat = categorizeEndpoints(endpointsMap.get(svc.key) ?? [], svc);
      const skip = tryPartialSync && !updated.has(svc.namespacedName);
      for (const ep of cat.allLocallyReachableEndpoints) ensureChain(tx, endpointChain(svc, ep), activeChains, skip);
      const usesClusterPolicyChain = cat.clusterEndpoints.length > 0;
      if (usesClusterPolicyChain) ensureChain(tx, names.cluster, activeChains, skip);
      const usesLocalPolicyChain = cat.localEndpoints.length > 0 && svc.externalPolicyLocal;
      if (usesLocalPolicyChain) ensureChain(tx, names.local, activeChains, skip);
      const internalTrafficChain = names.cluster;
      const hasInternalEndpoints = cat.hasEndpoints;
      let externalPolicyChain = names.cluster;
      let hasExternalEndpoints = cat.hasEndpoints;
      if (svc.externalPolicyLocal) {
        externalPolicyChain = names.local;
        if (cat.localEndpoints.length === 0) hasExternalEndpoints = false;
      }
      const usesExternalTrafficChain = cat.hasEndpoints && svc.nodePort !== 0;
      if (usesExternalTrafficChain) ensureChain(tx, names.external, activeChains, skip);
      const internalVerdict = cat.hasEndpoints ? 'drop' : `goto ${REJECT_CHAIN}`;
      const externalVerdict = cat.hasEndpoints ? 'drop' : `goto ${REJECT_CHAIN}`;

      const key = `${svc.clusterIP} . ${protocol} . ${svc.port}`;
      this.#clusterIPs.ensure(tx, svc.clusterIP);
      if (hasInternalEndpoints) this.#serviceIPs.ensure(tx, key, `goto ${internalTrafficChain}`);
      else this.#noEndpointServices.ensure(tx, key, internalVerdict, svc.nameString);
      if (svc.nodePort !== 0) {
        const npKey = `${protocol} . ${svc.nodePort}`;
        if (cat.hasEndpoints) this.#serviceNodePorts.ensure(tx, npKey, `goto ${names.external}`);
        if (!hasExternalEndpoints) this.#noEndpointNodePorts.ensure(tx, npKey, externalVerdict, svc.nameString);
      }
      if (skip) continue;

      if (hasInternalEndpoints) tx.add(`add rule ${T} ${internalTrafficChain} ip daddr ${svc.clusterIP} ${protocol} dport ${svc.port} ${masqNotLocal} jump ${MARK_MASQ_CHAIN}`);
      if (usesExternalTrafficChain) {
        if (!svc.externalPolicyLocal) tx.add(`add rule ${T} ${names.external} jump ${MARK_MASQ_CHAIN}`);
        else {
          tx.add(`add rule ${T} ${names.external} ${masqLocal} goto ${names.cluster} comment "short-circuit pod traffic"`);
          tx.add(`add rule ${T} ${names.external} fib saddr type local jump ${MARK_MASQ_CHAIN} comment "masquerade local traffic"`);
          tx.add(`add rule ${T} ${names.external} fib saddr type local goto ${names.cluster} comment "short-circuit local traffic"`);
        }
        if (hasExternalEndpoints) tx.add(`add rule ${T} ${names.external} goto ${externalPolicyChain}`);
      }
      if (usesClusterPolicyChain) writeServiceToEndpointRules(tx, svc, names.cluster, cat.clusterEndpoints);
      if (usesLocalPolicyChain) writeServiceToEndpointRules(tx, svc, names.local, cat.localEndpoints);
      for (const ep of cat.allLocallyReachableEndpoints) {
        const chain = endpointChain(svc, ep);
        // Hairpin: a Pod reaching itself through the Service must be masqueraded.
        tx.add(`add rule ${T} ${chain} ip saddr ${ep.ip} jump ${MARK_MASQ_CHAIN}`);
        tx.add(`add rule ${T} ${chain} meta l4proto ${protocol} dnat to ${ep.str}`);
      }
    }

    // Chains no longer used: flush them now, delete them a second later.
    const listed = await this.ctx.nft.run(['list', 'table', 'ip', KUBE_PROXY_TABLE]);
    if (listed.exitCode === 0) {
      for (const chain of listedChains(listed.stdout)) {
        if (!isServiceChainName(chain)) continue;
        if (!activeChains.has(chain)) {
          tx.add(`flush chain ${T} ${chain}`);
          if (!this.staleChains.has(chain)) this.staleChains.set(chain, now);
        } else {
          // Used again before it was deleted (kubernetes/kubernetes#122604; the flaw keeps it listed).
          if (this.opts.flaw !== 'stale-chain-reuse') this.staleChains.delete(chain);
        }
      }
    } else if (!/No such file or directory/.test(listed.stderr)) {
      this.ctx.log.error('Failed to list nftables chains: stale chains will not be deleted', { error: listed.stderr.trim() });
    }
    for (const s of [this.#clusterIPs, this.#serviceIPs, this.#firewallIPs, this.#noEndpointServices, this.#noEndpointNodePorts, this.#serviceNodePorts]) s.cleanupLeftovers(tx);

    try {
      if (!tx.empty) await this.ctx.nft.apply(tx.text());
    } catch (e) {
      if (isProgrammerError(e) || !isNftExecError(e)) throw e;
      this.ctx.log.error('nftables sync failed', { error: errorMessage(e) });
      // The stale-chain bookkeeping assumed the flushes happened.
      this.staleChains.clear();
      // The change trackers are spent and the element storage recorded writes that never
      // happened: only a full sync can recover. The flaw goes on with partial syncs.
      if (this.opts.flaw !== 'partial-sync-after-failure') this.#needFullSync = true;
      this.#pendingStaleUdp = staleUdp;
      return false;
    }
    this.#needFullSync = false;
    if (!tryPartialSync) this.#lastFullSyncMs = now;
    for (const { svc, ep } of staleUdp) {
      // Back again since (a failed sync kept it): its flows are current.
      if ((endpointsMap.get(svc.key) ?? []).some((e) => e.str === ep.str)) continue;
      if (svc.nodePort !== 0) await this.#conntrackDelete(['-p', 'udp', '--dport', String(svc.nodePort), '--dst-nat', ep.ip]);
      await this.#conntrackDelete(['--orig-dst', svc.clusterIP, '--dst-nat', ep.ip, '-p', 'udp']);
    }
    return true;
  }

  async #conntrackDelete(argv: readonly string[]): Promise<void> {
    const r = await this.ctx.conntrack.run(['-D', ...argv]);
    if (r.exitCode !== 0 && !r.stderr.includes(NO_CONNECTION_TO_DELETE)) this.ctx.log.error('Failed to delete conntrack entries', { argv: argv.join(' '), error: r.stderr.trim() });
  }
}

/** `ensureChain`: add and flush a chain once per transaction; a skipped Service's chains are only noted as used. */
function ensureChain(tx: Tx, chain: string, created: Set<string>, skipCreation: boolean): void {
  if (created.has(chain)) return;
  created.add(chain);
  if (skipCreation) return;
  tx.add(`add chain ${T} ${chain}`);
  tx.add(`flush chain ${T} ${chain}`);
}

function writeServiceToEndpointRules(tx: Tx, svc: ServicePortInfo, chain: string, endpoints: readonly EndpointInfo[]): void {
  const elements = endpoints.map((ep, i) => `${i} : goto ${endpointChain(svc, ep)}`).join(' , ');
  tx.add(`add rule ${T} ${chain} numgen random mod ${endpoints.length} vmap { ${elements} }`);
}
