/**
 * What the NodePortLocal agent declares about itself for the controller-agnostic invariants: the
 * chain it owns (with its two jumps), the annotation it publishes and how to read it, and the
 * longest retry delay of its workqueue.
 */
import type { Pod, Service } from '@netsim/kube';
import type { ControllerDeclaration, PublishedMapping } from '@netsim/sim';
import { parseNplAnnotation } from './annotations.ts';
import { NPL_MAX_RETRY_DELAY_MS, NPL_MIN_RETRY_DELAY_MS } from './controller.ts';
import { NPL_ANNOTATION, NPL_CHAIN, NPL_ENABLED_ANNOTATION } from './types.ts';

/**
 * Reads a `nodeportlocal.antrea.io` value as published mappings. The annotation carries no Pod
 * IP (consumers reach the Pod through the node), so `podIP` is absent. A value that is not a JSON
 * array, or an entry without a node port, Pod port or known protocol, cannot be read: `undefined`.
 *
 * @example
 * ```ts
 * parseNplMappings('[{"podPort":8080,"nodeIP":"198.51.100.1","nodePort":61000,"protocol":"tcp"}]');
 * // [{ protocol: 'TCP', nodePort: 61000, podPort: 8080 }]
 * ```
 */
export function parseNplMappings(value: string): readonly PublishedMapping[] | undefined {
  let entries;
  try {
    entries = parseNplAnnotation(value);
  } catch {
    return undefined;
  }
  const out: PublishedMapping[] = [];
  for (const e of entries) {
    const protocol = e.protocol === 'tcp' ? 'TCP' : e.protocol === 'udp' ? 'UDP' : undefined;
    if (protocol === undefined || !Number.isInteger(e.nodePort) || !Number.isInteger(e.podPort) || e.nodePort < 1 || e.podPort < 1) return undefined;
    out.push({ protocol, nodePort: e.nodePort, podPort: e.podPort });
  }
  return out;
}

/**
 * The NodePortLocal agent's declaration: `ANTREA-NODE-PORT-LOCAL` in nat, jumped to from
 * PREROUTING and OUTPUT (the chain itself is empty while no Pod has a mapping, so no target is
 * required in it); the Pod annotation; the workqueue's backoff, from 2 s doubling to 120 s.
 */
export const NPL_DECLARATION: ControllerDeclaration = {
  ownedChains: [{ table: 'nat', chain: NPL_CHAIN, hookedFrom: ['PREROUTING', 'OUTPUT'] }],
  annotations: [{ key: NPL_ANNOTATION, parse: parseNplMappings, eligible: (pod, services) => nplEligiblePorts(pod, services) }],
  firstBackoffMs: NPL_MIN_RETRY_DELAY_MS,
  maxBackoffMs: NPL_MAX_RETRY_DELAY_MS,
};

/** One (Pod port, protocol) a Pod must get a mapping for. */
export interface NplEligiblePort {
  readonly podPort: number;
  readonly protocol: 'TCP' | 'UDP';
}

/**
 * The mappings the NodePortLocal agent owes a Pod: for every Service annotated
 * `nodeportlocal.antrea.io/enabled: "true"` that is not of type NodePort, in the Pod's namespace,
 * whose non-empty selector matches the Pod's labels, each TCP or UDP port's targetPort (a named
 * targetPort resolved against the Pod's container ports; unresolvable ones are skipped, as Antrea
 * does). A Pod without an IP is owed nothing. Sorted by port, then protocol.
 */
export function nplEligiblePorts(pod: Pod, services: readonly Service[]): readonly NplEligiblePort[] {
  if ((pod.status.podIP ?? '') === '') return [];
  const out = new Map<string, NplEligiblePort>();
  for (const svc of services) {
    if (svc.metadata.annotations[NPL_ENABLED_ANNOTATION] !== 'true' || svc.spec.type === 'NodePort') continue;
    if (svc.metadata.namespace !== pod.metadata.namespace) continue;
    const selector = svc.spec.selector ?? {};
    const keys = Object.keys(selector);
    if (keys.length === 0 || !keys.every((k) => pod.metadata.labels[k] === selector[k])) continue;
    for (const port of svc.spec.ports) {
      if (port.protocol === 'SCTP') continue;
      const protocol = port.protocol === 'UDP' ? 'UDP' : 'TCP';
      let podPort: number | undefined;
      if (typeof port.targetPort === 'number') podPort = port.targetPort;
      else for (const c of pod.spec.containers) for (const cp of c.ports) if (cp.name === port.targetPort && cp.protocol === port.protocol) podPort ??= cp.containerPort;
      if (podPort !== undefined) out.set(`${podPort}/${protocol}`, { podPort, protocol });
    }
  }
  return [...out.values()].sort((a, b) => a.podPort - b.podPort || (a.protocol < b.protocol ? -1 : a.protocol > b.protocol ? 1 : 0));
}
