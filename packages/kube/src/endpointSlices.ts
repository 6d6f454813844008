/**
 * The EndpointSlice controller, as kube-controller-manager runs it: for every Service with a
 * selector, slices listing the selected Pods that have an IP and are not finished.
 *
 * - Endpoint conditions follow the real controller: `serving` = Pod Ready, `terminating` = Pod
 *   has a deletionTimestamp, `ready` = serving and not terminating.
 * - A named `targetPort` is resolved per Pod against its container ports; Pods that resolve the
 *   ports differently land in different slices, as in the real controller.
 * - A Service that selects nothing keeps one placeholder slice with no endpoints and no ports.
 * - Slices carry `kubernetes.io/service-name` and
 *   `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`, and get
 *   `<service>-<5 random characters>` names.
 *
 * Each affected Service syncs as its own step (`kube.endpointslice.sync`) `syncDelayMs` after
 * the change that affected it.
 */
import type { ApiServer, Change } from './apiServer.ts';
import { isKubeError } from './errors.ts';
import { deepEqual } from './json.ts';
import { isPodReady, keyOf, splitKey, type Endpoint, type EndpointPort, type Pod, type Service } from './objects.ts';
import type { RandomSource, Scheduler } from './runtime.ts';

export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
export const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
export const MANAGED_BY = 'endpointslice-controller.k8s.io';

// The alphabet apimachinery's generateName suffixes use (no vowels, no confusable digits).
const ALPHANUMS = 'bcdfghjklmnpqrstvwxz2456789';

export interface EndpointSliceControllerOptions {
  /** Delay between a change and the sync of the Services it affects (ms, default 0). */
  readonly syncDelayMs?: number;
}

/**
 * @example
 * ```ts
 * new EndpointSliceController(api).start();
 * ```
 */
export class EndpointSliceController {
  private readonly api: ApiServer;
  private readonly scheduler: Scheduler;
  private readonly random: RandomSource;
  private readonly syncDelayMs: number;
  private readonly dirty = new Set<string>();
  private unsubscribe: (() => void) | undefined;

  constructor(api: ApiServer, opts: EndpointSliceControllerOptions = {}) {
    this.api = api;
    this.scheduler = api.runtime.scheduler;
    this.random = api.runtime.random;
    this.syncDelayMs = opts.syncDelayMs ?? 0;
    if (!Number.isSafeInteger(this.syncDelayMs) || this.syncDelayMs < 0) throw new RangeError(`syncDelayMs must be a non-negative integer, got ${this.syncDelayMs}`);
  }

