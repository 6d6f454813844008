/**
 * kube-proxy in nftables mode: table `ip kube-proxy` as the nftables proxier writes it, its
 * partial syncs, and the faulty variant's lost change after a failed transaction.
 */
import { describe, expect, it } from 'vitest';
import { formatRuleset } from '@netsim/nftables';
import { World, probesSucceed, story, type ServiceSpec } from '@netsim/sim';
import { fieldOf } from '../helpers.ts';
import { CONTROLLERS, kubeProxyNft, servicePortChainNameBase, servicePortEndpointChainNameBase, type KubeProxyNftVariant } from '../../src/index.ts';

const web: ServiceSpec = { name: 'web', type: 'NodePort', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30080 }] };
const local: ServiceSpec = { name: 'local', type: 'NodePort', externalTrafficPolicy: 'Local', selector: { app: 'local' }, ports: [{ port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30081 }] };
const pod = (name: string, node: string, app: string) => ({ name, node, labels: { app }, ports: [{ port: 8080, protocol: 'TCP' as const }] });

function twoNodes(variant: KubeProxyNftVariant = 'fixed'): World {
  return new World({
    seed: 1,
    cluster: { nodes: [{ name: 'node-1' }, { name: 'node-2' }], services: [web, local], pods: [pod('web-0', 'node-1', 'web'), pod('web-1', 'node-2', 'web'), pod('local-0', 'node-1', 'local')] },
    controller: kubeProxyNft(variant),
  });
}

const podIp = (w: World, name: string): string => w.api.find('Pod', 'default', name)?.status.podIP ?? '';
/** The `nft -f -` inputs kube-proxy ran on `node`, in order. */
const transactions = (w: World, node: string): string[] => w.events.filter((e) => e.type === 'nft.exec' && fieldOf(e, 'node') === node).map((e) => fieldOf(e, 'input'));

describe('kube-proxy-nft: names', () => {
  it('should hash and name the per-Service and per-endpoint chains as kube-proxy does (its own examples)', () => {
    expect(servicePortChainNameBase('ns1/svc1', 'p80', 'tcp')).toBe('ULMVA6XW-ns1/svc1/tcp/p80');
    expect(servicePortEndpointChainNameBase('ns1/svc1', 'p80', 'tcp', '10.180.0.1:80')).toBe('5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80');
    expect(servicePortChainNameBase('ns4/svc4', 'p80', 'tcp')).toBe('LAUZTJTB-ns4/svc4/tcp/p80');
    expect(servicePortEndpointChainNameBase('ns4/svc4', 'p80', 'tcp', '10.0.4.1:80')).toBe('WAHRBT2B-ns4/svc4/tcp/p80__10.0.4.1/80');
  });
});

