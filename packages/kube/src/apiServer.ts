/**
 * The API server: the one source of truth for Pods, Services, EndpointSlices and Nodes.
 *
 * Every write gets the next value of one global, monotonically increasing resourceVersion (etcd's
 * revision), is appended to a bounded per-kind history (the watch cache), and is sent to every
 * open watch of that kind. Watches start from a resourceVersion; one older than the history
 * answers `410 Expired` as the first (and last) event of the stream, which is what makes a
 * reflector relist.
 *
 * Writes are synchronous and atomic; only watch deliveries are scheduled. In-process reactors
 * (the kubelets, the EndpointSlice controller) learn of writes through `onChange` and must only
 * schedule work from there, never write back synchronously.
 */
import { NodeCidrAllocator, NodePortAllocator, ServiceIpAllocator } from './allocators.ts';
import { KubeError } from './errors.ts';
import { applyMergePatch, deepEqual, freezeCopy, type MergePatch } from './json.ts';
import {
  KIND_INFO,
  keyOf,
  type EndpointSlice,
  type InputOf,
  type Kind,
  type KubeObject,
  type Node,
  type ObjectMeta,
  type ObjectOf,
  type Pod,
  type PodInput,
  type Service,
  type ServiceInput,
  type EndpointSliceInput,
  type NodeInput,
  DEFAULT_CLIENT_IP_AFFINITY_SECONDS,
  isPodTerminal,
} from './objects.ts';

/** The longest `sessionAffinityConfig.clientIP.timeoutSeconds` the API server accepts (a day). */
const MAX_CLIENT_IP_AFFINITY_SECONDS = 86_400;
import type { KubeRuntime } from './runtime.ts';
import { wantsTrace, type KubeTraceSink } from './trace.ts';
import {
  POD_SPEC_FORBIDDEN,
  invalidError,
  validateCidr,
  validateIpv4,
  validateName,
  validateNamespace,
  validatePort,
  validateProtocol,
  type FieldError,
} from './validation.ts';
import { WatchStream, expired, type WatchEvent, type WatchEventType, type WatchHandle } from './watch.ts';

/** How long the per-kind history (the watch cache) keeps events. */
export interface HistoryOptions {
  /** Events are kept at least this many per kind, however old (default 100, the watch cache's floor). */
  readonly minEvents?: number;
  /** Beyond `minEvents`, events older than this are dropped (default 75 000 ms, the watch cache's freshness window). */
  readonly maxAgeMs?: number;
  /** Hard cap per kind (default 102 400). */
  readonly maxEvents?: number;
}

export interface ApiServerOptions {
  readonly runtime: KubeRuntime;
  /** Service cluster IPs are allocated from here (default `198.51.100.0/24`). */
  readonly serviceCIDR?: string;
  /** Node pod CIDRs are allocated from here when a Node has none (default `198.18.0.0/15`). */
  readonly clusterCIDR?: string;
  /** Prefix length of each node's pod CIDR (default 24). */
  readonly nodeCIDRMaskSize?: number;
  /** Node ports are allocated from here (default 30000–32767). */
  readonly nodePortRange?: { readonly min: number; readonly max: number };
  readonly history?: HistoryOptions;
  readonly trace?: KubeTraceSink;
}

/** Which objects a list or watch covers. */
export interface Selector {
  /** Only this namespace. */
  readonly namespace?: string;
  /** Only objects carrying all these labels. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Pods only: the field selector `spec.nodeName=<node>`, as node agents use it. */
  readonly nodeName?: string;
}

export interface ListResult<T extends KubeObject> {
  /** The resourceVersion the list is consistent with: start a watch from here. */
  readonly resourceVersion: string;
  /** Sorted by key, as etcd returns them. */
  readonly items: readonly T[];
}

export interface WatchRequest extends Selector {
  /**
   * Send every change after this resourceVersion. `'0'` or absent: start with a synthetic
   * `ADDED` for each current object, then changes.
   */
  readonly resourceVersion?: string;
  /** Delivery delay for every event of this watch (ms, default 0). */
  readonly delayMs?: number;
  /** The server ends the watch cleanly after this long (ms). Absent: never. */
  readonly timeoutMs?: number;
  /** A name for traces and fault filters (an informer passes its own). */
  readonly name?: string;
}

export interface DeleteOptions {
  /** Pods only: seconds of graceful termination; 0 removes at once. Default: the Pod's `terminationGracePeriodSeconds`. */
  readonly gracePeriodSeconds?: number;
  /** The delete fails with Conflict unless the object still has this uid / resourceVersion. */
  readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string };
}

/** What `onChange` listeners hear after each committed write. */
export interface Change {
  readonly type: WatchEventType;
  readonly kind: Kind;
  /** The stored state after the write (for DELETED: the last state, with the deletion's resourceVersion). */
  readonly object: KubeObject;
  /** The state before the write, for MODIFIED and DELETED. */
  readonly old?: KubeObject;
}

/** Chooses watches for a fault: by kind, by watcher name, or all. */
export interface WatchFilter {
  readonly kind?: Kind;
  readonly name?: string;
}

interface HistoryEntry {
  readonly rv: number;
  readonly at: number;
  readonly type: WatchEventType;
  readonly object: KubeObject;
  readonly old: KubeObject | undefined;
}

interface KindState {
  readonly objects: Map<string, KubeObject>;
  /** The keys of `objects`, sorted; `undefined` after a key was added or removed (rebuilt on the next read). */
  sortedKeys: string[] | undefined;
  /**
   * Pods only: the keys of the Pods bound to each node (`spec.nodeName`; unbound Pods under `''`),
   * so a node agent's list or watch (`spec.nodeName=<node>`) costs that node's Pods, not the cluster's.
   */
  readonly byNode: Map<string, NodeKeys>;
  readonly history: HistoryEntry[];
  historyHead: number;
  /** resourceVersion of the newest event dropped from history; 0 when none was. */
  lastDroppedRv: number;
  /** Open watches and what each selects. */
  readonly watches: Map<WatchStream, Selector>;
}

