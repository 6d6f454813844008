/**
 * What kube-proxy knows about Services and their endpoints, rebuilt from the informer caches at
 * each sync (kube-proxy's `ServicePortMap` and `EndpointsMap`, which its change trackers keep
 * equal to the caches), and `CategorizeEndpoints`.
 */
import { DEFAULT_CLIENT_IP_AFFINITY_SECONDS, SERVICE_NAME_LABEL, type EndpointSlice, type Service } from '@netsim/kube';
import { serviceExternalChain, servicePortEndpointChain, servicePortPolicyClusterChain, servicePortPolicyLocalChain } from './hash.ts';

/** One port of one Service (kube-proxy's `servicePortInfo`). */
export interface ServicePortInfo {
  /** `namespace/name:port` (or `namespace/name` for an unnamed port). */
  readonly nameString: string;
  /** The map key: name string and protocol. */
  readonly key: string;
  readonly namespacedName: string;
  readonly protocol: 'tcp' | 'udp';
  readonly clusterIP: string;
  readonly port: number;
  /** 0 when the Service has no node port. */
  readonly nodePort: number;
  readonly externalPolicyLocal: boolean;
  /** `sessionAffinity: ClientIP`: its timeout in seconds (kube-proxy's `StickyMaxAgeSeconds`); 0 without affinity. */
  readonly stickyMaxAgeSeconds: number;
  readonly clusterPolicyChainName: string;
  readonly localPolicyChainName: string;
  readonly externalChainName: string;
}

/** One endpoint of one service port (kube-proxy's `endpointInfo`). */
export interface EndpointInfo {
  readonly ip: string;
  readonly port: number;
  /** `IP:port`. */
  readonly str: string;
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  readonly isLocal: boolean;
  readonly chainName: string;
}

function portNameString(namespacedName: string, portName: string | undefined): string {
  return portName === undefined || portName === '' ? namespacedName : `${namespacedName}:${portName}`;
}

/** The service ports kube-proxy proxies (TCP and UDP of Services with a cluster IP), sorted by key. */
export function buildServicePortMap(services: readonly Service[]): Map<string, ServicePortInfo> {
  const out = new Map<string, ServicePortInfo>();
  for (const svc of services) {
    if (svc.spec.clusterIP === '' || svc.spec.clusterIP === 'None') continue;
    const nn = `${svc.metadata.namespace}/${svc.metadata.name}`;
    for (const p of svc.spec.ports) {
      if (p.protocol === 'SCTP') continue;
      const protocol = p.protocol === 'UDP' ? 'udp' : 'tcp';
      const nameString = portNameString(nn, p.name);
      const externallyAccessible = p.nodePort !== undefined && p.nodePort !== 0;
      out.set(`${nameString}/${protocol}`, {
        nameString,
        key: `${nameString}/${protocol}`,
        namespacedName: nn,
        protocol,
        clusterIP: svc.spec.clusterIP,
        port: p.port,
        nodePort: p.nodePort ?? 0,
        externalPolicyLocal: externallyAccessible && svc.spec.externalTrafficPolicy === 'Local',
        stickyMaxAgeSeconds: svc.spec.sessionAffinity === 'ClientIP' ? (svc.spec.sessionAffinityConfig?.clientIP.timeoutSeconds ?? DEFAULT_CLIENT_IP_AFFINITY_SECONDS) : 0,
        clusterPolicyChainName: servicePortPolicyClusterChain(nameString, protocol),
        localPolicyChainName: servicePortPolicyLocalChain(nameString, protocol),
        externalChainName: serviceExternalChain(nameString, protocol),
      });
    }
  }
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Endpoints per service port key, from the EndpointSlices (deduplicated by IP:port, sorted). */
export function buildEndpointsMap(slices: readonly EndpointSlice[], nodeName: string): Map<string, EndpointInfo[]> {
  const byKey = new Map<string, Map<string, EndpointInfo>>();
  for (const slice of slices) {
    const svcName = slice.metadata.labels[SERVICE_NAME_LABEL];
    if (svcName === undefined) continue;
    const nn = `${slice.metadata.namespace}/${svcName}`;
    for (const port of slice.ports) {
      if (port.protocol === 'SCTP') continue;
      const protocol = port.protocol === 'UDP' ? 'udp' : 'tcp';
      const nameString = portNameString(nn, port.name);
      const key = `${nameString}/${protocol}`;
      const eps = byKey.get(key) ?? new Map<string, EndpointInfo>();
      byKey.set(key, eps);
      for (const ep of slice.endpoints) {
        const ip = ep.addresses[0];
        if (ip === undefined) continue;
        const str = `${ip}:${port.port}`;
        if (eps.has(str)) continue;
        eps.set(str, {
          ip,
          port: port.port,
          str,
          ready: ep.conditions.ready,
          serving: ep.conditions.serving,
          terminating: ep.conditions.terminating,
          isLocal: ep.nodeName === nodeName,
          chainName: servicePortEndpointChain(nameString, protocol, str),
        });
      }
    }
  }
  const out = new Map<string, EndpointInfo[]>();
  for (const [k, eps] of [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) out.set(k, [...eps.values()].sort((a, b) => (a.str < b.str ? -1 : a.str > b.str ? 1 : 0)));
  return out;
}

/** The endpoints each traffic policy uses, as `CategorizeEndpoints` returns them. */
export interface CategorizedEndpoints {
  readonly clusterEndpoints: readonly EndpointInfo[];
  readonly localEndpoints: readonly EndpointInfo[];
  readonly allLocallyReachableEndpoints: readonly EndpointInfo[];
  readonly hasEndpoints: boolean;
}

/**
 * `CategorizeEndpoints` (internal traffic policy Cluster, no topology hints): Cluster policy uses
 * the ready endpoints, or the serving-terminating ones when none is ready; Local policy the
 * node's ready endpoints, or its serving-terminating ones.
 */
export function categorizeEndpoints(endpoints: readonly EndpointInfo[], svc: ServicePortInfo): CategorizedEndpoints {
  let clusterEndpoints = endpoints.filter((e) => e.ready);
  if (clusterEndpoints.length === 0) clusterEndpoints = endpoints.filter((e) => e.serving && e.terminating);
  let hasEndpoints = clusterEndpoints.length > 0;
  if (!svc.externalPolicyLocal) return { clusterEndpoints, localEndpoints: [], allLocallyReachableEndpoints: clusterEndpoints, hasEndpoints };
  let hasLocalReady = false;
  let hasLocalServingTerminating = false;
  for (const e of endpoints) {
    if (e.ready) {
      hasEndpoints = true;
      if (e.isLocal) hasLocalReady = true;
    } else if (e.serving && e.terminating) {
      hasEndpoints = true;
      if (e.isLocal) hasLocalServingTerminating = true;
    }
  }
  let localEndpoints: EndpointInfo[] = [];
  if (hasLocalReady) localEndpoints = endpoints.filter((e) => e.isLocal && e.ready);
  else if (hasLocalServingTerminating) localEndpoints = endpoints.filter((e) => e.isLocal && e.serving && e.terminating);
  const all = new Map<string, EndpointInfo>();
  for (const e of [...clusterEndpoints, ...localEndpoints]) all.set(e.str, e);
  return { clusterEndpoints, localEndpoints, allLocallyReachableEndpoints: [...all.values()], hasEndpoints };
}