describe('kube-proxy-nft:fixed', () => {
  it('should hook its base chains at kube-proxy priorities and jump to the helper chains', async () => {
    const w = twoNodes();
    expect((await w.run(3000)).status).toBe('ok');
    const text = formatRuleset(w.nftRuleset('node-1'));
    expect(text).toContain('table ip kube-proxy {\n\tcomment "rules for kube-proxy"\n');
    expect(text).toContain('\tchain nat-prerouting {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n\t\tjump services\n\t}');
    expect(text).toContain('\tchain nat-postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n\t\tjump masquerading\n\t}');
    expect(text).toContain('\tchain filter-input {\n\t\ttype filter hook input priority -110; policy accept;\n\t\tct state new jump nodeport-endpoints-check\n\t\tct state new jump service-endpoints-check\n\t}');
    expect(text).toContain('\tchain masquerading {\n\t\tmeta mark & 0x00004000 == 0x00000000 return\n\t\tmeta mark set meta mark ^ 0x00004000\n\t\tmasquerade fully-random\n\t}');
    expect(text).toContain('\tchain services {\n\t\tip daddr . meta l4proto . th dport vmap @service-ips\n\t\tfib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports\n\t}');
    expect(text).toContain('\tchain cluster-ips-check {\n\t\tip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"\n\t}');
    // Without --nodeport-addresses the nodeport-ips set is deleted (after an add, so the delete cannot fail).
    expect(text).not.toContain('set nodeport-ips');
  });

  it('should dispatch the ClusterIP and the NodePort through the verdict maps to service and endpoint chains that spread with numgen and DNAT', async () => {
    const w = twoNodes();
    expect((await w.run(3000)).status).toBe('ok');
    const text = formatRuleset(w.nftRuleset('node-2'));
    const svc = `service-${servicePortChainNameBase('default/web', 'http', 'tcp')}`;
    const ext = `external-${servicePortChainNameBase('default/web', 'http', 'tcp')}`;
    const ips = [podIp(w, 'web-0'), podIp(w, 'web-1')].sort();
    const eps = ips.map((ip) => `endpoint-${servicePortEndpointChainNameBase('default/web', 'http', 'tcp', `${ip}:8080`)}`);
    const cip = w.api.find('Service', 'default', 'web')?.spec.clusterIP ?? '';
    expect(text).toMatch(new RegExp(`${cip.replaceAll('.', '\\.')} \\. tcp \\. 80 : goto ${svc}`));
    expect(text).toContain(`tcp . 30080 : goto ${ext}`);
    expect(text).toContain(`\tchain ${ext} {\n\t\tjump mark-for-masquerade\n\t\tgoto ${svc}\n\t}`);
    expect(text).toContain(`\tchain ${svc} {\n\t\tip daddr ${cip} tcp dport 80 ip saddr != 198.18.0.0/15 jump mark-for-masquerade\n\t\tnumgen random mod 2 vmap { 0 : goto ${eps[0]}, 1 : goto ${eps[1]} }\n\t}`);
    expect(text).toContain(`\tchain ${eps[0]} {\n\t\tip saddr ${ips[0]} jump mark-for-masquerade\n\t\tmeta l4proto tcp dnat to ${ips[0]}:8080\n\t}`);
  });

  it('should short-circuit Pod and host traffic of a Local Service and drop external traffic in no-endpoint-nodeports where it has no local endpoint', async () => {
    const w = twoNodes();
    expect((await w.run(3000)).status).toBe('ok');
    const base = servicePortChainNameBase('default/local', '', 'tcp');
    const n1 = formatRuleset(w.nftRuleset('node-1'));
    const n2 = formatRuleset(w.nftRuleset('node-2'));
    expect(base).toMatch(/^[A-Z2-7]{8}-default\/local\/tcp\/$/);
    expect(n1).toContain(`\tchain external-${base} {\n\t\tip saddr 198.18.0.0/15 goto service-${base} comment "short-circuit pod traffic"\n\t\tfib saddr type local jump mark-for-masquerade comment "masquerade local traffic"\n\t\tfib saddr type local goto service-${base} comment "short-circuit local traffic"\n\t\tgoto local-${base}\n\t}`);
    expect(n2).not.toContain(`local-${base}`);
    expect(n2).toContain('elements = { tcp . 30081 comment "default/local" : drop }');
    expect(n1).not.toContain('tcp . 30081 comment');
  });

  it('should reject traffic to a Service without endpoints through no-endpoint-services and the reject chain', async () => {
    const lonely: ServiceSpec = { name: 'lonely', selector: { app: 'none' }, ports: [{ port: 80, targetPort: 8080, protocol: 'TCP' }] };
    const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }], services: [lonely] }, controller: kubeProxyNft('fixed') });
    expect((await w.run(2000)).status).toBe('ok');
    const cip = w.api.find('Service', 'default', 'lonely')?.spec.clusterIP ?? '';
    expect(formatRuleset(w.nftRuleset('node-1'))).toContain(`elements = { ${cip} . tcp . 80 comment "default/lonely" : goto reject-chain }`);
  });

  it('should write only the changed Service on a partial sync, and delete the chain it no longer uses a second after flushing it', async () => {
    const w = twoNodes();
    w.at(3000, { kind: 'pod.delete', name: 'web-1' });
    w.at(6000, { kind: 'pod.create', pod: pod('local-1', 'node-2', 'local') });
    expect((await w.run(8000)).status).toBe('ok');
    const txs = transactions(w, 'node-1');
    const oldEp = `endpoint-${servicePortEndpointChainNameBase('default/web', 'http', 'tcp', '198.18.1.2:8080')}`;
    const svc = `service-${servicePortChainNameBase('default/web', 'http', 'tcp')}`;
    const afterDelete = txs.find((t) => t.includes(`add rule ip kube-proxy ${svc} numgen random mod 1 vmap`));
    expect(afterDelete).toContain(`flush chain ip kube-proxy ${oldEp}\n`);
    expect(afterDelete).not.toContain(`add chain ip kube-proxy ${oldEp}`);
    // Only web's chains: no table setup, nothing of the Local Service, no map element (the ClusterIP still has endpoints).
    expect(afterDelete).not.toContain('add table');
    expect(afterDelete).not.toContain('default/local');
    expect(afterDelete).not.toContain('element');
    expect(txs).toContain(`delete chain ip kube-proxy ${oldEp}\n`);
    expect(formatRuleset(w.nftRuleset('node-1'))).not.toContain(oldEp);
    expect(story(w.events).join('\n')).not.toMatch(/Unable to delete stale chains/);
  });

  it('should keep a chain used again before its deletion was due, instead of deleting it under a reference (kubernetes/kubernetes#122604)', async () => {
    const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }], services: [web], pods: [pod('web-0', 'node-1', 'web')] }, controller: kubeProxyNft('fixed', { minSyncPeriodMs: 200 }) });
    // The only ready endpoint goes: the Service chain is flushed as unused. web-1 turns ready
    // within the second, so the chain is used again; a later change runs the deletion pass,
    // which without the fix fails with "Device or resource busy" on the chain.
    w.at(2600, { kind: 'pod.create', pod: pod('web-1', 'node-1', 'web') });
    w.at(3000, { kind: 'pod.delete', name: 'web-0' });
    w.at(6000, { kind: 'pod.create', pod: pod('web-2', 'node-1', 'web') });
    expect((await w.run(8000)).status).toBe('ok');
    const svc = `service-${servicePortChainNameBase('default/web', 'http', 'tcp')}`;
    const txs = transactions(w, 'node-1');
    expect(txs.some((t) => t.startsWith(`flush chain ip kube-proxy ${svc}\n`) || t.includes(`\nflush chain ip kube-proxy ${svc}\n`))).toBe(true);
    expect(txs.some((t) => t.includes(`delete chain ip kube-proxy ${svc}`))).toBe(false);
    expect(story(w.events).join('\n')).not.toMatch(/Unable to delete stale chains/);
    expect(formatRuleset(w.nftRuleset('node-1'))).toContain(`chain ${svc} {`);
  });

  it('should delete a chain used again before its deletion was due, under its reference, with the flaw of kubernetes/kubernetes#122604 (faulty, stale-chain-reuse)', async () => {
    const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }], services: [web], pods: [pod('web-0', 'node-1', 'web')] }, controller: kubeProxyNft('faulty', { minSyncPeriodMs: 200, flaw: 'stale-chain-reuse' }) });
    w.at(2600, { kind: 'pod.create', pod: pod('web-1', 'node-1', 'web') });
    w.at(3000, { kind: 'pod.delete', name: 'web-0' });
    w.at(6000, { kind: 'pod.create', pod: pod('web-2', 'node-1', 'web') });
    expect((await w.run(8000)).status).toBe('ok');
    const svc = `service-${servicePortChainNameBase('default/web', 'http', 'tcp')}`;
    expect(transactions(w, 'node-1').some((t) => t.includes(`delete chain ip kube-proxy ${svc}\n`))).toBe(true);
    // The issue's log: the whole deletion transaction fails on the chain still jumped to.
    expect(story(w.events).join('\n')).toMatch(/Unable to delete stale chains; will retry later.*Device or resource busy/s);
    expect(formatRuleset(w.nftRuleset('node-1'))).toContain(`chain ${svc} {`);
  });

  it('should refuse options it does not know', () => {
    expect(() => kubeProxyNft('fixed', { flaw: 'stale-chain-reuse' })).toThrow(/kube-proxy-nft:fixed: option "flaw" is not an option/);
    expect(() => kubeProxyNft('fixed', { iptablesSyncPeriod: 1 })).toThrow(/kube-proxy-nft:fixed: option "iptablesSyncPeriod" is not an option/);
    expect(CONTROLLERS['kube-proxy-nft:faulty']({}).name).toBe('kube-proxy');
  });
});

