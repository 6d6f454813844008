/**
 * kube-proxy clears conntrack for UDP only when endpoints change: a UDP flow to an endpoint that
 * went away is deleted, a TCP flow keeps its DNAT.
 */
import { describe, expect, it } from 'vitest';
import { formatCtEntry } from '@netsim/kernel';
import { World, agentsStayLive, datapathProbes, noDuplicateRulesAnywhere, ownedChainsStayProgrammed, publishedMappingsServed, resyncChangesNothing, staleDnatAnywhere, type PodSpec, type ServiceSpec } from '@netsim/sim';
import { kubeProxy } from '../../src/index.ts';
import { fieldOf } from '../helpers.ts';

const dns: ServiceSpec = {
  name: 'dns',
  type: 'NodePort',
  selector: { app: 'dns' },
  ports: [
    { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP', nodePort: 30053 },
    { name: 'dns-tcp', port: 53, targetPort: 8080, protocol: 'TCP', nodePort: 30054 },
  ],
};

describe('kube-proxy conntrack clean-up', () => {
  it('should delete the UDP flows of an endpoint that went away and leave TCP flows alone', async () => {
    const w = new World({
      seed: 1,
      cluster: { nodes: [{ name: 'node-1' }], services: [dns], pods: [{ name: 'dns-0', node: 'node-1', labels: { app: 'dns' }, ports: [{ port: 5353, protocol: 'UDP' }, { port: 8080, protocol: 'TCP' }] }] },
      controller: kubeProxy('fixed'),
      datapath: true,
    });
    const node = '192.0.2.11';
    const flows = (): string[] => (w.datapath?.host('node-1').conntrack.list(w.engine.now()) ?? []).map((e) => formatCtEntry(e, w.engine.now()));
    let before: string[] = [];
    w.engine.at(3000, { kind: 'action', label: 'client traffic' }, () => {
      const dp = w.datapath;
      if (dp === undefined) throw new Error('no data plane');
      dp.net.udp('lb', node, 30053, { nowMs: 3000 });
      expect(dp.net.connect('lb', node, 30054, { nowMs: 3000, synRetries: 0 }).kind).toBe('established');
      before = flows();
    });
    w.at(4000, { kind: 'pod.delete', name: 'dns-0' });
    expect((await w.run(8000)).status).toBe('ok');
    const podIp = fieldOf(
      w.events.find((e) => e.type === 'kube.kubelet' && e['transition'] === 'running'),
      'ip',
    );
    expect(podIp).toMatch(/^198\.18\.0\.\d+$/);
    expect(before.filter((l) => l.startsWith('udp') && l.includes(`src=${podIp}`))).toHaveLength(1);
    expect(before.filter((l) => l.startsWith('tcp') && l.includes(`src=${podIp}`))).toHaveLength(1);
    const after = flows();
    expect(after.filter((l) => l.startsWith('udp'))).toEqual([]);
    expect(after.filter((l) => l.startsWith('tcp') && l.includes(`src=${podIp}`))).toHaveLength(1);
    const cmds = w.events.filter((e) => e.type === 'conntrack.exec').map((e) => `${fieldOf(e, 'argv')} → ${e['exit'] === 0 ? 0 : 1}`);
    const clusterIp = w.api.get('Service', 'default', 'dns').spec.clusterIP;
    expect(cmds).toEqual([
      // A new proxy process cannot know which endpoints went away while none ran: its first
      // sync clears the flows of every UDP Service (none here).
      `conntrack -D --orig-dst ${clusterIp} -p udp → 1`,
      'conntrack -D -p udp --dport 30053 → 1',
      // The Service got its first endpoint: flows rejected before are cleared (none here).
      `conntrack -D --orig-dst ${clusterIp} -p udp → 1`,
      'conntrack -D -p udp --dport 30053 → 1',
      // The endpoint went away: the NodePort flow DNATed to it is deleted.
      `conntrack -D -p udp --dport 30053 --dst-nat ${podIp} → 0`,
      `conntrack -D --orig-dst ${clusterIp} --dst-nat ${podIp} -p udp → 1`,
    ]);
  });
});

describe('kube-proxy conntrack clean-up of a Service with no rules until now', () => {
  const ports = (http: number, dns: number): ServiceSpec['ports'] => [
    { name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: http },
    { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP', nodePort: dns },
  ];
  const web: ServiceSpec = { name: 'web', type: 'NodePort', selector: { app: 'web' }, ports: ports(30080, 30053) };
  const webLocal: ServiceSpec = { name: 'web-local', type: 'NodePort', externalTrafficPolicy: 'Local', selector: { app: 'web' }, ports: ports(30081, 30054) };
  const pod = (name: string): PodSpec => ({ name, node: 'node-1', labels: { app: 'web' }, ports: [{ port: 8080, protocol: 'TCP' }, { port: 5353, protocol: 'UDP' }] });

  it('should clear the flows sent to a re-created Service before its rules, though its endpoints never left the proxy', async () => {
    // The history the 10,000-run campaign found (seed 1, run 3,624): the sync that sees the old
    // Service gone starts before its EndpointSlice's deletion is handled, so the proxy's endpoints
    // map never empties; the re-created Service (a new cluster IP) is programmed a second after a
    // Pod's UDP flow, keeping its source port, went to the new address and met no DNAT.
    const w = new World({
      seed: 403578841,
      cluster: { nodes: [{ name: 'node-1' }], queueMode: 'DeltaFIFO', ipamPolicy: 'lowest-free', services: [web, webLocal], pods: [pod('stable-0'), pod('web-2')] },
      controller: kubeProxy('fixed', { syncPeriodMs: 5000 }),
      invariants: [staleDnatAnywhere(), noDuplicateRulesAnywhere(), ownedChainsStayProgrammed(), publishedMappingsServed(), datapathProbes(), agentsStayLive(), resyncChangesNothing()],
      settleMs: 3000,
    });
    w.at(3001, { kind: 'service.delete', name: 'web' });
    w.at(3002, { kind: 'service.create', service: web });
    const outcome = await w.run(20000);
    expect(outcome.status === 'violation' ? outcome.violation.message : outcome.status).toBe('ok');
    const clusterIp = w.api.get('Service', 'default', 'web').spec.clusterIP;
    const cmds = w.events.filter((e) => e.type === 'conntrack.exec').map((e) => `${fieldOf(e, 'argv')} → ${e['exit'] === 0 ? 0 : 1}`);
    // The sync that programs the new cluster IP clears its flows: the Pod's blackholed one goes.
    expect(cmds).toContain(`conntrack -D --orig-dst ${clusterIp} -p udp → 0`);
  });

  it('should clear the node port flows of a UDP Service port that was renamed away, though the Service lost its endpoints', async () => {
    // The history the 10,000-run campaign found next (seed 1, run 3,942): web-local's UDP port is
    // renamed from dns to web (same node port) and its selector matches no Pod. The old port's
    // endpoints are not "endpoints that went away" of any current port, and the new port has none:
    // an external client's flow, keeping its source port, still went to the old endpoint.
    const w = new World({
      seed: 0,
      cluster: { nodes: [{ name: 'node-1' }], queueMode: 'DeltaFIFO', ipamPolicy: 'round-robin', services: [web, webLocal], pods: [pod('stable-0'), pod('web-2')] },
      controller: kubeProxy('fixed', { syncPeriodMs: 5000 }),
      invariants: [staleDnatAnywhere(), noDuplicateRulesAnywhere(), ownedChainsStayProgrammed(), publishedMappingsServed(), datapathProbes(), agentsStayLive(), resyncChangesNothing()],
      settleMs: 3000,
    });
    const renamed: ServiceSpec = { ...webLocal, selector: { app: 'other' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30081 }, { name: 'web', port: 53, targetPort: 5353, protocol: 'UDP', nodePort: 30054 }] };
    w.at(1150, { kind: 'service.update', service: renamed });
    const outcome = await w.run(8000);
    expect(outcome.status === 'violation' ? outcome.violation.message : outcome.status).toBe('ok');
    const clusterIp = w.api.get('Service', 'default', 'web-local').spec.clusterIP;
    const cmds = w.events.filter((e) => e.type === 'conntrack.exec').map((e) => `${fieldOf(e, 'argv')} → ${e['exit'] === 0 ? 0 : 1}`);
    // The sync after the rename clears the old port's cluster IP and node port flows.
    expect(cmds).toContain(`conntrack -D --orig-dst ${clusterIp} -p udp → 1`);
    expect(cmds).toContain('conntrack -D -p udp --dport 30054 → 0');
  });

  it('should not judge a UDP node port flow DNATed before a policy change to Local as a finding while fresh flows are dropped', async () => {
    // The history the 10,000-run campaign found next (seed 1, run 5,913): web goes from Cluster
    // to Local policy; node-2, with no endpoint, still has Cluster rules when the probe's flow
    // starts, so the flow is DNATed to stable-0 on node-1 and keeps that binding (kube-proxy does
    // not clear flows on a policy change, and stable-0 still serves). New flows are dropped.
    const w = new World({
      seed: 0,
      cluster: { nodes: [{ name: 'node-1' }, { name: 'node-2' }], queueMode: 'DeltaFIFO', ipamPolicy: 'round-robin', services: [web, webLocal], pods: [pod('stable-0')] },
      controller: kubeProxy('fixed', { syncPeriodMs: 5000 }),
      invariants: [staleDnatAnywhere(), noDuplicateRulesAnywhere(), ownedChainsStayProgrammed(), publishedMappingsServed(), datapathProbes(), agentsStayLive(), resyncChangesNothing()],
      settleMs: 3000,
    });
    w.at(1150, { kind: 'service.update', service: { ...web, externalTrafficPolicy: 'Local', annotations: { 'nodeportlocal.antrea.io/enabled': 'true' } } });
    const fresh: string[] = [];
    w.engine.at(7000, { kind: 'action', label: 'client traffic' }, () => {
      fresh.push(w.datapath?.probeUdp('lb', '192.0.2.12', 30053, undefined, 7000).outcome ?? 'no data plane');
    });
    const outcome = await w.run(8000);
    expect(outcome.status === 'violation' ? outcome.violation.message : outcome.status).toBe('ok');
    expect(fresh).toEqual(['no-answer']);
  });
});