/** The keys of one node's Pods, with their sorted order cached until the set changes. */
interface NodeKeys {
  readonly keys: Set<string>;
  sorted: string[] | undefined;
}

type Verb = 'create' | 'update' | 'updateStatus' | 'patch' | 'delete' | 'bind';

/**
 * An in-memory API server with real resourceVersion, watch and error semantics.
 *
 * @example
 * ```ts
 * const rt = manualRuntime(7);
 * const api = new ApiServer({ runtime: rt });
 * const pod = api.create('Pod', { metadata: { name: 'web-0' }, spec: { nodeName: 'node-a', containers: [{ name: 'c' }] } });
 * pod.metadata.resourceVersion; // '1'
 * ```
 */
export class ApiServer {
  readonly runtime: KubeRuntime;
  private rv = 0;
  private readonly kinds: Record<Kind, KindState>;
  private readonly listeners: ((c: Change) => void)[] = [];
  private readonly serviceIps: ServiceIpAllocator;
  private readonly nodePorts: NodePortAllocator;
  private readonly nodeCidrs: NodeCidrAllocator;
  private readonly histMin: number;
  private readonly histMaxAge: number;
  private readonly histMax: number;
  private readonly trace: KubeTraceSink | undefined;
  private watchSeq = 0;

  constructor(opts: ApiServerOptions) {
    this.runtime = opts.runtime;
    this.trace = opts.trace;
    const mk = (): KindState => ({ objects: new Map(), sortedKeys: undefined, byNode: new Map(), history: [], historyHead: 0, lastDroppedRv: 0, watches: new Map() });
    this.kinds = { Pod: mk(), Service: mk(), EndpointSlice: mk(), Node: mk() };
    this.serviceIps = new ServiceIpAllocator(opts.serviceCIDR ?? '198.51.100.0/24', opts.runtime.random);
    const np = opts.nodePortRange ?? { min: 30000, max: 32767 };
    this.nodePorts = new NodePortAllocator(np.min, np.max, opts.runtime.random);
    this.nodeCidrs = new NodeCidrAllocator(opts.clusterCIDR ?? '198.18.0.0/15', opts.nodeCIDRMaskSize ?? 24);
    this.histMin = opts.history?.minEvents ?? 100;
    this.histMaxAge = opts.history?.maxAgeMs ?? 75_000;
    this.histMax = opts.history?.maxEvents ?? 102_400;
  }

  /** The newest resourceVersion issued, as a string. */
  resourceVersion(): string {
    return String(this.rv);
  }

  /** Registers a synchronous listener for every committed write; returns an unsubscribe function. */
  onChange(listener: (c: Change) => void): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  // ---------------------------------------------------------------- reads

  /** The object, or a NotFound error (`pods "web-0" not found`). Use `''` as namespace for Nodes. */
  get<K extends Kind>(kind: K, namespace: string, name: string): ObjectOf<K> {
    const o = this.find(kind, namespace, name);
    if (o === undefined) throw notFound(kind, name);
    return o;
  }

  /** The object, or `undefined`. */
  find<K extends Kind>(kind: K, namespace: string, name: string): ObjectOf<K> | undefined {
    return this.kinds[kind].objects.get(keyOf(KIND_INFO[kind].namespaced ? namespace : '', name)) as ObjectOf<K> | undefined;
  }

  /** A consistent snapshot, sorted by key, with the resourceVersion to watch from. */
  list<K extends Kind>(kind: K, selector: Selector = {}): ListResult<ObjectOf<K>> {
    const items: ObjectOf<K>[] = [];
    const st = this.kinds[kind];
    for (const k of candidateKeys(st, kind, selector)) {
      const o = st.objects.get(k) as ObjectOf<K>;
      if (matches(selector, o)) items.push(o);
    }
    return { resourceVersion: String(this.rv), items };
  }

  // ---------------------------------------------------------------- writes

  /** Creates an object. Server fields (uid, resourceVersion, creationTimestamp, allocations) are filled in. */
  create<K extends Kind>(kind: K, input: InputOf<K>): ObjectOf<K> {
    const info = KIND_INFO[kind];
    const ns = info.namespaced ? (input.metadata.namespace ?? 'default') : '';
    const name = input.metadata.name;
    const errs: FieldError[] = [];
    validateName(kind, name, errs);
    if (info.namespaced) validateNamespace(ns, errs);
    else if (input.metadata.namespace !== undefined && input.metadata.namespace !== '') errs.push({ field: 'metadata.namespace', type: 'Forbidden', detail: 'not allowed on this type' });
    if (errs.length > 0) throw invalidError(kind, name, errs);
    if (input.metadata.resourceVersion !== undefined && input.metadata.resourceVersion !== '') {
      throw new KubeError('BadRequest', 'resourceVersion should not be set on objects to be created');
    }
    const key = keyOf(ns, name);
    const st = this.kinds[kind];
    if (st.objects.has(key)) throw new KubeError('AlreadyExists', alreadyExistsMessage(kind, name));
    const meta: ObjectMeta = {
      name,
      namespace: ns,
      uid: this.runtime.ids.next(),
      resourceVersion: '',
      creationTimestamp: this.runtime.scheduler.now(),
      labels: { ...(input.metadata.labels ?? {}) },
      annotations: { ...(input.metadata.annotations ?? {}) },
    };
    const obj = this.build(kind, input, meta);
    return this.commit('create', kind, 'ADDED', obj, undefined) as ObjectOf<K>;
  }

  /**
   * Replaces an object's metadata and spec (its status is kept: use `updateStatus` for that).
   * A non-empty `metadata.resourceVersion` must equal the stored one, else Conflict. An update
   * that changes nothing is not written and keeps its resourceVersion.
   */
  update<K extends Kind>(obj: ObjectOf<K>): ObjectOf<K> {
    return this.replace('update', obj);
  }

  /** Replaces only the status of a Pod, Service or Node (metadata and spec are kept). */
  updateStatus<K extends Kind>(obj: ObjectOf<K>): ObjectOf<K> {
    if (!KIND_INFO[obj.kind].hasStatus) throw new KubeError('NotFound', `the server could not find the requested resource (put ${KIND_INFO[obj.kind].resource} ${obj.metadata.name}/status)`);
    return this.replace('updateStatus', obj);
  }

