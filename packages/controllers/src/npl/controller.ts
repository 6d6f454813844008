/**
 * The NodePortLocal controller (Antrea's `NPLController`), one per agent process:
 *
 * - a Pod informer limited to this node and a Service informer; their handlers only enqueue
 *   `namespace/name` Pod keys on a rate-limited workqueue;
 * - four workers take keys and run `syncPod`: the Pod is looked up in the informer cache *now*
 *   (not as the event described it); present → `handleAddUpdatePod`, absent → `handleRemovePod`;
 *   an error requeues the key with exponential backoff (2 s … 120 s), success forgets it;
 * - before the workers start, `waitForRulesInitialization` rebuilds the port table from the Pods'
 *   annotations and their *current* IPs and writes the whole chain with one restore.
 *
 * The two handlers are where the Antrea releases differ; they come from an {@link NplHandlers}
 * (see `handlers_v2_3_2.ts` and `handlers_v2_4_4.ts`).
 */
import { ItemExponentialFailureRateLimiter, isTombstone, type DeleteArg, type Pod, type Service } from '@netsim/kube';
import { isIptablesError, type AsyncWorkQueue, type ControllerContext, type InformerHandle } from '@netsim/sim';
import { errorMessage, isProgrammerError } from '../errors.ts';
import { cleanupNplAnnotationForPod, parseNplAnnotation } from './annotations.ts';
import type { NplFlaw } from './flaws.ts';
import { FlawedPodPortRules } from './flawedRules.ts';
import { IptablesPodPortRules } from './rules.ts';
import { PortTable, ProcessPortOpener, type PortRange } from './portTable.ts';
import { NPL_ANNOTATION, NPL_ENABLED_ANNOTATION, buildPortProto, type PodNodePort } from './types.ts';

/** Antrea's worker count. */
export const NPL_WORKERS = 4;
/** The first delay the workqueue's rate limiter puts before retrying a failed Pod key (doubling after). */
export const NPL_MIN_RETRY_DELAY_MS = 2000;
const MIN_RETRY_DELAY_MS = NPL_MIN_RETRY_DELAY_MS;
/** The longest delay the workqueue's rate limiter puts between two attempts of a Pod key. */
export const NPL_MAX_RETRY_DELAY_MS = 120_000;
/** Back-off between attempts of the start-up restore. */
const RESTORE_RETRY_MS = 2000;

/** The release-specific half of the controller: how a Pod key is reconciled. */
export interface NplHandlers {
  /** The Antrea release these handlers come from. */
  readonly release: string;
  /** The Pod exists in the informer cache. */
  handleAddUpdatePod(c: NplController, key: string, pod: Pod): Promise<void>;
  /** The Pod is gone from the informer cache. */
  handleRemovePod(c: NplController, key: string): Promise<void>;
}

export interface NplControllerOptions {
  readonly portRange: PortRange;
  readonly workers: number;
  /** Mutation suite only: the one bug this agent carries. */
  readonly flaw?: NplFlaw;
}

function podKeyFunc(pod: Pod): string {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}

function isNplEnabledService(svc: Service): boolean {
  return svc.metadata.annotations[NPL_ENABLED_ANNOTATION] === 'true' && svc.spec.type !== 'NodePort';
}