  start(): void {
    if (this.unsubscribe !== undefined) return;
    this.unsubscribe = this.api.onChange((c) => this.onChange(c));
    for (const s of this.api.list('Service').items) this.enqueue(keyOf(s.metadata.namespace, s.metadata.name));
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  private onChange(c: Change): void {
    if (c.kind === 'Service') {
      this.enqueue(keyOf(c.object.metadata.namespace, c.object.metadata.name));
    } else if (c.kind === 'Pod') {
      const ns = c.object.metadata.namespace;
      for (const s of this.api.list('Service', { namespace: ns }).items) {
        const sel = s.spec.selector;
        if (sel === undefined) continue;
        if (selects(sel, c.object as Pod) || (c.old !== undefined && selects(sel, c.old as Pod))) this.enqueue(keyOf(ns, s.metadata.name));
      }
    }
  }

  private enqueue(key: string): void {
    if (this.dirty.has(key)) return;
    this.dirty.add(key);
    this.scheduler.schedule(this.syncDelayMs, `kube.endpointslice.sync ${key}`, () => {
      this.dirty.delete(key);
      if (this.unsubscribe !== undefined) this.sync(key);
    });
  }

  /** Reconciles the slices of one Service with the Pods it selects. */
  private sync(key: string): void {
    const { namespace, name } = splitKey(key);
    const svc = this.api.find('Service', namespace, name);
    const existing = this.api
      .list('EndpointSlice', { namespace, labels: { [SERVICE_NAME_LABEL]: name, [MANAGED_BY_LABEL]: MANAGED_BY } })
      .items.slice()
      .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
    const desired = svc === undefined || svc.spec.selector === undefined ? [] : this.desiredSlices(svc);
    for (let i = 0; i < Math.max(existing.length, desired.length); i++) {
      const have = existing[i];
      const want = desired[i];
      if (want === undefined) {
        if (have !== undefined) this.tolerate(() => this.api.delete('EndpointSlice', namespace, have.metadata.name));
      } else if (have === undefined) {
        this.tolerate(() =>
          this.api.create('EndpointSlice', {
            metadata: { name: this.generateName(name, namespace), namespace, labels: { [SERVICE_NAME_LABEL]: name, [MANAGED_BY_LABEL]: MANAGED_BY } },
            endpoints: want.endpoints,
            ports: want.ports,
          }),
        );
      } else if (!deepEqual(have.endpoints, want.endpoints) || !deepEqual(have.ports, want.ports)) {
        this.tolerate(() => this.api.update({ ...have, endpoints: want.endpoints, ports: want.ports }));
      }
    }
  }

  private desiredSlices(svc: Service): { endpoints: Endpoint[]; ports: EndpointPort[] }[] {
    const sel = svc.spec.selector ?? {};
    const pods = this.api.list('Pod', { namespace: svc.metadata.namespace, labels: sel }).items;
    const groups = new Map<string, { endpoints: Endpoint[]; ports: EndpointPort[] }>();
    for (const pod of pods) {
      if (!shouldBeInEndpoints(pod)) continue;
      const ports = resolvePorts(svc, pod);
      const gk = JSON.stringify(ports);
      let g = groups.get(gk);
      if (g === undefined) {
        g = { endpoints: [], ports };
        groups.set(gk, g);
      }
      const serving = isPodReady(pod);
      const terminating = pod.metadata.deletionTimestamp !== undefined;
      g.endpoints.push({
        addresses: [pod.status.podIP as string],
        conditions: { ready: serving && !terminating, serving, terminating },
        ...(pod.spec.nodeName !== undefined ? { nodeName: pod.spec.nodeName } : {}),
        targetRef: { kind: 'Pod', namespace: pod.metadata.namespace, name: pod.metadata.name, uid: pod.metadata.uid },
      });
    }
    const out = [...groups.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([, g]) => g);
    for (const g of out) g.endpoints.sort((a, b) => ((a.targetRef?.name ?? '') < (b.targetRef?.name ?? '') ? -1 : 1));
    // A Service that selects nothing still gets one placeholder slice.
    return out.length > 0 ? out : [{ endpoints: [], ports: [] }];
  }

  private generateName(service: string, namespace: string): string {
    for (;;) {
      let suffix = '';
      for (let i = 0; i < 5; i++) suffix += ALPHANUMS[this.random.int(ALPHANUMS.length)] as string;
      const n = `${service}-${suffix}`;
      if (this.api.find('EndpointSlice', namespace, n) === undefined) return n;
    }
  }

  /** Writes race with nothing inside one step, but the Service or slice may be gone: the next sync repairs it. */
  private tolerate(f: () => unknown): void {
    try {
      f();
    } catch (e) {
      if (isKubeError(e) && (e.code === 'NotFound' || e.code === 'AlreadyExists' || e.code === 'Conflict')) return;
      throw e;
    }
  }
}

function selects(sel: Readonly<Record<string, string>>, pod: Pod): boolean {
  for (const [k, v] of Object.entries(sel)) if (pod.metadata.labels[k] !== v) return false;
  return true;
}

/** The real controller's `ShouldPodBeInEndpoints` with terminating endpoints included. */
function shouldBeInEndpoints(pod: Pod): boolean {
  if (pod.status.podIP === undefined || pod.status.podIP === '') return false;
  return pod.status.phase !== 'Succeeded' && pod.status.phase !== 'Failed';
}

function resolvePorts(svc: Service, pod: Pod): EndpointPort[] {
  const out: EndpointPort[] = [];
  for (const sp of svc.spec.ports) {
    let port: number | undefined;
    if (typeof sp.targetPort === 'number') port = sp.targetPort;
    else {
      for (const c of pod.spec.containers) {
        const cp = c.ports.find((p) => p.name === sp.targetPort && p.protocol === sp.protocol);
        if (cp !== undefined) {
          port = cp.containerPort;
          break;
        }
      }
    }
    if (port === undefined) continue;
    out.push({ ...(sp.name !== undefined ? { name: sp.name } : {}), protocol: sp.protocol, port });
  }
  return out;
}