  /**
   * Applies a JSON merge patch (RFC 7386) to metadata and spec: `{ metadata: { annotations:
   * { k: 'v', gone: null } } }`. A `metadata.resourceVersion` in the patch is a precondition.
   */
  patch<K extends Kind>(kind: K, namespace: string, name: string, patch: MergePatch): ObjectOf<K> {
    const cur = this.get(kind, namespace, name);
    const patched = applyMergePatch(cur, patch) as ObjectOf<K>;
    const pm = (patch['metadata'] ?? undefined) as { resourceVersion?: unknown } | undefined;
    const rvPre = typeof pm?.resourceVersion === 'string' ? pm.resourceVersion : cur.metadata.resourceVersion;
    const withMeta = { ...patched, kind: cur.kind, apiVersion: cur.apiVersion, metadata: { ...patched.metadata, resourceVersion: rvPre, uid: cur.metadata.uid, name: cur.metadata.name, namespace: cur.metadata.namespace } } as ObjectOf<K>;
    return this.replace('patch', withMeta);
  }

  /** Binds an unscheduled Pod to a node (the `pods/binding` subresource a scheduler uses). */
  bind(namespace: string, name: string, nodeName: string): Pod {
    const cur = this.get('Pod', namespace, name);
    if (cur.spec.nodeName !== undefined && cur.spec.nodeName !== '') {
      throw new KubeError('Conflict', `Operation cannot be fulfilled on pods/binding ${JSON.stringify(name)}: pod ${name} is already assigned to node ${JSON.stringify(cur.spec.nodeName)}`);
    }
    if (cur.metadata.deletionTimestamp !== undefined) {
      throw new KubeError('Conflict', `Operation cannot be fulfilled on pods/binding ${JSON.stringify(name)}: pod ${name} is being deleted, cannot be assigned to a host`);
    }
    const next: Pod = {
      ...cur,
      spec: { ...cur.spec, nodeName },
      status: { ...cur.status, conditions: setCondition(cur.status.conditions, 'PodScheduled', 'True') },
    };
    return this.commit('bind', 'Pod', 'MODIFIED', next, cur) as Pod;
  }

  /**
   * Deletes an object. A Pod bound to a node and not terminal is deleted gracefully: it gets a
   * `deletionTimestamp` (now + grace) and stays until its kubelet removes it (or a delete with
   * grace 0). Everything else is removed at once. Returns the state after the call.
   */
  delete<K extends Kind>(kind: K, namespace: string, name: string, opts: DeleteOptions = {}): ObjectOf<K> {
    const cur = this.get(kind, namespace, name);
    const pre = opts.preconditions;
    if (pre?.uid !== undefined && pre.uid !== cur.metadata.uid) {
      throw conflict(kind, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${cur.metadata.uid}`);
    }
    if (pre?.resourceVersion !== undefined && pre.resourceVersion !== cur.metadata.resourceVersion) {
      throw conflict(kind, name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${cur.metadata.resourceVersion}`);
    }
    if (opts.gracePeriodSeconds !== undefined && (!Number.isInteger(opts.gracePeriodSeconds) || opts.gracePeriodSeconds < 0)) {
      throw invalidError(kind, name, [{ field: 'gracePeriodSeconds', type: 'Invalid value', value: opts.gracePeriodSeconds, detail: 'must be a non-negative integer' }]);
    }
    if (kind === 'Pod') {
      const pod = cur as Pod;
      let grace = opts.gracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds;
      // An unscheduled or finished Pod has nothing to terminate: it goes at once.
      if (pod.spec.nodeName === undefined || pod.spec.nodeName === '' || isPodTerminal(pod)) grace = 0;
      const now = this.runtime.scheduler.now();
      if (pod.metadata.deletionTimestamp !== undefined && pod.metadata.deletionGracePeriodSeconds !== undefined) {
        // Already terminating: a later delete may only shorten the grace period, measured from the first request.
        if (grace >= pod.metadata.deletionGracePeriodSeconds) return cur;
        if (grace > 0) {
          const requestedAt = pod.metadata.deletionTimestamp - pod.metadata.deletionGracePeriodSeconds * 1000;
          const next: Pod = { ...pod, metadata: { ...pod.metadata, deletionTimestamp: requestedAt + grace * 1000, deletionGracePeriodSeconds: grace } };
          return this.commit('delete', kind, 'MODIFIED', next, cur) as ObjectOf<K>;
        }
      } else if (grace > 0) {
        const next: Pod = { ...pod, metadata: { ...pod.metadata, deletionTimestamp: now + grace * 1000, deletionGracePeriodSeconds: grace } };
        return this.commit('delete', kind, 'MODIFIED', next, cur) as ObjectOf<K>;
      }
    }
    this.releaseAllocations(cur);
    return this.commit('delete', kind, 'DELETED', cur, cur) as ObjectOf<K>;
  }

  // ---------------------------------------------------------------- watch

