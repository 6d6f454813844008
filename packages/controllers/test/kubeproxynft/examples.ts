/**
 * The runs docs/nftables.md shows: kube-proxy's table for one NodePort Service, the faulty
 * proxy's lost change, and flannel's table. `docs.test.ts` compares the page with them.
 */
import { formatRuleset } from '@netsim/nftables';
import { World, story, probesSucceed, type ServiceSpec } from '@netsim/sim';
import { flannelNft, kubeProxyNft, type KubeProxyNftVariant } from '../../src/index.ts';

const web: ServiceSpec = { name: 'web', type: 'NodePort', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30080 }] };
const pod = (name: string) => ({ name, node: 'node-1', labels: { app: 'web' }, ports: [{ port: 8080, protocol: 'TCP' as const }] });

/** The blocks of a `nft list` text (`\tmap NAME {` … `\t}`) whose header line passes `keep`. */
function blocks(text: string, keep: (header: string) => boolean): string[] {
  const out: string[][] = [];
  let cur: string[] | undefined;
  for (const line of text.split('\n')) {
    if (/^\t(map|set|chain) /.test(line)) cur = keep(line) ? [] : undefined;
    cur?.push(line);
    if (cur !== undefined && line === '\t}') {
      out.push(cur);
      cur = undefined;
    }
  }
  return out.flatMap((b, i) => (i === 0 ? b : ['', ...b]));
}

/** kube-proxy's dispatch maps and Service web's chains on a one-node cluster with two endpoints. */
export async function kubeProxyNftTable(): Promise<string[]> {
  const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }], services: [web], pods: [pod('web-0'), pod('web-1')] }, controller: kubeProxyNft('fixed') });
  await w.run(3000);
  return blocks(formatRuleset(w.nftRuleset('node-1')), (h) => /map service-|chain services |default\/web/.test(h));
}

/** The failed transaction and what each variant does after it (story lines about nft, faults and probes). */
export async function kubeProxyNftFailedSync(variant: KubeProxyNftVariant): Promise<string[]> {
  const w = new World({
    seed: 1,
    settleMs: 3000,
    cluster: { nodes: [{ name: 'node-1' }], services: [web], pods: [pod('web-0'), pod('web-1')] },
    controller: kubeProxyNft(variant, { syncPeriodMs: 5000 }),
    probes: [{ kind: 'nodeport-health', service: 'web', everyMs: 250 }],
    invariants: [probesSucceed()],
  });
  w.at(4000, { kind: 'iptables.restore-fail', node: 'node-1', line: 1 });
  w.at(4001, { kind: 'pod.delete', name: 'web-1' });
  await w.run(20_000);
  return story(w.events).filter((l) => /t=(4|5|9|1[0-3])\d{3}ms/.test(l) && /nft -f|fault:|deleted|VIOLATION|probe .* fails: reset|Unable/.test(l));
}

/** flannel's table. */
export async function flannelNftTable(): Promise<string[]> {
  const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }], pods: [pod('web-0')] }, controller: flannelNft('fixed') });
  await w.run(1000);
  return formatRuleset(w.nftRuleset('node-1')).trimEnd().split('\n');
}
