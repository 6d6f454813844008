/**
 * kube-proxy in iptables mode (`pkg/proxy/iptables/proxier.go`), one per node:
 *
 * - Service and EndpointSlice informers; every change requests a sync. Syncs are serialised and
 *   spaced by `minSyncPeriod` (kube-proxy's bounded-frequency runner); a failed sync is retried
 *   after `syncPeriod` and forces the next one to be full.
 * - `syncProxyRules` writes every kube-proxy chain of the filter and nat tables in **one**
 *   `iptables-restore --noflush --counters`: `KUBE-SERVICES`, `KUBE-NODEPORTS`, `KUBE-EXT-*`,
 *   `KUBE-SVC-*`/`KUBE-SVL-*` (statistic probabilities printed `%0.10f`), `KUBE-SEP-*` (hairpin
 *   mark, then DNAT), `KUBE-MARK-MASQ`, `KUBE-POSTROUTING`, filter `KUBE-EXTERNAL-SERVICES`,
 *   `KUBE-FORWARD`; stale service chains found with `iptables-save -t nat` are flushed and deleted
 *   in the same input. A full sync first ensures the jumps from the built-in chains (`-C`, then
 *   `-I`). Partial syncs leave out the per-service chains of Services that did not change.
 * - After a successful sync, conntrack entries of **UDP** services whose endpoints went away are
 *   deleted (`conntrack -D`), and so are all the flows of a UDP Service port that was not served
 *   until now (no endpoints, or no rules) or is gone (or moved to another address); TCP flows
 *   keep their DNAT.
 */
import type { ControllerContext, InformerHandle } from '@netsim/sim';
import { isIptablesError } from '@netsim/sim';
import { errorMessage, isProgrammerError } from '../errors.ts';
import type { ExternalChainWriter } from './externalChain.ts';
import type { KubeProxyFlaw } from './flaws.ts';
import { isServiceChainName } from './hash.ts';
import { buildEndpointsMap, buildServicePortMap, categorizeEndpoints, type EndpointInfo, type ServicePortInfo } from './servicePorts.ts';

/** nat and filter: every Service's cluster IP rule, then the jump to KUBE-NODEPORTS (always last). */
export const KUBE_SERVICES = 'KUBE-SERVICES';
/** filter: REJECT/DROP for NodePorts without (local) endpoints, from INPUT and FORWARD. */
export const KUBE_EXTERNAL_SERVICES = 'KUBE-EXTERNAL-SERVICES';
/** nat: one rule per NodePort, jumping to the Service's KUBE-EXT chain. */
export const KUBE_NODEPORTS = 'KUBE-NODEPORTS';
/** nat: masquerades what KUBE-MARK-MASQ marked, then clears the mark. */
export const KUBE_POSTROUTING = 'KUBE-POSTROUTING';
/** nat: sets the masquerade bit ({@link MASQUERADE_MARK}). */
export const KUBE_MARK_MASQ = 'KUBE-MARK-MASQ';
/** filter: accepts marked and established Service traffic in FORWARD, drops INVALID. */
export const KUBE_FORWARD = 'KUBE-FORWARD';
/** filter: load balancer source ranges (empty: netsim writes no LoadBalancer firewall). */
export const KUBE_PROXY_FIREWALL = 'KUBE-PROXY-FIREWALL';
/** filter: drops martian localnet traffic to localhost NodePorts. */
export const KUBE_FIREWALL = 'KUBE-FIREWALL';

/** `fmt.Sprintf("%#08x", 1<<14)`: the masquerade bit as kube-proxy prints it. */
export const MASQUERADE_MARK = '0x004000';
/** kube-proxy's `FullSyncPeriod`. */
const FULL_SYNC_PERIOD_MS = 3_600_000;

/** One jump from a built-in chain that a full sync ensures (`-C`, then `-I`). */
export interface JumpChain {
  readonly table: 'filter' | 'nat';
  readonly dstChain: string;
  readonly srcChain: string;
  readonly comment: string;
  readonly extraArgs: readonly string[];
}