  /**
   * Opens a watch. Each event reaches `consumer` as its own scheduled step, in order. A
   * resourceVersion older than the history yields a stream whose only event is `ERROR` 410.
   */
  watch<K extends Kind>(kind: K, req: WatchRequest, consumer: (e: WatchEvent<ObjectOf<K>>) => void): WatchHandle {
    const st = this.kinds[kind];
    const sel: Selector = selectorOf(req);
    const name = req.name ?? `watch-${kind.toLowerCase()}`;
    const startRv = req.resourceVersion === undefined || req.resourceVersion === '' || req.resourceVersion === '0' ? undefined : parseRv(req.resourceVersion);
    if (startRv !== undefined && startRv > this.rv) {
      throw new KubeError('Timeout', `Too large resource version: ${startRv}, current: ${this.rv}`);
    }
    // The timeout step runs even when the watch ended earlier (a no-op then): it must not keep an
    // ended watch, and with it its consumer (a dead process's informer and cache), alive meanwhile.
    const timeout: { watch: WatchStream<KubeObject> | undefined; ended: boolean } = { watch: undefined, ended: false };
    const w = new WatchStream<KubeObject>(
      name,
      ++this.watchSeq,
      this.runtime.scheduler,
      consumer as (e: WatchEvent) => void,
      (x) => {
        st.watches.delete(x);
        timeout.watch = undefined;
        timeout.ended = true;
      },
      () => this.rv,
      req.delayMs ?? 0,
      this.trace,
      startRv ?? this.rv,
    );
    if (wantsTrace(this.trace, 'kube.watch.open')) this.trace({ type: 'kube.watch.open', at: this.runtime.scheduler.now(), fields: { watch: w.id, kind, rv: startRv === undefined ? 'any' : String(startRv) } });
    st.watches.set(w, sel);
    if (startRv === undefined) {
      for (const k of candidateKeys(st, kind, sel)) {
        const o = st.objects.get(k) as KubeObject;
        if (matches(sel, o)) w.send({ type: 'ADDED', object: o });
      }
    } else {
      const too = this.tooOld(st, startRv);
      if (too !== undefined) {
        w.send({ type: 'ERROR', object: expired(startRv, too).toStatus() });
      } else {
        for (let i = firstAfter(st, startRv); i < st.history.length; i++) {
          const h = st.history[i] as HistoryEntry;
          const ev = filterEvent(sel, h.type, h.object, h.old);
          if (ev !== undefined) w.send(ev);
        }
      }
    }
    if (req.timeoutMs !== undefined) {
      // Only if it still accepts events: once ended (a 410 at once), close() would do nothing.
      if (!timeout.ended) timeout.watch = w;
      this.runtime.scheduler.schedule(req.timeoutMs, `kube.watch.timeout ${w.id}`, () => timeout.watch?.close());
    }
    return w;
  }

  /** Open watches matching the filter, oldest first. */
  watches(filter: WatchFilter = {}): WatchHandle[] {
    const out: WatchHandle[] = [];
    for (const k of filter.kind === undefined ? (['Pod', 'Service', 'EndpointSlice', 'Node'] as const) : [filter.kind]) {
      for (const w of this.kinds[k].watches.keys()) if (filter.name === undefined || w.name === filter.name) out.push(w);
    }
    return out;
  }

  // ---------------------------------------------------------------- faults

  /** Fault: matching watches lose every event for `durationMs`, then break with 410 (their informers relist). */
  watchGap(durationMs: number, filter: WatchFilter = {}): void {
    for (const w of this.watches(filter)) w.gap(durationMs);
  }

  /** Fault: matching watches break now with 410 Expired (client-go's `FakeControllerSource.ResetWatch`). */
  resetWatches(filter: WatchFilter = {}): void {
    for (const w of this.watches(filter)) w.reset();
  }

  /** Matching watches end cleanly now, as at a watch timeout: clients re-watch from their last resourceVersion. */
  closeWatches(filter: WatchFilter = {}): void {
    for (const w of this.watches(filter)) w.close();
  }

  /** Drops the whole history of a kind (or of all): any watch from an older resourceVersion now gets 410. */
  compact(kind?: Kind): void {
    for (const k of kind === undefined ? (['Pod', 'Service', 'EndpointSlice', 'Node'] as const) : [kind]) {
      const st = this.kinds[k];
      const last = st.history[st.history.length - 1];
      if (last !== undefined) st.lastDroppedRv = last.rv;
      st.history.length = 0;
      st.historyHead = 0;
      if (st.lastDroppedRv === 0) st.lastDroppedRv = this.rv;
    }
  }

  // ---------------------------------------------------------------- internals

  private replace<K extends Kind>(verb: Verb, obj: ObjectOf<K>): ObjectOf<K> {
    const kind = obj.kind;
    const info = KIND_INFO[kind];
    const ns = info.namespaced ? obj.metadata.namespace : '';
    const cur = this.find(kind, ns, obj.metadata.name);
    if (cur === undefined) throw notFound(kind, obj.metadata.name);
    if (obj.metadata.resourceVersion !== '' && obj.metadata.resourceVersion !== undefined && obj.metadata.resourceVersion !== cur.metadata.resourceVersion) {
      throw conflict(kind, obj.metadata.name, 'the object has been modified; please apply your changes to the latest version and try again');
    }
    if (obj.metadata.uid !== '' && obj.metadata.uid !== undefined && obj.metadata.uid !== cur.metadata.uid) {
      throw conflict(kind, obj.metadata.name, `Precondition failed: UID in precondition: ${obj.metadata.uid}, UID in object meta: ${cur.metadata.uid}`);
    }
    // Server-owned metadata always comes from the stored object.
    const meta: ObjectMeta = {
      ...cur.metadata,
      labels: verb === 'updateStatus' ? cur.metadata.labels : { ...(obj.metadata.labels ?? {}) },
      annotations: verb === 'updateStatus' ? cur.metadata.annotations : { ...(obj.metadata.annotations ?? {}) },
    };
    let next: KubeObject;
    if (verb === 'updateStatus') {
      next = this.withStatus(cur, obj);
    } else {
      next = this.withSpec(cur, obj, meta);
    }
    if (deepEqual(next, cur)) return cur;
    return this.commit(verb, kind, 'MODIFIED', next, cur) as ObjectOf<K>;
  }

  private commit(verb: Verb, kind: Kind, type: WatchEventType, obj: KubeObject, old: KubeObject | undefined): KubeObject {
    const st = this.kinds[kind];
    const rv = ++this.rv;
    const stored = freezeCopy({ ...obj, metadata: { ...obj.metadata, resourceVersion: String(rv) } });
    const key = keyOf(stored.metadata.namespace, stored.metadata.name);
    const prev = st.objects.get(key);
    if (type === 'DELETED') st.objects.delete(key);
    else st.objects.set(key, stored);
    indexWrite(st, key, prev, type === 'DELETED' ? undefined : stored);
    const now = this.runtime.scheduler.now();
    st.history.push({ rv, at: now, type, object: stored, old });
    this.trimHistory(st, now);
    if (wantsTrace(this.trace, 'kube.api.write')) this.trace({ type: 'kube.api.write', at: now, fields: { verb, kind, key, rv, uid: stored.metadata.uid, event: type } });
    for (const [w, sel] of [...st.watches]) {
      const ev = filterEvent(sel, type, stored, old);
      if (ev !== undefined) w.send(ev);
    }
    const change: Change = old === undefined ? { type, kind, object: stored } : { type, kind, object: stored, old };
    for (const l of [...this.listeners]) l(change);
    return stored;
  }

