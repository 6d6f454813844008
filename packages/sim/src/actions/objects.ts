/** Scenario specs as API objects, and back: what the Pod and Service actions write. */
import type { Pod, PodInput, ServiceInput } from '@netsim/kube';
import type { PodSpec, ServiceSpec } from '../scenario.ts';

export const DEFAULT_NAMESPACE = 'default';

export function namespaceOr(n: string | undefined): string {
  return n ?? DEFAULT_NAMESPACE;
}

export function podInput(p: PodSpec): PodInput {
  return {
    metadata: { name: p.name, namespace: p.namespace ?? DEFAULT_NAMESPACE, labels: { ...(p.labels ?? {}) } },
    spec: {
      nodeName: p.node,
      containers: [
        {
          name: 'main',
          ports: p.ports.map((x) => ({ containerPort: x.port, protocol: x.protocol, ...(x.name !== undefined ? { name: x.name } : {}) })),
          ...(p.preStopSleepSeconds !== undefined ? { lifecycle: { preStop: { sleep: { seconds: p.preStopSleepSeconds } } } } : {}),
        },
      ],
      terminationGracePeriodSeconds: p.terminationGracePeriodSeconds ?? 0,
    },
  };
}

export function serviceInput(s: ServiceSpec): ServiceInput {
  return {
    metadata: { name: s.name, namespace: s.namespace ?? DEFAULT_NAMESPACE, annotations: { ...(s.annotations ?? {}) } },
    spec: {
      type: s.type ?? 'ClusterIP',
      selector: { ...s.selector },
      ports: s.ports.map((p) => ({ port: p.port, targetPort: p.targetPort, protocol: p.protocol, ...(p.name !== undefined ? { name: p.name } : {}), ...(p.nodePort !== undefined ? { nodePort: p.nodePort } : {}) })),
      ...(s.externalTrafficPolicy !== undefined ? { externalTrafficPolicy: s.externalTrafficPolicy } : {}),
      ...(s.sessionAffinity !== undefined ? { sessionAffinity: s.sessionAffinity } : {}),
      ...(s.sessionAffinityTimeoutSeconds !== undefined ? { sessionAffinityConfig: { clientIP: { timeoutSeconds: s.sessionAffinityTimeoutSeconds } } } : {}),
    },
  };
}

/** A Pod's spec as a scenario writes it (what a same-name recreate creates again). */
export function specOfPod(p: Pod): PodSpec {
  return {
    namespace: p.metadata.namespace,
    name: p.metadata.name,
    node: p.spec.nodeName ?? '',
    labels: p.metadata.labels,
    ports: p.spec.containers.flatMap((c) => c.ports.map((x) => ({ port: x.containerPort, protocol: x.protocol === 'UDP' ? ('UDP' as const) : ('TCP' as const), ...(x.name !== undefined ? { name: x.name } : {}) }))),
    terminationGracePeriodSeconds: p.spec.terminationGracePeriodSeconds,
    ...preStopOf(p),
  };
}

function preStopOf(p: Pod): { readonly preStopSleepSeconds?: number } {
  const s = p.spec.containers.flatMap((c) => (c.lifecycle?.preStop?.sleep !== undefined ? [c.lifecycle.preStop.sleep.seconds] : []));
  return s.length > 0 ? { preStopSleepSeconds: Math.max(...s) } : {};
}

/** `8080/TCP,8081/UDP`: a Pod's ports in trace events. */
export function portsText(ports: PodSpec['ports']): string {
  return ports.map((p) => `${p.port}/${p.protocol}`).join(',');
}