function matchSvcSelectorPodLabels(selector: Readonly<Record<string, string>> | undefined, labels: Readonly<Record<string, string>>): boolean {
  if (selector === undefined || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

function sameRecord(a: Readonly<Record<string, string>> | undefined, b: Readonly<Record<string, string>> | undefined): boolean {
  const ka = Object.keys(a ?? {}).sort();
  const kb = Object.keys(b ?? {}).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a?.[k] === b?.[k]);
}

function samePorts(a: Service, b: Service): boolean {
  return JSON.stringify(a.spec.ports) === JSON.stringify(b.spec.ports);
}

/** One agent process's NodePortLocal controller. */
export class NplController {
  readonly ctx: ControllerContext;
  readonly handlers: NplHandlers;
  readonly portTable: PortTable;
  readonly portOpener = new ProcessPortOpener();
  readonly queue: AsyncWorkQueue<string>;
  readonly pods: InformerHandle<'Pod'>;
  readonly services: InformerHandle<'Service'>;
  /** Mutation suite only: the one bug this agent carries (undefined for the reference agents). */
  readonly flaw: NplFlaw | undefined;
  readonly #workers: number;

  constructor(ctx: ControllerContext, handlers: NplHandlers, opts: NplControllerOptions) {
    this.ctx = ctx;
    this.handlers = handlers;
    this.flaw = opts.flaw;
    this.#workers = opts.workers;
    this.portTable = new PortTable(opts.flaw !== undefined ? new FlawedPodPortRules(ctx.iptables, opts.flaw) : new IptablesPodPortRules(ctx.iptables), this.portOpener, opts.portRange);
    this.queue = ctx.workqueue<string>('nodeportlocal', { rateLimiter: new ItemExponentialFailureRateLimiter<string>(MIN_RETRY_DELAY_MS, NPL_MAX_RETRY_DELAY_MS) });
    this.pods = ctx.informers.pods({ selector: { nodeName: ctx.node } });
    this.services = ctx.informers.services();
  }

  /** Agent start-up: rules, informers, cache sync, rule initialization, workers. */
  async run(): Promise<void> {
    // NewPortTable: the chain and its jumps. A failure here fails the agent's start, as in Antrea.
    await this.portTable.rules.init();
    this.pods.addEventHandler({
      onAdd: (p) => this.enqueuePod(p),
      onUpdate: (_old, cur) => this.enqueuePod(cur),
      onDelete: (d) => this.enqueuePod(d),
    });
    this.services.addEventHandler({
      onAdd: (s) => this.enqueueSvc(s),
      onUpdate: (o, n) => this.enqueueSvcUpdate(o, n),
      onDelete: (d) => this.enqueueSvc(d),
    });
    this.ctx.informers.start();
    if (!(await this.ctx.informers.waitForCacheSync())) return;
    if (!(await this.waitForRulesInitialization())) return;
    for (let i = 0; i < this.#workers; i++) this.ctx.every(1000, `npl worker ${i}`, () => this.worker());
  }

  /** SIGTERM: stop handing out keys (the rules and annotations stay, as in Antrea). */
  stop(): void {
    this.queue.shutDown();
  }

  enqueuePod(obj: DeleteArg<Pod>): void {
    if (isTombstone(obj) && this.flaw === 'tombstone-dropped') return;
    // The flaw casts the tombstone to a Pod, as a Go type assertion without the ok check would.
    const pod = isTombstone(obj) && this.flaw !== 'tombstone-crash' ? obj.obj : (obj as Pod);
    this.queue.add(podKeyFunc(pod));
  }

  enqueueSvc(obj: DeleteArg<Service>): void {
    const svc = isTombstone(obj) ? obj.obj : obj;
    if (svc.metadata.annotations[NPL_ENABLED_ANNOTATION] !== 'true') return;
    for (const k of this.getPodsFromService(svc)) this.queue.add(k);
  }

  enqueueSvcUpdate(oldSvc: Service, newSvc: Service): void {
    const oldAnn = oldSvc.metadata.annotations[NPL_ENABLED_ANNOTATION];
    const newAnn = newSvc.metadata.annotations[NPL_ENABLED_ANNOTATION];
    if (oldAnn !== 'true' && newAnn !== 'true') return;
    const oldEnabled = isNplEnabledService(oldSvc);
    const newEnabled = isNplEnabledService(newSvc);
    let keys = new Set<string>();
    if (oldEnabled !== newEnabled) {
      keys = new Set(this.getPodsFromService(oldEnabled ? oldSvc : newSvc));
    } else if (oldEnabled && newEnabled) {
      const newPods = new Set(this.getPodsFromService(newSvc));
      if (this.flaw !== 'selector-update-ignored' && !sameRecord(oldSvc.spec.selector, newSvc.spec.selector)) {
        const oldPods = new Set(this.getPodsFromService(oldSvc));
        for (const k of oldPods) if (!newPods.has(k)) keys.add(k);
        for (const k of newPods) if (!oldPods.has(k)) keys.add(k);
      }
      if (this.flaw !== 'port-update-ignored' && !samePorts(oldSvc, newSvc)) for (const k of newPods) keys.add(k);
    }
    for (const k of [...keys].sort()) this.queue.add(k);
  }

  /** Keys of the cached Pods the Service selects. */
  getPodsFromService(svc: Service): string[] {
    const out: string[] = [];
    for (const k of this.pods.lister.keys()) {
      const p = this.pods.lister.getByKey(k);
      if (p !== undefined && p.metadata.namespace === svc.metadata.namespace && matchSvcSelectorPodLabels(svc.spec.selector, p.metadata.labels)) out.push(k);
    }
    return out;
  }

  /**
   * The target ports of every NPL-enabled Service selecting the Pod: numeric ones as `8080:tcp`,
   * named ones as `http:tcp`. SCTP ports are not supported and skipped.
   */
  getTargetPortsForServicesOfPod(pod: Pod): { readonly ints: Set<string>; readonly strs: Set<string> } {
    const ints = new Set<string>();
    const strs = new Set<string>();
    for (const k of this.services.lister.keys()) {
      const svc = this.services.lister.getByKey(k);
      if (svc === undefined || !isNplEnabledService(svc)) continue;
      if (pod.metadata.namespace !== svc.metadata.namespace || !matchSvcSelectorPodLabels(svc.spec.selector, pod.metadata.labels)) continue;
      for (const port of svc.spec.ports) {
        if (port.protocol === 'SCTP' || (port.protocol === 'UDP' && this.flaw === 'udp-ignored')) continue;
        if (typeof port.targetPort === 'number') ints.add(buildPortProto(port.targetPort, port.protocol));
        else if (this.flaw !== 'named-port-ignored') strs.add(buildPortProto(port.targetPort, port.protocol));
      }
    }
    return { ints, strs };
  }

  async worker(): Promise<void> {
    while (await this.processNextWorkItem()) {
      // keep taking keys until the queue shuts down
    }
  }

  async processNextWorkItem(): Promise<boolean> {
    const key = await this.queue.get();
    if (key === undefined) return false;
    try {
      await this.syncPod(key);
      this.queue.forget(key);
    } catch (e) {
      if (isProgrammerError(e)) throw e;
      if (this.flaw === 'no-retry') this.queue.forget(key);
      else if (this.flaw === 'retry-without-backoff') this.queue.add(key);
      else this.queue.addRateLimited(key);
      this.ctx.log.error('Error syncing Pod, requeuing', { key, error: errorMessage(e) });
    } finally {
      this.queue.done(key);
    }
    return true;
  }

  async syncPod(key: string): Promise<void> {
    const pod = this.pods.lister.getByKey(key);
    if (pod !== undefined) await this.handlers.handleAddUpdatePod(this, key, pod);
    else await this.handlers.handleRemovePod(this, key);
  }

  /**
   * The restart path: rebuild the port table from the Pods' annotations with each Pod's current
   * IP, then write the chain in one `iptables-restore --noflush` (its chain line flushes whatever a
   * previous process left there), retrying every 2 s until it succeeds. Returns false if the
   * process is stopping first.
   */
  async waitForRulesInitialization(): Promise<boolean> {
    const all: PodNodePort[] = [];
    for (const key of this.pods.lister.keys()) {
      const pod = this.pods.lister.getByKey(key);
      const text = pod?.metadata.annotations[NPL_ANNOTATION];
      if (pod === undefined || text === undefined) continue;
      let entries;
      try {
        entries = parseNplAnnotation(text);
      } catch {
        this.ctx.log.info('Found invalid NodePortLocal annotation for Pod that cannot be parsed, cleaning it up', { pod: key });
        await this.#cleanupAnnotationLogged(pod);
        continue;
      }
      const podIP = pod.status.podIP ?? '';
      if (podIP === '') {
        this.ctx.log.info('Found Pod with NodePortLocal annotation but no IP address, removing annotation', { pod: key });
        await this.#cleanupAnnotationLogged(pod);
        continue;
      }
      for (const npl of entries) {
        if (npl.nodePort === 0 || npl.podPort === 0 || npl.protocol === '') continue;
        // Outside the configured range: the Pod handler will allocate a new port and fix the annotation.
        if (npl.nodePort > this.portTable.endPort || npl.nodePort < this.portTable.startPort) continue;
        all.push({ podKey: key, nodePort: npl.nodePort, podPort: npl.podPort, podIP, protocol: npl.protocol });
      }
    }
    this.portTable.restoreRules(all);
    for (;;) {
      if (this.ctx.stopping) return false;
      try {
        await this.portTable.syncRules();
        this.ctx.log.info('Initialization of NodePortLocal rules successful', { mappings: all.length });
        return true;
      } catch (e) {
        if (!isIptablesError(e)) throw e;
        this.ctx.log.error('Failed to restore iptables rules', { error: e.message, backoffMs: RESTORE_RETRY_MS });
        await this.ctx.sleep(RESTORE_RETRY_MS);
      }
    }
  }

  async #cleanupAnnotationLogged(pod: Pod): Promise<void> {
    try {
      await cleanupNplAnnotationForPod(this.ctx.kube, pod);
    } catch (e) {
      if (isProgrammerError(e)) throw e;
      this.ctx.log.error('Error when cleaning up NodePortLocal annotation for Pod', { pod: podKeyFunc(pod), error: errorMessage(e) });
    }
  }
}
