import { produce } from 'immer';
import { ApiServer, manualRuntime, type ApiServerOptions, type Pod, type PodInput, type Protocol } from '../src/index.ts';

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
