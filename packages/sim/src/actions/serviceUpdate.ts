/**
 * `service.update`: a Service is replaced by the given spec, as `kubectl replace` or a PUT does:
 * ports added, removed or renamed, targetPorts changed (to numbers or container port names), the
 * selector, annotations (NodePortLocal on or off), type and externalTrafficPolicy. The cluster IP
 * stays; a port that keeps its number and protocol keeps its node port, as the API server
 * preserves allocated node ports on update.
 */
import type { Service } from '@netsim/kube';
import type { ServiceSpec } from '../scenario.ts';
import { checkServiceSpec } from './check.ts';
import { namespaceOr as ns, serviceInput } from './objects.ts';
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

/** What changed between a Service and the spec that replaces it, in a few words (`ports 80→80,81; type NodePort`). */
export function serviceChanges(cur: Service, next: ServiceSpec): string {
  const out: string[] = [];
  const portText = (ps: readonly { readonly name?: string; readonly port: number; readonly targetPort: number | string; readonly protocol: string }[]): string =>
    ps.map((p) => `${p.name !== undefined && p.name !== '' ? `${p.name}:` : ''}${p.port}→${p.targetPort}/${p.protocol}`).join(',');
  const before = portText(cur.spec.ports);
  const after = portText(next.ports);
  if (before !== after) out.push(`ports ${before} ⇒ ${after}`);
  const sel = (s: Readonly<Record<string, string>> | undefined): string =>
    Object.entries(s ?? {})
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
  if (sel(cur.spec.selector) !== sel(next.selector)) out.push(`selector ${sel(cur.spec.selector) || '{}'} ⇒ ${sel(next.selector) || '{}'}`);
  const type = next.type ?? 'ClusterIP';
  if (cur.spec.type !== type) out.push(`type ${cur.spec.type} ⇒ ${type}`);
  const etp = type === 'ClusterIP' ? undefined : (next.externalTrafficPolicy ?? 'Cluster');
  if (cur.spec.externalTrafficPolicy !== etp) out.push(`externalTrafficPolicy ${cur.spec.externalTrafficPolicy ?? 'none'} ⇒ ${etp ?? 'none'}`);
  if (sel(cur.metadata.annotations) !== sel(next.annotations)) out.push(`annotations ${sel(cur.metadata.annotations) || '{}'} ⇒ ${sel(next.annotations) || '{}'}`);
  return out.join('; ');
}

/** The object a replace writes: the spec's fields over the current object (its cluster IP and kept node ports). */
function replacement(cur: Service, spec: ServiceSpec): Service {
  const next = serviceInput(spec);
  const wantsNodePorts = next.spec.type === 'NodePort' || next.spec.type === 'LoadBalancer';
  return {
    ...cur,
    metadata: { ...cur.metadata, annotations: { ...(next.metadata.annotations ?? {}) } },
    spec: {
      type: next.spec.type ?? 'ClusterIP',
      clusterIP: cur.spec.clusterIP,
      selector: next.spec.selector ?? {},
      ports: next.spec.ports.map((p) => {
        const protocol = p.protocol ?? 'TCP';
        const kept = wantsNodePorts ? cur.spec.ports.find((o) => o.port === p.port && o.protocol === protocol)?.nodePort : undefined;
        const nodePort = p.nodePort ?? kept;
        return { protocol, port: p.port, targetPort: p.targetPort ?? p.port, ...(p.name !== undefined ? { name: p.name } : {}), ...(nodePort !== undefined ? { nodePort } : {}) };
      }),
      ...(next.spec.externalTrafficPolicy !== undefined ? { externalTrafficPolicy: next.spec.externalTrafficPolicy } : {}),
      ...(next.spec.sessionAffinity !== undefined ? { sessionAffinity: next.spec.sessionAffinity } : {}),
      ...(spec.sessionAffinityTimeoutSeconds !== undefined ? { sessionAffinityConfig: { clientIP: { timeoutSeconds: spec.sessionAffinityTimeoutSeconds } } } : {}),
    },
  };
}

export const serviceUpdate = defineAction({
  kind: 'service.update',
  summary: 'a Service is replaced by a new spec (ports, targetPorts, selector, annotations, type, externalTrafficPolicy)',
  check(c) {
    c.object('service', checkServiceSpec);
  },
  scope: () => '*',
  apply(a, w) {
    const key = `${ns(a.service.namespace)}/${a.service.name}`;
    const cur = w.api.find('Service', ns(a.service.namespace), a.service.name);
    const changes = cur === undefined ? '' : serviceChanges(cur, a.service);
    w.emit('world.service.update', { service: key, ...(changes !== '' ? { changes } : {}) });
    w.tolerate('service.update', () => {
      const now = w.api.get('Service', ns(a.service.namespace), a.service.name);
      w.api.update(replacement(now, a.service));
    });
  },
  story: {
    'world.service.update': (e) => storyLine(`service ${str(e['service'])} updated${e['changes'] !== undefined ? `: ${str(e['changes'])}` : ''}`),
  },
});