  private trimHistory(st: KindState, now: number): void {
    const h = st.history;
    let head = st.historyHead;
    while (h.length - head > this.histMax || (h.length - head > this.histMin && now - (h[head] as HistoryEntry).at > this.histMaxAge)) {
      st.lastDroppedRv = (h[head] as HistoryEntry).rv;
      head++;
    }
    if (head > 1024 && head * 2 > h.length) {
      h.splice(0, head);
      head = 0;
    }
    st.historyHead = head;
  }

  /** The watch cache's rule: a start older than (oldest held − 1) is 410. Returns that bound when too old. */
  private tooOld(st: KindState, startRv: number): number | undefined {
    if (st.lastDroppedRv === 0) return undefined;
    const oldest = st.history[st.historyHead];
    const bound = oldest !== undefined ? oldest.rv - 1 : st.lastDroppedRv;
    return startRv < bound ? bound : undefined;
  }

  private build<K extends Kind>(kind: K, input: InputOf<K>, meta: ObjectMeta): KubeObject {
    switch (kind) {
      case 'Pod':
        return this.buildPod(input as PodInput, meta);
      case 'Service':
        return this.buildService(input as ServiceInput, meta, undefined);
      case 'EndpointSlice':
        return this.buildSlice(input as EndpointSliceInput, meta);
      case 'Node':
        return this.buildNode(input as NodeInput, meta);
      default:
        return assertNever(kind);
    }
  }

