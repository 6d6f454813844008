import { produce } from 'immer';
import {
  ApiServer,
  isTombstone,
  manualRuntime,
  objectKey,
  type ApiServerOptions,
  type KubeObject,
  type Pod,
  type PodInput,
  type Protocol,
  type ResourceEventHandler,
} from '../src/index.ts';

/** A Pod input with one container and the given ports. */
export function podInput(
  name: string,
  opts: { namespace?: string; nodeName?: string; labels?: Record<string, string>; ports?: { name?: string; containerPort: number; protocol?: Protocol }[]; grace?: number } = {},
): PodInput {
  return {
    metadata: { name, ...(opts.namespace !== undefined ? { namespace: opts.namespace } : {}), ...(opts.labels !== undefined ? { labels: opts.labels } : {}) },
    spec: {
      ...(opts.nodeName !== undefined ? { nodeName: opts.nodeName } : {}),
      containers: [{ name: 'main', ports: opts.ports ?? [] }],
      ...(opts.grace !== undefined ? { terminationGracePeriodSeconds: opts.grace } : {}),
    },
  };
}

export function setup(seed = 1, opts: Omit<ApiServerOptions, 'runtime'> = {}) {
  const rt = manualRuntime(seed);
  const api = new ApiServer({ runtime: rt, ...opts });
  return { rt, api, sched: rt.scheduler };
}

/** Gives a Pod an IP and readiness through the status subresource, as a kubelet would. */
export function runPod(api: ApiServer, pod: Pod, ip: string, ready = true): Pod {
  return api.updateStatus(
    produce(pod, (d) => {
      d.status.phase = 'Running';
      d.status.podIP = ip;
      d.status.podIPs = [{ ip }];
      d.status.conditions = [{ type: 'Ready', status: ready ? 'True' : 'False' }];
    }),
  );
}

/** `u3` for the third uid of a CounterIdSource: short enough to read in expectations. */
export function shortUid(uid: string): string {
  return `u${parseInt(uid.slice(-12), 16)}`;
}

function describeObj(o: KubeObject): string {
  const ip = o.kind === 'Pod' && o.status.podIP !== undefined ? ` ip=${o.status.podIP}` : '';
  return `${shortUid(o.metadata.uid)} rv=${o.metadata.resourceVersion}${ip}`;
}

/** A handler that logs every call as a readable line. */
export function recorder<T extends KubeObject>(): { log: string[]; handler: ResourceEventHandler<T> } {
  const log: string[] = [];
  return {
    log,
    handler: {
      onAdd: (o, initial) => log.push(`add ${objectKey(o)} ${describeObj(o)}${initial ? ' initial' : ''}`),
      onUpdate: (o, n) => log.push(`update ${objectKey(n)} ${describeObj(o)} -> ${describeObj(n)}`),
      onDelete: (d) => log.push(isTombstone(d) ? `delete ${d.key} tombstone(${describeObj(d.obj)})` : `delete ${objectKey(d)} ${describeObj(d)}`),
    },
  };
}