const NEW: readonly string[] = ['-m', 'conntrack', '--ctstate', 'NEW'];

/** kube-proxy's jumps from the built-in chains, then kubelet's (which kube-proxy also ensures). */
export const JUMP_CHAINS: readonly JumpChain[] = [
  { table: 'filter', dstChain: KUBE_EXTERNAL_SERVICES, srcChain: 'INPUT', comment: 'kubernetes externally-visible service portals', extraArgs: NEW },
  { table: 'filter', dstChain: KUBE_EXTERNAL_SERVICES, srcChain: 'FORWARD', comment: 'kubernetes externally-visible service portals', extraArgs: NEW },
  { table: 'filter', dstChain: KUBE_NODEPORTS, srcChain: 'INPUT', comment: 'kubernetes health check service ports', extraArgs: [] },
  { table: 'filter', dstChain: KUBE_SERVICES, srcChain: 'FORWARD', comment: 'kubernetes service portals', extraArgs: NEW },
  { table: 'filter', dstChain: KUBE_SERVICES, srcChain: 'OUTPUT', comment: 'kubernetes service portals', extraArgs: NEW },
  { table: 'filter', dstChain: KUBE_FORWARD, srcChain: 'FORWARD', comment: 'kubernetes forwarding rules', extraArgs: [] },
  { table: 'filter', dstChain: KUBE_PROXY_FIREWALL, srcChain: 'INPUT', comment: 'kubernetes load balancer firewall', extraArgs: NEW },
  { table: 'filter', dstChain: KUBE_PROXY_FIREWALL, srcChain: 'OUTPUT', comment: 'kubernetes load balancer firewall', extraArgs: NEW },
  { table: 'filter', dstChain: KUBE_PROXY_FIREWALL, srcChain: 'FORWARD', comment: 'kubernetes load balancer firewall', extraArgs: NEW },
  { table: 'nat', dstChain: KUBE_SERVICES, srcChain: 'OUTPUT', comment: 'kubernetes service portals', extraArgs: [] },
  { table: 'nat', dstChain: KUBE_SERVICES, srcChain: 'PREROUTING', comment: 'kubernetes service portals', extraArgs: [] },
  { table: 'nat', dstChain: KUBE_POSTROUTING, srcChain: 'POSTROUTING', comment: 'kubernetes postrouting rules', extraArgs: [] },
  { table: 'filter', dstChain: KUBE_FIREWALL, srcChain: 'INPUT', comment: '', extraArgs: [] },
  { table: 'filter', dstChain: KUBE_FIREWALL, srcChain: 'OUTPUT', comment: '', extraArgs: [] },
];

export interface ProxierOptions {
  /** `--cluster-cidr`, used to tell Pod traffic from the rest (`--detect-local-mode=ClusterCIDR`). */
  readonly clusterCidr: string;
  /** `--iptables-sync-period`: the retry delay after a failed sync (default 30 s). */
  readonly syncPeriodMs: number;
  /** `--iptables-min-sync-period` (default 1 s). */
  readonly minSyncPeriodMs: number;
  /** How the `KUBE-EXT-*` chains are written: this is where the variants differ. */
  readonly writeExternalChain: ExternalChainWriter;
  /**
   * `--nodeport-addresses`: `all` (the flag unset: every local address, `-m addrtype --dst-type
   * LOCAL`) or `primary` (only the node's primary IP, one `-d IP` jump to `KUBE-NODEPORTS`).
   */
  readonly nodePortAddresses: 'all' | 'primary';
  /** Mutation suite only: the one bug this proxy carries. */
  readonly flaw?: KubeProxyFlaw;
}

/** `%0.10f` of 1/n. */
export function probability(n: number): string {
  return (1 / n).toFixed(10);
}

class Lines {
  readonly lines: string[] = [];
  constructor(readonly discard = false) {}
  write(...words: readonly string[]): void {
    if (!this.discard) this.lines.push(words.join(' '));
  }
}

