/**
 * A kubelet-like Pod lifecycle for one node. It reacts to the API server's writes for Pods bound
 * to its node and moves them through the steps a real kubelet reports:
 *
 * 1. `kube.kubelet.start` (after `sandboxDelayMs`): the sandbox is created and the CNI assigns an
 *    IP from the node's podCIDR (see `NodeIpam`); status becomes Running with podIP/podIPs and
 *    hostIP, not yet Ready.
 * 2. `kube.kubelet.ready` (after `readyDelayMs`): the readiness probe passes; Ready=True.
 * 3. On a graceful delete, `kube.kubelet.terminate` (after the longest `preStop` sleep of its
 *    containers plus `terminationDelayMs`, at most the grace period): containers stopped, the
 *    sandbox torn down and its IP released, status Ready=False and phase Succeeded. Until then the
 *    Pod keeps running and stays Ready (its endpoints serving and terminating).
 * 4. `kube.kubelet.remove` (after `removeDelayMs`): the kubelet deletes the Pod with grace 0 and a
 *    uid precondition, which removes it from the API.
 *
 * A Pod force-deleted (grace 0) while running has its sandbox torn down `terminationDelayMs`
 * later. A stopped kubelet does nothing: its Pods stay Terminating until force-deleted.
 */
import type { ApiServer, Change } from './apiServer.ts';
import { isKubeError } from './errors.ts';
import { NodeIpam, type IpamPolicy } from './ipam.ts';
import { objectKey, type Pod, type PodCondition } from './objects.ts';
import type { Scheduler } from './runtime.ts';
import { wantsTrace, type KubeTraceSink } from './trace.ts';

export interface KubeletOptions {
  readonly nodeName: string;
  /** Default `round-robin` (CNI host-local). */
  readonly ipamPolicy?: IpamPolicy;
  /** Pod bound → IP assigned and Running (ms, default 500). */
  readonly sandboxDelayMs?: number;
  /** Running → Ready (ms, default 500; 0 makes the Pod Ready in the same status update). */
  readonly readyDelayMs?: number;
  /** deletionTimestamp seen → containers stopped and IP released (ms, default 1000, capped by the grace period). */
  readonly terminationDelayMs?: number;
  /** Containers stopped → the final delete (ms, default 100). */
  readonly removeDelayMs?: number;
  readonly trace?: KubeTraceSink;
}

type PodState = 'starting' | 'running' | 'terminating' | 'completed';

interface Tracked {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  state: PodState;
  ip: string | undefined;
}

/**
 * @example
 * ```ts
 * api.create('Node', { metadata: { name: 'node-a' }, spec: { podCIDR: '198.18.1.0/24' } });
 * const kubelet = new Kubelet(api, { nodeName: 'node-a', ipamPolicy: 'lowest-free' });
 * kubelet.start();
 * ```
 */
export class Kubelet {
  readonly nodeName: string;
  private readonly api: ApiServer;
  private readonly scheduler: Scheduler;
  private readonly policy: IpamPolicy;
  private readonly sandboxDelayMs: number;
  private readonly readyDelayMs: number;
  private readonly terminationDelayMs: number;
  private readonly removeDelayMs: number;
  private readonly trace: KubeTraceSink | undefined;
  private readonly pods = new Map<string, Tracked>();
  /** Pods waiting for an address (range exhausted or no podCIDR yet), oldest first. */
  private readonly waitingForIp: string[] = [];
  private ipamState: NodeIpam | undefined;
  private unsubscribe: (() => void) | undefined;
  private running = false;

  constructor(api: ApiServer, opts: KubeletOptions) {
    this.api = api;
    this.scheduler = api.runtime.scheduler;
    this.nodeName = opts.nodeName;
    this.policy = opts.ipamPolicy ?? 'round-robin';
    this.sandboxDelayMs = ms(opts.sandboxDelayMs ?? 500, 'sandboxDelayMs');
    this.readyDelayMs = ms(opts.readyDelayMs ?? 500, 'readyDelayMs');
    this.terminationDelayMs = ms(opts.terminationDelayMs ?? 1000, 'terminationDelayMs');
    this.removeDelayMs = ms(opts.removeDelayMs ?? 100, 'removeDelayMs');
    this.trace = opts.trace;
  }

  /** The node's IPAM, once the node has a podCIDR. */
  ipam(): NodeIpam | undefined {
    return this.ipamState;
  }