  private buildPod(input: PodInput, meta: ObjectMeta): Pod {
    const errs: FieldError[] = [];
    const containers = (input.spec.containers ?? []).map((c, i) => ({
      name: c.name,
      ports: (c.ports ?? []).map((p, j) => {
        const protocol = p.protocol ?? 'TCP';
        validatePort(`spec.containers[${i}].ports[${j}].containerPort`, p.containerPort, errs);
        validateProtocol(`spec.containers[${i}].ports[${j}].protocol`, protocol, errs);
        return p.name === undefined ? { containerPort: p.containerPort, protocol } : { name: p.name, containerPort: p.containerPort, protocol };
      }),
      ...(c.lifecycle?.preStop?.sleep !== undefined ? { lifecycle: { preStop: { sleep: { seconds: c.lifecycle.preStop.sleep.seconds } } } } : {}),
    }));
    if (containers.length === 0) errs.push({ field: 'spec.containers', type: 'Required value' });
    const seen = new Set<string>();
    containers.forEach((c, i) => {
      if (c.name === '') errs.push({ field: `spec.containers[${i}].name`, type: 'Required value' });
      else if (seen.has(c.name)) errs.push({ field: `spec.containers[${i}].name`, type: 'Duplicate value', value: c.name });
      seen.add(c.name);
    });
    const grace = input.spec.terminationGracePeriodSeconds ?? 30;
    if (!Number.isInteger(grace) || grace < 0) errs.push({ field: 'spec.terminationGracePeriodSeconds', type: 'Invalid value', value: grace, detail: 'must be greater than or equal to 0' });
    // The sleep action's bound (with AllowPodLifecycleSleepActionZeroValue, on by default): it must fit the grace period.
    containers.forEach((c, i) => {
      const sleep = c.lifecycle?.preStop?.sleep?.seconds;
      if (sleep !== undefined && (!Number.isInteger(sleep) || sleep < 0 || sleep > grace)) errs.push({ field: `spec.containers[${i}].lifecycle.preStop.sleep.seconds`, type: 'Invalid value', value: sleep, detail: `must be non-negative and less than terminationGracePeriodSeconds (${grace})` });
    });
    if (errs.length > 0) throw invalidError('Pod', meta.name, errs);
    const nodeName = input.spec.nodeName;
    const bound = nodeName !== undefined && nodeName !== '';
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: meta,
      spec: { ...(bound ? { nodeName } : {}), containers, terminationGracePeriodSeconds: grace, hostNetwork: input.spec.hostNetwork ?? false },
      // The real API server resets a new Pod's status: only the kubelet fills it in.
      status: { phase: 'Pending', podIPs: [], conditions: bound ? [{ type: 'PodScheduled', status: 'True' }] : [] },
    };
  }

  private buildService(input: ServiceInput, meta: ObjectMeta, cur: Service | undefined): Service {
    const errs: FieldError[] = [];
    const type = input.spec.type ?? 'ClusterIP';
    if (!['ClusterIP', 'NodePort', 'LoadBalancer'].includes(type)) errs.push({ field: 'spec.type', type: 'Unsupported value', value: type, detail: 'supported values: "ClusterIP", "LoadBalancer", "NodePort"' });
    const wantsNodePorts = type === 'NodePort' || type === 'LoadBalancer';
    const ports = input.spec.ports.map((p, i) => {
      const protocol = p.protocol ?? 'TCP';
      validatePort(`spec.ports[${i}].port`, p.port, errs);
      validateProtocol(`spec.ports[${i}].protocol`, protocol, errs);
      const targetPort = p.targetPort ?? p.port;
      if (typeof p.targetPort === 'number') validatePort(`spec.ports[${i}].targetPort`, p.targetPort, errs);
      else if (p.targetPort === '') errs.push({ field: `spec.ports[${i}].targetPort`, type: 'Required value' });
      if (p.nodePort !== undefined && !wantsNodePorts) errs.push({ field: `spec.ports[${i}].nodePort`, type: 'Forbidden', detail: "may not be used when `type` is 'ClusterIP'" });
      return { ...(p.name !== undefined ? { name: p.name } : {}), protocol, port: p.port, targetPort, ...(p.nodePort !== undefined ? { nodePort: p.nodePort } : {}) };
    });
    // An update that leaves clusterIP empty keeps the allocated one, as the real API server does.
    const clusterIPIn = input.spec.clusterIP === undefined || input.spec.clusterIP === '' ? (cur?.spec.clusterIP ?? '') : input.spec.clusterIP;
    if (ports.length === 0 && clusterIPIn !== 'None') errs.push({ field: 'spec.ports', type: 'Required value' });
    if (ports.length > 1) {
      const names = new Set<string>();
      ports.forEach((p, i) => {
        if (p.name === undefined || p.name === '') errs.push({ field: `spec.ports[${i}].name`, type: 'Required value' });
        else if (names.has(p.name)) errs.push({ field: `spec.ports[${i}].name`, type: 'Duplicate value', value: p.name });
        else names.add(p.name);
      });
    }
    let etp = input.spec.externalTrafficPolicy;
    if (etp !== undefined && !wantsNodePorts) errs.push({ field: 'spec.externalTrafficPolicy', type: 'Invalid value', value: etp, detail: "may only be set when `type` is 'NodePort' or 'LoadBalancer'" });
    if (etp !== undefined && etp !== 'Cluster' && etp !== 'Local') errs.push({ field: 'spec.externalTrafficPolicy', type: 'Unsupported value', value: etp, detail: 'supported values: "Cluster", "Local"' });
    if (wantsNodePorts) etp ??= 'Cluster';
    const affinity = input.spec.sessionAffinity;
    if (affinity !== undefined && affinity !== 'None' && affinity !== 'ClientIP') errs.push({ field: 'spec.sessionAffinity', type: 'Unsupported value', value: affinity, detail: 'supported values: "ClientIP", "None"' });
    const timeoutIn = input.spec.sessionAffinityConfig?.clientIP?.timeoutSeconds;
    if (affinity !== 'ClientIP' && input.spec.sessionAffinityConfig !== undefined) errs.push({ field: 'spec.sessionAffinityConfig', type: 'Invalid value', detail: `must not be set when session affinity is ${affinity ?? 'None'}` });
    if (affinity === 'ClientIP' && timeoutIn !== undefined && (!Number.isInteger(timeoutIn) || timeoutIn <= 0 || timeoutIn > MAX_CLIENT_IP_AFFINITY_SECONDS)) {
      errs.push({ field: 'spec.sessionAffinityConfig.clientIP.timeoutSeconds', type: 'Invalid value', value: timeoutIn, detail: `must be greater than 0 and less than ${MAX_CLIENT_IP_AFFINITY_SECONDS}` });
    }
    if (cur !== undefined && clusterIPIn !== cur.spec.clusterIP) errs.push({ field: 'spec.clusterIPs[0]', type: 'Invalid value', value: clusterIPIn, detail: 'may not change once set' });
    if (clusterIPIn !== '' && clusterIPIn !== 'None') validateIpv4('spec.clusterIP', clusterIPIn, errs);
    if (errs.length > 0) throw invalidError('Service', meta.name, errs);

    // Allocation is all-or-nothing: anything taken here is returned if a later step fails.
    const takenIp: string[] = [];
    const takenPorts: number[] = [];
    try {
      let clusterIP = clusterIPIn;
      if (cur === undefined) {
        if (clusterIP === '') {
          clusterIP = this.serviceIps.allocate();
          takenIp.push(clusterIP);
        } else if (clusterIP !== 'None') {
          const msg = this.serviceIps.take(clusterIP);
          if (msg !== undefined) throw invalidError('Service', meta.name, [{ field: 'spec.clusterIPs', type: 'Invalid value', value: clusterIP, detail: msg }]);
          takenIp.push(clusterIP);
        }
      }
      const oldPorts = new Map<string, number>();
      for (const p of cur?.spec.ports ?? []) if (p.nodePort !== undefined) oldPorts.set(`${p.protocol}/${p.port}`, p.nodePort);
      const finalPorts = ports.map((p, i) => {
        if (!wantsNodePorts) return p;
        if (p.nodePort !== undefined) {
          if (oldPorts.get(`${p.protocol}/${p.port}`) === p.nodePort || [...oldPorts.values()].includes(p.nodePort)) return p;
          const msg = this.nodePorts.take(p.nodePort);
          if (msg !== undefined) throw invalidError('Service', meta.name, [{ field: `spec.ports[${i}].nodePort`, type: 'Invalid value', value: p.nodePort, detail: msg }]);
          takenPorts.push(p.nodePort);
          return p;
        }
        // An update that leaves nodePort out keeps the one already allocated for that port.
        const kept = oldPorts.get(`${p.protocol}/${p.port}`);
        if (kept !== undefined) return { ...p, nodePort: kept };
        const np = this.nodePorts.allocate();
        takenPorts.push(np);
        return { ...p, nodePort: np };
      });
      return {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: meta,
        // An empty selector is dropped on the wire (omitempty), so it means "no selector", as in the real API.
        spec: {
          type,
          clusterIP,
          ...(input.spec.selector !== undefined && Object.keys(input.spec.selector).length > 0 ? { selector: { ...input.spec.selector } } : {}),
          ports: finalPorts,
          ...(etp !== undefined ? { externalTrafficPolicy: etp } : {}),
          ...(affinity !== undefined ? { sessionAffinity: affinity } : {}),
          ...(affinity === 'ClientIP' ? { sessionAffinityConfig: { clientIP: { timeoutSeconds: timeoutIn ?? DEFAULT_CLIENT_IP_AFFINITY_SECONDS } } } : {}),
        },
        status: cur?.status ?? { loadBalancer: { ingress: [] } },
      };
    } catch (e) {
      for (const ip of takenIp) this.serviceIps.release(ip);
      for (const p of takenPorts) this.nodePorts.release(p);
      throw e;
    }
  }

  private buildSlice(input: EndpointSliceInput, meta: ObjectMeta): EndpointSlice {
    const errs: FieldError[] = [];
    input.endpoints.forEach((e, i) => {
      if (e.addresses.length === 0) errs.push({ field: `endpoints[${i}].addresses`, type: 'Required value', detail: 'must contain at least 1 address' });
      e.addresses.forEach((a, j) => validateIpv4(`endpoints[${i}].addresses[${j}]`, a, errs));
    });
    input.ports.forEach((p, i) => {
      validatePort(`ports[${i}].port`, p.port, errs);
      validateProtocol(`ports[${i}].protocol`, p.protocol, errs);
    });
    if (errs.length > 0) throw invalidError('EndpointSlice', meta.name, errs);
    return { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: meta, addressType: 'IPv4', endpoints: input.endpoints, ports: input.ports };
  }

  private buildNode(input: NodeInput, meta: ObjectMeta): Node {
    const errs: FieldError[] = [];
    const addresses = input.status?.addresses ?? [];
    addresses.forEach((a, i) => {
      if (a.type !== 'Hostname') validateIpv4(`status.addresses[${i}].address`, a.address, errs);
    });
    let podCIDR = input.spec?.podCIDR ?? input.spec?.podCIDRs?.[0];
    if (podCIDR !== undefined) validateCidr('spec.podCIDR', podCIDR, errs);
    if (errs.length > 0) throw invalidError('Node', meta.name, errs);
    if (podCIDR !== undefined) this.nodeCidrs.occupy(podCIDR);
    else podCIDR = this.nodeCidrs.allocate();
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: meta,
      spec: { ...(podCIDR !== undefined ? { podCIDR } : {}), podCIDRs: podCIDR !== undefined ? [podCIDR] : [], unschedulable: input.spec?.unschedulable ?? false },
      status: { addresses: addresses.map((a) => ({ type: a.type, address: a.address })) },
    };
  }

  /** The next state for `update`/`patch`: new metadata and spec, stored status. */
  private withSpec(cur: KubeObject, obj: KubeObject, meta: ObjectMeta): KubeObject {
    switch (cur.kind) {
      case 'Pod': {
        const o = obj as Pod;
        // Objects produced from the stored one share its untouched spec: skip the deep compare.
        if (o.spec !== cur.spec && !deepEqual(normalizePodSpec(o.spec), cur.spec)) {
          throw invalidError('Pod', cur.metadata.name, [{ field: 'spec', type: 'Forbidden', detail: POD_SPEC_FORBIDDEN }]);
        }
        return { ...cur, metadata: meta };
      }
      case 'Service': {
        const o = obj as Service;
        const next = this.buildService({ metadata: { name: meta.name }, spec: o.spec }, meta, cur);
        this.releaseServiceDiff(cur, next);
        return next;
      }
      case 'EndpointSlice': {
        const o = obj as EndpointSlice;
        return this.buildSlice({ metadata: { name: meta.name }, endpoints: o.endpoints, ports: o.ports }, meta);
      }
      case 'Node': {
        const o = obj as Node;
        const want = o.spec.podCIDR ?? '';
        const had = cur.spec.podCIDR ?? '';
        if (want !== had && had !== '') {
          throw invalidError('Node', cur.metadata.name, [{ field: 'spec.podCIDR', type: 'Forbidden', detail: 'node updates may not change podCIDR except from "" to valid' }]);
        }
        const errs: FieldError[] = [];
        if (want !== '') validateCidr('spec.podCIDR', want, errs);
        if (errs.length > 0) throw invalidError('Node', cur.metadata.name, errs);
        if (want !== had) this.nodeCidrs.occupy(want);
        return { ...cur, metadata: meta, spec: { ...(want !== '' ? { podCIDR: want } : {}), podCIDRs: want !== '' ? [want] : [], unschedulable: o.spec.unschedulable } };
      }
      default:
        return assertNever(cur);
    }
  }

  /** The next state for `updateStatus`: stored metadata and spec, new status. */
  private withStatus(cur: KubeObject, obj: KubeObject): KubeObject {
    switch (cur.kind) {
      case 'Pod': {
        const s = (obj as Pod).status;
        const errs: FieldError[] = [];
        let podIP = s.podIP;
        let podIPs = s.podIPs ?? [];
        if (podIP !== undefined && podIP !== '' && podIPs.length === 0) podIPs = [{ ip: podIP }];
        if ((podIP === undefined || podIP === '') && podIPs.length > 0) podIP = podIPs[0]?.ip;
        if (podIP !== undefined && podIP !== '') validateIpv4('status.podIP', podIP, errs);
        if (podIP !== undefined && podIPs[0] !== undefined && podIPs[0].ip !== podIP) errs.push({ field: 'status.podIPs[0].ip', type: 'Invalid value', value: podIPs[0].ip, detail: 'must match status.podIP' });
        if (errs.length > 0) throw invalidError('Pod', cur.metadata.name, errs);
        const status = {
          phase: s.phase,
          ...(podIP !== undefined && podIP !== '' ? { podIP } : {}),
          podIPs: podIPs.map((p) => ({ ip: p.ip })),
          ...(s.hostIP !== undefined ? { hostIP: s.hostIP } : {}),
          conditions: s.conditions ?? [],
        };
        return { ...cur, status };
      }
      case 'Service':
        return { ...cur, status: (obj as Service).status };
      case 'Node': {
        const errs: FieldError[] = [];
        const addresses = (obj as Node).status.addresses;
        addresses.forEach((a, i) => {
          if (a.type !== 'Hostname') validateIpv4(`status.addresses[${i}].address`, a.address, errs);
        });
        if (errs.length > 0) throw invalidError('Node', cur.metadata.name, errs);
        return { ...cur, status: { addresses } };
      }
      case 'EndpointSlice':
        return cur;
      default:
        return assertNever(cur);
    }
  }

  private releaseServiceDiff(cur: Service, next: Service): void {
    const keep = new Set(next.spec.ports.map((p) => p.nodePort).filter((p): p is number => p !== undefined));
    for (const p of cur.spec.ports) if (p.nodePort !== undefined && !keep.has(p.nodePort)) this.nodePorts.release(p.nodePort);
  }

  private releaseAllocations(obj: KubeObject): void {
    if (obj.kind === 'Service') {
      if (obj.spec.clusterIP !== '' && obj.spec.clusterIP !== 'None') this.serviceIps.release(obj.spec.clusterIP);
      for (const p of obj.spec.ports) if (p.nodePort !== undefined) this.nodePorts.release(p.nodePort);
    } else if (obj.kind === 'Node' && obj.spec.podCIDR !== undefined) {
      this.nodeCidrs.release(obj.spec.podCIDR);
    }
  }
}