/** A UDP endpoint that went away: its flows must be cleared from conntrack. */
export interface StaleUdpEndpoint {
  readonly service: ServicePortInfo;
  readonly endpoint: EndpointInfo;
}

/** conntrack-tools' message when `-D` matched nothing: not an error for kube-proxy. */
const NO_CONNECTION_TO_DELETE = '0 flow entries have been deleted';

export class Proxier {
  readonly ctx: ControllerContext;
  readonly opts: ProxierOptions;
  readonly services: InformerHandle<'Service'>;
  readonly slices: InformerHandle<'EndpointSlice'>;
  readonly #queue;
  #initialized = false;
  #needFullSync = true;
  #lastFullSyncMs = Number.NEGATIVE_INFINITY;
  /** What each Service looked like at the last sync (its ports and endpoints), to find the changed ones. */
  #lastFingerprints = new Map<string, string>();
  /** The endpoints map at the last sync, to find endpoints that went away. */
  #lastEndpoints = new Map<string, EndpointInfo[]>();
  /** The service ports at the last sync, to find the ones with no rules until now. */
  #lastServicePorts = new Map<string, ServicePortInfo>();
  /**
   * UDP clean-up a failed sync could not do: the change trackers are spent once read, so the
   * stale endpoints and newly served Services they reported wait here for the next sync that
   * succeeds (without this, a failed restore would leave stale UDP flows DNATed for good).
   */
  #pendingStale: StaleUdpEndpoint[] = [];
  /**
   * Whether this process has cleared UDP flows it cannot account for: a new process does not
   * know which endpoints went away while no proxy ran, so its first successful sync clears the
   * flows of every UDP Service (kube-proxy 1.32 and later reconciles the whole table instead).
   */
  #startupCleared = false;
  #pendingNewlyServed: ServicePortInfo[] = [];
  #pendingRetired: ServicePortInfo[] = [];

  constructor(ctx: ControllerContext, opts: ProxierOptions) {
    this.ctx = ctx;
    this.opts = opts;
    this.services = ctx.informers.services();
    this.slices = ctx.informers.endpointSlices();
    // The bounded-frequency runner: one "sync" item, coalesced while pending.
    this.#queue = ctx.workqueue<'sync'>('sync-runner');
  }

  async run(): Promise<void> {
    const request = (): void => {
      if (this.#initialized) this.#queue.add('sync');
    };
    // The flaw logs the deleted object's name without unwrapping a tombstone (a Go type assertion
    // without the ok check): a delete missed in a watch gap crashes the process.
    const onDelete = (obj: { readonly kind: string }): void => {
      if (this.opts.flaw === 'tombstone-crash') this.ctx.log.debug('delete', { name: (obj as unknown as { readonly metadata: { readonly name: string } }).metadata.name });
      request();
    };
    this.services.addEventHandler({ onAdd: request, onUpdate: request, onDelete });
    this.slices.addEventHandler({ onAdd: request, onUpdate: request, onDelete });
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
      if (!ok && this.opts.flaw === 'no-retry') this.ctx.log.info('Sync failed');
      else if (!ok) {
        this.ctx.log.info('Sync failed', { retryingTimeMs: this.opts.syncPeriodMs });
        this.#queue.addAfter('sync', this.opts.syncPeriodMs);
      }
      await this.ctx.sleep(this.opts.minSyncPeriodMs);
    }
  }