  /** Starts reacting to Pods bound to this node, including those already there. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.unsubscribe = this.api.onChange((c) => this.onChange(c));
    for (const p of this.api.list('Pod', { nodeName: this.nodeName }).items) this.observe(p);
  }

  /** Stops the kubelet (node down): no further transitions; allocations are kept. */
  stop(): void {
    this.running = false;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /**
   * The Pod's containers exit on their own (a Job's Pod, `restartPolicy: Never`): the kubelet
   * reports the terminal `phase`, Ready=False, and tears the sandbox down, so the CNI releases the
   * IP, which the next Pod may get; the Pod stays in the API, its status still showing the old
   * `podIP`, until something deletes it. Returns false when the Pod is not running on this node.
   */
  complete(namespace: string, name: string, phase: 'Succeeded' | 'Failed'): boolean {
    const pod = this.api.find('Pod', namespace, name);
    const t = pod === undefined ? undefined : this.pods.get(pod.metadata.uid);
    if (pod === undefined || t === undefined || t.state !== 'running' || !this.running) return false;
    t.state = 'completed';
    this.writeStatus(pod, { ...pod.status, phase, conditions: conditions(false) });
    this.emit('kube.kubelet', { node: this.nodeName, pod: objectKey(pod), uid: t.uid, transition: phase === 'Succeeded' ? 'succeeded' : 'failed' });
    if (t.ip !== undefined) {
      const ip = t.ip;
      this.later(this.terminationDelayMs, 'kube.kubelet.teardown', () => this.releaseIp(ip, t));
    }
    return true;
  }

  private onChange(c: Change): void {
    if (c.kind === 'Node' && c.object.metadata.name === this.nodeName) {
      this.retryWaiting();
      return;
    }
    if (c.kind !== 'Pod') return;
    const pod = c.object as Pod;
    if (pod.spec.nodeName !== this.nodeName) return;
    if (c.type === 'DELETED') {
      const t = this.pods.get(pod.metadata.uid);
      if (t === undefined) return;
      this.pods.delete(t.uid);
      if (t.state !== 'terminating' && t.state !== 'completed' && t.ip !== undefined) {
        // Force-deleted while running: the kubelet still tears the sandbox down.
        const ip = t.ip;
        this.later(this.terminationDelayMs, 'kube.kubelet.teardown', () => this.releaseIp(ip, t));
      }
      return;
    }
    this.observe(pod);
  }

  private observe(pod: Pod): void {
    const uid = pod.metadata.uid;
    let t = this.pods.get(uid);
    if (t === undefined) {
      if (pod.status.phase === 'Succeeded' || pod.status.phase === 'Failed') return;
      t = { uid, namespace: pod.metadata.namespace, name: pod.metadata.name, state: 'starting', ip: undefined };
      this.pods.set(uid, t);
      if (pod.metadata.deletionTimestamp === undefined) {
        const tt = t;
        this.later(this.sandboxDelayMs, 'kube.kubelet.start', () => this.startPod(tt));
        return;
      }
    }
    if (pod.metadata.deletionTimestamp !== undefined && t.state !== 'terminating' && t.state !== 'completed') {
      t.state = 'terminating';
      const graceMs = (pod.metadata.deletionGracePeriodSeconds ?? 0) * 1000;
      // The preStop hooks run first (a sleep keeps the container serving), then the containers stop.
      const preStopMs = Math.max(0, ...pod.spec.containers.map((c) => (c.lifecycle?.preStop?.sleep?.seconds ?? 0) * 1000));
      const tt = t;
      this.later(Math.min(preStopMs + this.terminationDelayMs, graceMs), 'kube.kubelet.terminate', () => this.terminate(tt));
    }
  }

  private current(t: Tracked): Pod | undefined {
    const p = this.api.find('Pod', t.namespace, t.name);
    return p !== undefined && p.metadata.uid === t.uid ? p : undefined;
  }

  private ensureIpam(): NodeIpam | undefined {
    if (this.ipamState !== undefined) return this.ipamState;
    const node = this.api.find('Node', '', this.nodeName);
    const cidr = node?.spec.podCIDR;
    if (cidr === undefined) return undefined;
    this.ipamState = new NodeIpam(cidr, this.policy);
    return this.ipamState;
  }

  private startPod(t: Tracked): void {
    const pod = this.current(t);
    if (pod === undefined || t.state !== 'starting') return;
    const node = this.api.find('Node', '', this.nodeName);
    const hostIP = node?.status.addresses.find((a) => a.type === 'InternalIP')?.address;
    if (pod.spec.hostNetwork) {
      // A host-network Pod shares the node's network namespace: its IP is the node's, no IPAM.
      if (hostIP === undefined) {
        this.emit('kube.ipam', { node: this.nodeName, pod: objectKey(pod), uid: t.uid, result: 'no node InternalIP for a hostNetwork Pod' });
        if (!this.waitingForIp.includes(t.uid)) this.waitingForIp.push(t.uid);
        return;
      }
      this.runPod(pod, t, hostIP, hostIP, false);
      return;
    }
    const ipam = this.ensureIpam();
    const ip = ipam?.allocate(t.uid);
    if (ip === undefined) {
      this.emit('kube.ipam', { node: this.nodeName, pod: objectKey(pod), uid: t.uid, result: ipam === undefined ? 'no podCIDR' : 'range exhausted' });
      if (!this.waitingForIp.includes(t.uid)) this.waitingForIp.push(t.uid);
      return;
    }
    this.emit('kube.ipam', { node: this.nodeName, pod: objectKey(pod), uid: t.uid, result: 'allocated', ip });
    this.runPod(pod, t, ip, hostIP, true);
  }

  private runPod(pod: Pod, t: Tracked, ip: string, hostIP: string | undefined, fromIpam: boolean): void {
    t.ip = fromIpam ? ip : undefined;
    t.state = 'running';
    const ready = this.readyDelayMs === 0;
    this.writeStatus(pod, {
      ...pod.status,
      phase: 'Running',
      podIP: ip,
      podIPs: [{ ip }],
      ...(hostIP !== undefined ? { hostIP } : {}),
      conditions: conditions(ready),
    });
    this.emit('kube.kubelet', { node: this.nodeName, pod: objectKey(pod), uid: t.uid, transition: ready ? 'running+ready' : 'running', ip });
    if (!ready) this.later(this.readyDelayMs, 'kube.kubelet.ready', () => this.markReady(t));
  }

  private markReady(t: Tracked): void {
    const pod = this.current(t);
    if (pod === undefined || t.state !== 'running' || pod.metadata.deletionTimestamp !== undefined) return;
    this.writeStatus(pod, { ...pod.status, conditions: conditions(true) });
    this.emit('kube.kubelet', { node: this.nodeName, pod: objectKey(pod), uid: t.uid, transition: 'ready' });
  }

  private terminate(t: Tracked): void {
    const pod = this.current(t);
    if (t.ip !== undefined) this.releaseIp(t.ip, t);
    const wi = this.waitingForIp.indexOf(t.uid);
    if (wi >= 0) this.waitingForIp.splice(wi, 1);
    if (pod === undefined) return;
    this.writeStatus(pod, { ...pod.status, phase: 'Succeeded', conditions: conditions(false) });
    this.emit('kube.kubelet', { node: this.nodeName, pod: objectKey(pod), uid: t.uid, transition: 'terminated' });
    this.later(this.removeDelayMs, 'kube.kubelet.remove', () => {
      const p = this.current(t);
      if (p === undefined) return;
      this.api.delete('Pod', t.namespace, t.name, { gracePeriodSeconds: 0, preconditions: { uid: t.uid } });
      this.emit('kube.kubelet', { node: this.nodeName, pod: `${t.namespace}/${t.name}`, uid: t.uid, transition: 'removed' });
    });
  }

  private releaseIp(ip: string, t: Tracked): void {
    if (this.ipamState?.release(ip) === true) {
      this.emit('kube.ipam', { node: this.nodeName, pod: `${t.namespace}/${t.name}`, uid: t.uid, result: 'released', ip });
    }
    t.ip = undefined;
    this.retryWaiting();
  }

  private retryWaiting(): void {
    const uid = this.waitingForIp.shift();
    if (uid === undefined) return;
    const t = this.pods.get(uid);
    if (t !== undefined && t.state === 'starting') this.later(0, 'kube.kubelet.start', () => this.startPod(t));
  }

  private writeStatus(pod: Pod, status: Pod['status']): void {
    try {
      this.api.updateStatus({ ...pod, status });
    } catch (e) {
      // The Pod vanished between the read and the write: a real kubelet's status manager drops the update too.
      if (isKubeError(e) && e.code === 'NotFound') return;
      throw e;
    }
  }

  private later(delayMs: number, label: string, run: () => void): void {
    this.scheduler.schedule(delayMs, `${label} ${this.nodeName}`, () => {
      if (this.running) run();
    });
  }

  private emit(type: 'kube.kubelet' | 'kube.ipam', fields: Record<string, string>): void {
    if (wantsTrace(this.trace, type)) this.trace({ type, at: this.scheduler.now(), fields });
  }
}

function conditions(ready: boolean): PodCondition[] {
  const s = ready ? 'True' : 'False';
  return [
    { type: 'PodScheduled', status: 'True' },
    { type: 'Initialized', status: 'True' },
    { type: 'ContainersReady', status: s },
    { type: 'Ready', status: s },
  ];
}

function ms(v: number, what: string): number {
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${what} must be a non-negative integer number of milliseconds, got ${v}`);
  return v;
}
