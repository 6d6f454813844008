/**
 * kube-proxy's rules on a two-node cluster: a Cluster-policy NodePort Service with endpoints on
 * both nodes, and a Local-policy one whose only endpoint is on node-1.
 */
import { describe, expect, it } from 'vitest';
import { formatSave } from '@netsim/netfilter';
import { World, story, type ServiceSpec } from '@netsim/sim';
import { fieldOf } from '../helpers.ts';
import { kubeProxy, probability, serviceExternalChain, servicePortEndpointChain, servicePortPolicyClusterChain, servicePortPolicyLocalChain, type KubeProxyVariant } from '../../src/index.ts';

const web: ServiceSpec = { name: 'web', type: 'NodePort', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30080 }] };
const local: ServiceSpec = { name: 'local', type: 'NodePort', externalTrafficPolicy: 'Local', selector: { app: 'local' }, ports: [{ port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30081 }] };
const pod = (name: string, node: string, app: string) => ({ name, node, labels: { app }, ports: [{ port: 8080, protocol: 'TCP' as const }] });

function world(variant: KubeProxyVariant, services: readonly ServiceSpec[] = [web, local]): World {
  return new World({
    seed: 1,
    cluster: { nodes: [{ name: 'node-1' }, { name: 'node-2' }], services, pods: [pod('web-0', 'node-1', 'web'), pod('web-1', 'node-2', 'web'), pod('web-2', 'node-2', 'web'), pod('local-0', 'node-1', 'local')] },
    controller: kubeProxy(variant),
  });
}

const nat = (w: World, node: string): string[] =>
  formatSave(w.ruleset(node))
    .split('\n')
    .filter((l) => l.startsWith('-A '));