/** The node a Pod is indexed under (`''`: not bound). */
function nodeOf(o: KubeObject): string {
  return o.kind === 'Pod' ? (o.spec.nodeName ?? '') : '';
}

/** Keep the sorted keys and the by-node index in step with one write (`prev` → `next`, either absent). */
function indexWrite(st: KindState, key: string, prev: KubeObject | undefined, next: KubeObject | undefined): void {
  if ((prev === undefined) !== (next === undefined)) st.sortedKeys = undefined;
  if (next?.kind !== 'Pod' && prev?.kind !== 'Pod') return;
  const from = prev === undefined ? undefined : nodeOf(prev);
  const to = next === undefined ? undefined : nodeOf(next);
  if (from === to) return;
  if (from !== undefined) {
    const n = st.byNode.get(from) as NodeKeys;
    n.keys.delete(key);
    n.sorted = undefined;
    if (n.keys.size === 0) st.byNode.delete(from);
  }
  if (to !== undefined) {
    let n = st.byNode.get(to);
    if (n === undefined) {
      n = { keys: new Set(), sorted: undefined };
      st.byNode.set(to, n);
    }
    n.keys.add(key);
    n.sorted = undefined;
  }
}

/**
 * The keys a list or watch must look at, sorted as etcd returns them: a Pod selection by node
 * uses the by-node index (the remaining selector terms are still checked by `matches`).
 * The arrays are cached and shared: callers must not modify them.
 */