  async #ensureJumps(): Promise<boolean> {
    const ipt = this.ctx.iptables;
    for (const jump of JUMP_CHAINS) {
      const created = await ipt.run(['-t', jump.table, '-N', jump.dstChain]);
      if (created.exitCode !== 0 && !created.stderr.includes('Chain already exists')) {
        this.ctx.log.error('Failed to ensure chain exists', { table: jump.table, chain: jump.dstChain, error: created.stderr.trim() });
        return false;
      }
      const args = [...jump.extraArgs, ...(jump.comment !== '' ? ['-m', 'comment', '--comment', jump.comment] : []), '-j', jump.dstChain];
      // The flaw inserts without checking first: every full sync adds another jump.
      const exists = this.opts.flaw === 'duplicate-jumps' ? { exitCode: 1, stdout: '', stderr: '' } : await ipt.run(['-t', jump.table, '-C', jump.srcChain, ...args]);
      if (exists.exitCode === 0) continue;
      const inserted = exists.exitCode === 1 ? await ipt.run(['-t', jump.table, '-I', jump.srcChain, ...args]) : exists;
      if (inserted.exitCode !== 0) {
        this.ctx.log.error('Failed to ensure chain jumps', { table: jump.table, srcChain: jump.srcChain, dstChain: jump.dstChain, error: inserted.stderr.trim() });
        return false;
      }
    }
    return true;
  }

  /** One sync. Returns false when it failed (and must be retried). */
  async syncProxyRules(): Promise<boolean> {
    const now = this.ctx.now();
    const doFullSync = this.#needFullSync || now - this.#lastFullSyncMs > FULL_SYNC_PERIOD_MS;
    const allPorts = buildServicePortMap(this.services.lister.keys().flatMap((k) => this.services.lister.getByKey(k) ?? []));
    const svcPortMap = this.opts.flaw === 'udp-ignored' ? new Map([...allPorts].filter(([, p]) => p.protocol !== 'udp')) : allPorts;
    const endpointsMap = buildEndpointsMap(
      this.slices.lister.keys().flatMap((k) => this.slices.lister.getByKey(k) ?? []),
      this.ctx.node,
    );
    // The change trackers' view: which Services changed, which UDP endpoints went away.
    const fingerprints = new Map<string, string>();
    for (const svc of svcPortMap.values()) {
      const prev = fingerprints.get(svc.namespacedName) ?? '';
      // The flaw's change tracker sees Service changes only, not endpoint changes.
      const eps = this.opts.flaw === 'endpoint-changes-ignored' ? [] : (endpointsMap.get(svc.key) ?? []);
      fingerprints.set(svc.namespacedName, prev + JSON.stringify([svc, eps]));
    }
    const updated = new Set<string>();
    for (const [nn, fp] of fingerprints) if (this.#lastFingerprints.get(nn) !== fp) updated.add(nn);
    const stale: StaleUdpEndpoint[] = [];
    const newlyServed: ServicePortInfo[] = [];
    for (const svc of svcPortMap.values()) {
      if (svc.protocol !== 'udp') continue;
      const prevEps = this.#lastEndpoints.get(svc.key) ?? [];
      const curEps = endpointsMap.get(svc.key) ?? [];
      const cur = new Set(curEps.map((e) => e.str));
      for (const e of prevEps) if (!cur.has(e.str)) stale.push({ service: svc, endpoint: e });
      // A Service that had no endpoints left REJECT entries in conntrack: clear them once it has
      // some. So did one that had no rules at all, its endpoints known before it (re-created, or
      // seen after its EndpointSlice): traffic to its new address met no DNAT, and the entries'
      // no-NAT bindings would keep the flows off the endpoints (kube-proxy's conntrack reconciler,
      // 1.32 and later, deletes such entries; the event-based clean-up of 1.28 misses them).
      const before = this.#lastServicePorts.get(svc.key);
      const addressed = before !== undefined && before.clusterIP === svc.clusterIP && before.nodePort === svc.nodePort;
      if (curEps.length > 0 && (prevEps.length === 0 || !addressed)) newlyServed.push(svc);
    }
    // A UDP Service port that is gone (the Service deleted, the port removed or renamed) or moved
    // to another cluster IP or node port: flows DNATed through it would keep reaching its old
    // endpoints, whatever the address serves now. kube-proxy 1.28 clears the cluster IP of a
    // deleted UDP port (DeletedUDPClusterIPs) but not its node port, whose flows the conntrack
    // reconciler clears only since kubernetes/kubernetes#139629.
    const retired: ServicePortInfo[] = [];
    for (const [key, before] of this.#lastServicePorts) {
      if (before.protocol !== 'udp') continue;
      const after = svcPortMap.get(key);
      if (after === undefined || after.clusterIP !== before.clusterIP || after.nodePort !== before.nodePort) retired.push(before);
    }
    this.#lastFingerprints = fingerprints;
    this.#lastEndpoints = endpointsMap;
    this.#lastServicePorts = svcPortMap;
    stale.push(...this.#pendingStale);
    newlyServed.push(...this.#pendingNewlyServed);
    retired.push(...this.#pendingRetired);
    this.#pendingStale = [];
    this.#pendingNewlyServed = [];
    this.#pendingRetired = [];
    const postpone = (): void => {
      this.#pendingStale = stale;
      this.#pendingNewlyServed = newlyServed;
      this.#pendingRetired = retired;
    };

    try {
      if (doFullSync && !(await this.#ensureJumps())) {
        this.#needFullSync = true;
        postpone();
        return false;
      }
      const data = await this.#buildRestoreData(svcPortMap, endpointsMap, doFullSync, updated);
      if (this.opts.flaw === 'flush-before-refill') {
        // Flush every chain the input names in one restore, then fill them in a second one.
        const flushOnly = data.split('\n').filter((l) => l.startsWith('*') || l.startsWith(':') || l === 'COMMIT' || l === '');
        await this.ctx.iptables.restore(flushOnly.join('\n'), { noflush: true, counters: true });
      }
      await this.ctx.iptables.restore(data, { noflush: true, counters: true });
    } catch (e) {
      if (isProgrammerError(e) || !isIptablesError(e)) throw e;
      this.ctx.log.error('Failed to execute iptables-restore', { error: errorMessage(e) });
      // The change trackers were flushed: only a full sync can recover (the flaw forgets that).
      if (this.opts.flaw !== 'lost-changes-after-failed-restore') this.#needFullSync = true;
      postpone();
      return false;
    }
    this.#needFullSync = false;
    if (doFullSync) this.#lastFullSyncMs = now;
    // Finish housekeeping: UDP only. TCP flows keep their DNAT until they end.
    if (!this.#startupCleared && this.opts.flaw !== 'stale-udp-conntrack') {
      this.#startupCleared = true;
      for (const svc of svcPortMap.values()) if (svc.protocol === 'udp' && !newlyServed.includes(svc)) newlyServed.push(svc);
    }
    await this.deleteStaleServiceConntrackEntries(newlyServed);
    // An endpoint a failed sync reported gone may be back since: its flows are current.
    const gone = stale.filter((s) => !(endpointsMap.get(s.service.key) ?? []).some((e) => e.str === s.endpoint.str));
    if (this.opts.flaw !== 'stale-udp-conntrack') {
      await this.deleteEndpointConnections(gone);
      await this.deleteStaleServiceConntrackEntries(retired);
    }
    return true;
  }

  /** One `conntrack -D`; "nothing to delete" is fine, other failures are logged. */
  async #conntrackDelete(argv: readonly string[]): Promise<void> {
    const r = await this.ctx.conntrack.run(['-D', ...argv]);
    if (r.exitCode !== 0 && !r.stderr.includes(NO_CONNECTION_TO_DELETE)) this.ctx.log.error('Failed to delete conntrack entries', { argv: argv.join(' '), error: r.stderr.trim() });
  }

  /**
   * Every flow to these UDP service ports' cluster IPs and node ports: those of a port that had no
   * endpoints (or no rules) were rejected or not DNATed, those of a port that is gone went to its
   * old endpoints.
   */
  async deleteStaleServiceConntrackEntries(services: readonly ServicePortInfo[]): Promise<void> {
    for (const svc of services) {
      await this.#conntrackDelete(['--orig-dst', svc.clusterIP, '-p', 'udp']);
      if (svc.nodePort !== 0) await this.#conntrackDelete(['-p', 'udp', '--dport', String(svc.nodePort)]);
    }
  }

  /** Flows DNATed to a UDP endpoint that went away would keep going there: delete them. */
  async deleteEndpointConnections(stale: readonly StaleUdpEndpoint[]): Promise<void> {
    for (const { service, endpoint } of stale) {
      if (service.nodePort !== 0) await this.#conntrackDelete(['-p', 'udp', '--dport', String(service.nodePort), '--dst-nat', endpoint.ip]);
      await this.#conntrackDelete(['--orig-dst', service.clusterIP, '--dst-nat', endpoint.ip, '-p', 'udp']);
    }
  }

  async #buildRestoreData(svcPortMap: Map<string, ServicePortInfo>, endpointsMap: Map<string, EndpointInfo[]>, doFullSync: boolean, updated: ReadonlySet<string>): Promise<string> {
    const mark = `${MASQUERADE_MARK}/${MASQUERADE_MARK}`;
    const ifLocal = ['-s', this.opts.clusterCidr];
    const ifNotLocal = ['!', '-s', this.opts.clusterCidr];
    const filterChains = new Lines();
    const filterRules = new Lines();
    const natChains = new Lines();
    const natRules = new Lines();
    const skippedChains = new Lines(true);
    const skippedRules = new Lines(true);
    for (const c of [KUBE_SERVICES, KUBE_EXTERNAL_SERVICES, KUBE_FORWARD, KUBE_NODEPORTS, KUBE_PROXY_FIREWALL]) filterChains.write(`:${c} - [0:0]`);
    for (const c of [KUBE_SERVICES, KUBE_NODEPORTS, KUBE_POSTROUTING, KUBE_MARK_MASQ]) natChains.write(`:${c} - [0:0]`);

    natRules.write('-A', KUBE_POSTROUTING, '-m', 'mark', '!', '--mark', mark, '-j', 'RETURN');
    // Clear the mark so a packet that traverses the stack again is not masqueraded twice.
    natRules.write('-A', KUBE_POSTROUTING, '-j', 'MARK', '--xor-mark', MASQUERADE_MARK);
    natRules.write('-A', KUBE_POSTROUTING, '-m', 'comment', '--comment', '"kubernetes service traffic requiring SNAT"', '-j', 'MASQUERADE', '--random-fully');
    natRules.write('-A', KUBE_MARK_MASQ, '-j', 'MARK', '--or-mark', MASQUERADE_MARK);
    // localhost NodePorts are on (route_localnet): block martian localnet traffic from outside.
    filterChains.write(`:${KUBE_FIREWALL} - [0:0]`);
    filterRules.write('-A', KUBE_FIREWALL, '-m', 'comment', '--comment', '"block incoming localnet connections"', '-d', '127.0.0.0/8', '!', '-s', '127.0.0.0/8', '-m', 'conntrack', '!', '--ctstate', 'RELATED,ESTABLISHED,DNAT', '-j', 'DROP');

    const activeNatChains = new Set<string>();
    for (const svc of svcPortMap.values()) {
      const { protocol, nameString } = svc;
      // The flaw drops serving-terminating endpoints: no fallback to them when none is ready.
      const allEps = endpointsMap.get(svc.key) ?? [];
      const cat = categorizeEndpoints(this.opts.flaw === 'terminating-endpoints-ignored' ? allEps.filter((e) => e.ready) : allEps, svc);
      const clusterPolicyChain = svc.clusterPolicyChainName;
      const usesClusterPolicyChain = cat.clusterEndpoints.length > 0;
      const localPolicyChain = svc.localPolicyChainName;
      const usesLocalPolicyChain = cat.localEndpoints.length > 0 && svc.externalPolicyLocal;
      const internalTrafficChain = clusterPolicyChain;
      const hasInternalEndpoints = cat.hasEndpoints;
      let externalPolicyChain = clusterPolicyChain;
      let hasExternalEndpoints = cat.hasEndpoints;
      // The flaw sends Local-policy external traffic to every endpoint, as Cluster would.
      if (svc.externalPolicyLocal && this.opts.flaw !== 'local-policy-cluster-endpoints') {
        externalPolicyChain = localPolicyChain;
        if (cat.localEndpoints.length === 0) hasExternalEndpoints = false;
      }
      const externalTrafficChain = svc.externalChainName;
      const usesExternalTrafficChain = cat.hasEndpoints && svc.nodePort !== 0;

      let internalFilterTarget = '';
      let internalFilterComment = '';
      let externalFilterTarget = '';
      let externalFilterComment = '';
      if (!cat.hasEndpoints) {
        internalFilterTarget = 'REJECT';
        internalFilterComment = `"${nameString} has no endpoints"`;
        externalFilterTarget = 'REJECT';
        externalFilterComment = internalFilterComment;
      } else if (!hasExternalEndpoints) {
        externalFilterTarget = 'DROP';
        externalFilterComment = `"${nameString} has no local endpoints"`;
      }

      const dst = ['-m', protocol, '-p', protocol, '-d', svc.clusterIP, '--dport', String(svc.port)];
      if (hasInternalEndpoints) {
        natRules.write('-A', KUBE_SERVICES, '-m', 'comment', '--comment', `"${nameString} cluster IP"`, ...dst, '-j', internalTrafficChain);
      } else {
        filterRules.write('-A', KUBE_SERVICES, '-m', 'comment', '--comment', internalFilterComment, ...dst, '-j', internalFilterTarget);
      }
      if (svc.nodePort !== 0) {
        if (cat.hasEndpoints) natRules.write('-A', KUBE_NODEPORTS, '-m', 'comment', '--comment', nameString, '-m', protocol, '-p', protocol, '--dport', String(svc.nodePort), '-j', externalTrafficChain);
        if (!hasExternalEndpoints) {
          filterRules.write('-A', KUBE_EXTERNAL_SERVICES, '-m', 'comment', '--comment', externalFilterComment, '-m', 'addrtype', '--dst-type', 'LOCAL', '-m', protocol, '-p', protocol, '--dport', String(svc.nodePort), '-j', externalFilterTarget);
        }
      }

      // Unchanged Services keep their chains as they are on a partial sync.
      const skip = !doFullSync && !updated.has(svc.namespacedName);
      const chains = skip ? skippedChains : natChains;
      const rules = skip ? skippedRules : natRules;

      if (hasInternalEndpoints) {
        // Off-cluster traffic to the cluster IP may bounce off-node: masquerade it.
        rules.write('-A', internalTrafficChain, '-m', 'comment', '--comment', `"${nameString} cluster IP"`, ...dst, ...ifNotLocal, '-j', KUBE_MARK_MASQ);
      }
      if (usesExternalTrafficChain) {
        chains.write(`:${externalTrafficChain} - [0:0]`);
        activeNatChains.add(externalTrafficChain);
        this.opts.writeExternalChain(
          { nameString, externalTrafficChain, externalPolicyChain, clusterPolicyChain, externalPolicyLocal: svc.externalPolicyLocal, hasExternalEndpoints, ifLocal, markMasqChain: KUBE_MARK_MASQ },
          (...words) => rules.write(...words),
        );
      }
      if (usesClusterPolicyChain) {
        chains.write(`:${clusterPolicyChain} - [0:0]`);
        activeNatChains.add(clusterPolicyChain);
        writeServiceToEndpointRules(rules, svc, clusterPolicyChain, cat.clusterEndpoints);
      }
      if (usesLocalPolicyChain) {
        chains.write(`:${localPolicyChain} - [0:0]`);
        activeNatChains.add(localPolicyChain);
        writeServiceToEndpointRules(rules, svc, localPolicyChain, cat.localEndpoints);
      }
      for (const ep of cat.allLocallyReachableEndpoints) {
        chains.write(`:${ep.chainName} - [0:0]`);
        activeNatChains.add(ep.chainName);
        // Hairpin: a Pod reaching itself through the Service must be masqueraded.
        if (this.opts.flaw !== 'hairpin-not-masqueraded') rules.write('-A', ep.chainName, '-m', 'comment', '--comment', nameString, '-s', ep.ip, '-j', KUBE_MARK_MASQ);
        // ClientIP affinity: the client's address goes on this endpoint's recent list.
        const affinity = svc.stickyMaxAgeSeconds > 0 ? ['-m', 'recent', '--name', ep.chainName, '--set'] : [];
        rules.write('-A', ep.chainName, '-m', 'comment', '--comment', nameString, ...affinity, '-m', protocol, '-p', protocol, '-j', 'DNAT', '--to-destination', ep.str);
      }
    }

    // Chains of Services or endpoints that are gone: flush (chain line) and delete them.
    const saved = await this.ctx.iptables.save('nat');
    for (const line of saved.split('\n')) {
      const m = /^:(\S+) /.exec(line);
      const chain = m?.[1];
      if (chain === undefined || activeNatChains.has(chain) || !isServiceChainName(chain)) continue;
      natChains.write(`:${chain} - [0:0]`);
      natRules.write('-X', chain);
    }

    // The NodePorts chain is the last rule of KUBE-SERVICES.
    // With --nodeport-addresses, one jump per matching node address instead of every local one:
    // a NodePort reached by another address (a second NIC) is not DNATed and meets the host itself.
    const nodePortsComment = '"kubernetes service nodeports; NOTE: this must be the last rule in this chain"';
    if (this.opts.nodePortAddresses === 'all') natRules.write('-A', KUBE_SERVICES, '-m', 'comment', '--comment', nodePortsComment, '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', KUBE_NODEPORTS);
    else natRules.write('-A', KUBE_SERVICES, '-m', 'comment', '--comment', nodePortsComment, '-d', `${this.ctx.nodeInfo.ip}/32`, '-j', KUBE_NODEPORTS);

    filterRules.write('-A', KUBE_FORWARD, '-m', 'conntrack', '--ctstate', 'INVALID', '-j', 'DROP');
    filterRules.write('-A', KUBE_FORWARD, '-m', 'comment', '--comment', '"kubernetes forwarding rules"', '-m', 'mark', '--mark', mark, '-j', 'ACCEPT');
    filterRules.write('-A', KUBE_FORWARD, '-m', 'comment', '--comment', '"kubernetes forwarding conntrack rule"', '-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED', '-j', 'ACCEPT');

    return ['*filter', ...filterChains.lines, ...filterRules.lines, 'COMMIT', '*nat', ...natChains.lines, ...natRules.lines, 'COMMIT', ''].join('\n');
  }
}

function writeServiceToEndpointRules(rules: Lines, svc: ServicePortInfo, svcChain: string, endpoints: readonly EndpointInfo[]): void {
  const { nameString } = svc;
  // ClientIP affinity first: a client seen within the timeout goes back to its endpoint.
  if (svc.stickyMaxAgeSeconds > 0) {
    for (const ep of endpoints) {
      rules.write('-A', svcChain, '-m', 'comment', '--comment', `"${nameString} -> ${ep.str}"`, '-m', 'recent', '--name', ep.chainName, '--rcheck', '--seconds', String(svc.stickyMaxAgeSeconds), '--reap', '-j', ep.chainName);
    }
  }
  const n = endpoints.length;
  endpoints.forEach((ep, i) => {
    const args = ['-A', svcChain, '-m', 'comment', '--comment', `"${nameString} -> ${ep.str}"`];
    // Each rule but the last picks its endpoint with probability 1/(endpoints left).
    if (i < n - 1) args.push('-m', 'statistic', '--mode', 'random', '--probability', probability(n - i));
    rules.write(...args, '-j', ep.chainName);
  });
}