describe('kube-proxy:fixed', () => {
  it('should print statistic probabilities as %0.10f of 1/(endpoints left)', () => {
    expect([3, 2].map(probability)).toEqual(['0.3333333333', '0.5000000000']);
  });

  it('should write the NodePort chains for Cluster policy: EXT marks for masquerade, SVC spreads over three SEPs, each SEP hairpins and DNATs', async () => {
    const w = world('fixed', [web]);
    expect((await w.run(5000)).status).toBe('ok');
    const svc = servicePortPolicyClusterChain('default/web:http', 'tcp');
    const ext = serviceExternalChain('default/web:http', 'tcp');
    const ips = w.api
      .list('Pod')
      .items.filter((p) => p.metadata.labels['app'] === 'web')
      .map((p) => p.status.podIP ?? '')
      .sort();
    expect(ips).toHaveLength(3);
    const seps = ips.map((ip) => servicePortEndpointChain('default/web:http', 'tcp', `${ip}:8080`));
    const rules = nat(w, 'node-2');
    expect(rules).toContain(`-A KUBE-NODEPORTS -p tcp -m comment --comment "default/web:http" -m tcp --dport 30080 -j ${ext}`);
    expect(rules).toContain(`-A ${ext} -m comment --comment "masquerade traffic for default/web:http external destinations" -j KUBE-MARK-MASQ`);
    expect(rules).toContain(`-A ${ext} -j ${svc}`);
    expect(rules.filter((l) => l.startsWith(`-A ${svc} -m comment`))).toEqual([
      `-A ${svc} -m comment --comment "default/web:http -> ${ips[0]}:8080" -m statistic --mode random --probability 0.33333333349 -j ${seps[0]}`,
      `-A ${svc} -m comment --comment "default/web:http -> ${ips[1]}:8080" -m statistic --mode random --probability 0.50000000000 -j ${seps[1]}`,
      `-A ${svc} -m comment --comment "default/web:http -> ${ips[2]}:8080" -j ${seps[2]}`,
    ]);
    expect(rules).toContain(`-A ${seps[0]} -s ${ips[0]}/32 -m comment --comment "default/web:http" -j KUBE-MARK-MASQ`);
    expect(rules).toContain(`-A ${seps[0]} -p tcp -m comment --comment "default/web:http" -m tcp -j DNAT --to-destination ${ips[0]}:8080`);
    expect(rules).toContain('-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN');
    expect(rules).toContain('-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully');
    // The NodePorts jump is the last rule of KUBE-SERVICES.
    expect(rules.filter((l) => l.startsWith('-A KUBE-SERVICES ')).at(-1)).toBe('-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS');
    // kube-proxy's jumps sit at the top of the built-in chains.
    expect(rules.find((l) => l.startsWith('-A PREROUTING '))).toBe('-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES');
  });

  it('should jump to KUBE-NODEPORTS for the primary IP only with nodePortAddresses primary, as --nodeport-addresses=primary does', async () => {
    const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }], services: [web], pods: [pod('web-0', 'node-1', 'web')] }, controller: kubeProxy('fixed', { nodePortAddresses: 'primary' }) });
    expect((await w.run(3000)).status).toBe('ok');
    const last = nat(w, 'node-1').filter((l) => l.startsWith('-A KUBE-SERVICES '));
    expect(last.at(-1)).toBe('-A KUBE-SERVICES -d 192.0.2.11/32 -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -j KUBE-NODEPORTS');
    expect(last.some((l) => l.includes('addrtype'))).toBe(false);
    expect(() => kubeProxy('fixed', { nodePortAddresses: '192.0.2.0/24' })).toThrow(/nodePortAddresses/);
  });

  it('should send external traffic of a Local Service to KUBE-SVL on the node with the endpoint, and drop it in filter KUBE-EXTERNAL-SERVICES elsewhere', async () => {
    const w = world('fixed');
    expect((await w.run(5000)).status).toBe('ok');
    const ext = serviceExternalChain('default/local', 'tcp');
    const svl = servicePortPolicyLocalChain('default/local', 'tcp');
    expect(nat(w, 'node-1')).toContain(`-A ${ext} -j ${svl}`);
    const n2 = nat(w, 'node-2');
    expect(n2.some((l) => l.includes(svl))).toBe(false);
    expect(n2).toContain(`-A ${ext} -s 198.18.0.0/15 -m comment --comment "pod traffic for default/local external destinations" -j ${servicePortPolicyClusterChain('default/local', 'tcp')}`);
    expect(n2).toContain('-A KUBE-EXTERNAL-SERVICES -p tcp -m comment --comment "default/local has no local endpoints" -m addrtype --dst-type LOCAL -m tcp --dport 30081 -j DROP');
  });

  it('should flush and delete the chains of an endpoint that went away in the same restore', async () => {
    const w = world('fixed', [web]);
    w.at(3000, { kind: 'pod.delete', name: 'web-2' });
    expect((await w.run(8000)).status).toBe('ok');
    const removed = w.events.filter((e) => e.type === 'iptables.restore' && /\n-X KUBE-SEP-/.test(fieldOf(e, 'input')));
    expect(removed.length).toBeGreaterThanOrEqual(2);
    for (const n of ['node-1', 'node-2']) expect(nat(w, n).filter((l) => l.startsWith('-A KUBE-SEP-') && l.includes('DNAT'))).toHaveLength(2);
  });
});

describe('kube-proxy:faulty', () => {
  it('should fail every restore on the node without a local endpoint, so none of its Service rules are written', async () => {
    const w = world('faulty');
    expect((await w.run(40_000)).status).toBe('ok');
    const failures = w.events.filter((e) => e.type === 'iptables.restore' && e['node'] === 'node-2' && e['exit'] !== 0);
    // The first sync after the endpoints are ready, then one retry per sync period.
    expect(failures.length).toBeGreaterThanOrEqual(2);
    expect(fieldOf(failures[0], 'stderr')).toContain(`Chain '${servicePortPolicyLocalChain('default/local', 'tcp')}' does not exist`);
    expect(nat(w, 'node-2').some((l) => l.includes('KUBE-SVC-') || l.includes('--dport 30080'))).toBe(false);
    expect(nat(w, 'node-1').some((l) => l.includes('--dport 30080'))).toBe(true);
    expect(story(w.events).join('\n')).toMatch(/node-2\/kube-proxy error: Failed to execute iptables-restore/);
  });

  it('should work like the fixed proxy when every Local Service has an endpoint on the node', async () => {
    const w = world('faulty', [web]);
    expect((await w.run(5000)).status).toBe('ok');
    expect(w.events.some((e) => e.type === 'iptables.restore' && e['exit'] !== 0)).toBe(false);
  });
});