function candidateKeys(st: KindState, kind: Kind, sel: Selector): readonly string[] {
  if (sel.nodeName !== undefined) {
    // A node selector matches only Pods.
    if (kind !== 'Pod') return [];
    const n = st.byNode.get(sel.nodeName);
    if (n === undefined) return [];
    n.sorted ??= [...n.keys].sort();
    return n.sorted;
  }
  st.sortedKeys ??= [...st.objects.keys()].sort();
  return st.sortedKeys;
}

function normalizePodSpec(s: Pod['spec']): Pod['spec'] {
  return {
    ...(s.nodeName !== undefined && s.nodeName !== '' ? { nodeName: s.nodeName } : {}),
    containers: s.containers.map((c) => ({
      name: c.name,
      ports: (c.ports ?? []).map((p) => (p.name === undefined ? { containerPort: p.containerPort, protocol: p.protocol ?? 'TCP' } : { name: p.name, containerPort: p.containerPort, protocol: p.protocol ?? 'TCP' })),
      ...(c.lifecycle?.preStop?.sleep !== undefined ? { lifecycle: { preStop: { sleep: { seconds: c.lifecycle.preStop.sleep.seconds } } } } : {}),
    })),
    terminationGracePeriodSeconds: s.terminationGracePeriodSeconds,
    hostNetwork: s.hostNetwork,
  };
}

function setCondition(conds: Pod['status']['conditions'], type: Pod['status']['conditions'][number]['type'], status: 'True' | 'False'): Pod['status']['conditions'] {
  const out = conds.filter((c) => c.type !== type);
  out.push({ type, status });
  return out;
}

function selectorOf(req: WatchRequest): Selector {
  return {
    ...(req.namespace !== undefined ? { namespace: req.namespace } : {}),
    ...(req.labels !== undefined ? { labels: req.labels } : {}),
    ...(req.nodeName !== undefined ? { nodeName: req.nodeName } : {}),
  };
}

/** Whether an object is inside a list/watch selection. */
export function matches(sel: Selector, o: KubeObject): boolean {
  if (sel.namespace !== undefined && o.metadata.namespace !== sel.namespace) return false;
  if (sel.nodeName !== undefined && (o.kind !== 'Pod' || o.spec.nodeName !== sel.nodeName)) return false;
  if (sel.labels !== undefined) {
    for (const [k, v] of Object.entries(sel.labels)) if (o.metadata.labels[k] !== v) return false;
  }
  return true;
}

/**
 * What a filtered watch sees of one change: an object entering the selection is ADDED, one
 * leaving it is DELETED, as the watch cache reports selector transitions.
 */
function filterEvent(sel: Selector, type: WatchEventType, obj: KubeObject, old: KubeObject | undefined): WatchEvent | undefined {
  const now = matches(sel, obj);
  if (type !== 'MODIFIED' || old === undefined) return now ? { type, object: obj } : undefined;
  const before = matches(sel, old);
  if (now && before) return { type: 'MODIFIED', object: obj };
  if (now) return { type: 'ADDED', object: obj };
  if (before) return { type: 'DELETED', object: obj };
  return undefined;
}

function firstAfter(st: KindState, rv: number): number {
  let lo = st.historyHead;
  let hi = st.history.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((st.history[mid] as HistoryEntry).rv > rv) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

function parseRv(s: string): number {
  if (!/^[0-9]+$/.test(s)) throw new KubeError('BadRequest', `invalid resource version: ${JSON.stringify(s)}`);
  return Number(s);
}

/** The API server's NotFound message: `pods "web-0" not found`. */
export function notFoundMessage(kind: Kind, name: string): string {
  return `${KIND_INFO[kind].resource} ${JSON.stringify(name)} not found`;
}

/** The API server's AlreadyExists message: `pods "web-0" already exists`. */
export function alreadyExistsMessage(kind: Kind, name: string): string {
  return `${KIND_INFO[kind].resource} ${JSON.stringify(name)} already exists`;
}

function notFound(kind: Kind, name: string): KubeError {
  return new KubeError('NotFound', notFoundMessage(kind, name));
}

function conflict(kind: Kind, name: string, why: string): KubeError {
  return new KubeError('Conflict', `Operation cannot be fulfilled on ${KIND_INFO[kind].resource} ${JSON.stringify(name)}: ${why}`);
}

function assertNever(x: never): never {
  throw new Error(`unexpected kind: ${JSON.stringify(x)}`);
}