describe('kube-proxy-nft: a change carried by a failed transaction', () => {
  const run = async (variant: KubeProxyNftVariant) => {
    const w = new World({
      seed: 1,
      settleMs: 3000,
      cluster: { nodes: [{ name: 'node-1' }], services: [web], pods: [pod('web-0', 'node-1', 'web'), pod('web-1', 'node-1', 'web')] },
      controller: kubeProxyNft(variant, { syncPeriodMs: 5000 }),
      probes: [{ kind: 'nodeport-health', service: 'web', everyMs: 250 }],
      invariants: [probesSucceed()],
    });
    w.at(4000, { kind: 'iptables.restore-fail', node: 'node-1', line: 1 });
    w.at(4001, { kind: 'pod.delete', name: 'web-1' });
    return { w, report: await w.run(20_000) };
  };

  it('should recover with a full sync after the failure (fixed)', async () => {
    const { w, report } = await run('fixed');
    expect(report.status).toBe('ok');
    const retry = transactions(w, 'node-1').at(-1) ?? '';
    expect(retry).toContain('add table ip kube-proxy');
    expect(formatRuleset(w.nftRuleset('node-1'))).toContain('numgen random mod 1 vmap');
  });

  it('should lose the change with partial syncs after the failure, leaving a vmap entry to a flushed endpoint chain (faulty)', async () => {
    const { w, report } = await run('faulty');
    expect(report).toMatchObject({ status: 'violation', violation: { invariant: 'probes succeed' } });
    const text = formatRuleset(w.nftRuleset('node-1'));
    const gone = `endpoint-${servicePortEndpointChainNameBase('default/web', 'http', 'tcp', '198.18.0.2:8080')}`;
    expect(text).toContain('numgen random mod 2 vmap');
    expect(text).toContain(`\tchain ${gone} {\n\t}`);
    expect(story(w.events).join('\n')).toMatch(/nftables sync failed/);
  });
});
