/**
 * The runs whose output docs/controllers.md shows (checked by test/docs.test.ts): each returns
 * the story of the run, without the read-only `iptables -C/-S` checks, and the end state asked for.
 */
import { formatSave } from '@netsim/netfilter';
import { World, story, type ServiceSpec } from '@netsim/sim';
import { NPL_CHAIN, flannel, kubeProxy, nodePortLocal } from '../../src/index.ts';
import { EIGHT_PORTS, nplInvariants, nplService } from '../helpers.ts';

const READ_ONLY = / iptables -t \w+ -[CS] /;

function storyLines(w: World, from = 0): string[] {
  return story(w.events).filter((l) => !READ_ONLY.test(l) && Number(/t=(\d+)ms/.exec(l)?.[1] ?? 0) >= from);
}

/** NodePortLocal v2.3.2: an 8-port Pod deleted four times before its replacement runs. */
export async function nplMultiPortCleanup(): Promise<{ readonly story: string[]; readonly chain: string[] }> {
  const w = new World({
    seed: 1,
    cluster: { nodes: [{ name: 'node-1' }], services: [nplService], pods: [{ name: 'web-0', node: 'node-1', labels: { app: 'web' }, ports: EIGHT_PORTS }] },
    controller: nodePortLocal('faulty'),
    invariants: nplInvariants,
  });
  for (let i = 0; i < 4; i++) w.at(5000 + 200 * i, { kind: 'pod.recreate', name: 'web-0', gapMs: 10 });
  await w.run(15_000);
  const chain = formatSave(w.ruleset('node-1'))
    .split('\n')
    .filter((l) => l.startsWith(`-A ${NPL_CHAIN} `));
  return { story: storyLines(w, 5000), chain };
}

/** flannel v0.26: a graceful restart of flanneld. */
export async function flannelRestart(): Promise<string[]> {
  // No invariant: the run goes on past the violation, to show the probe failing and recovering.
  const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }], pods: [{ name: 'web-0', node: 'node-1', ports: [] }] }, controller: flannel('faulty'), probes: [{ kind: 'pod-egress', everyMs: 500 }] });
  w.at(12_000, { kind: 'agent.restart', node: 'node-1', downMs: 2000 });
  await w.run(20_000);
  return storyLines(w, 12_000);
}

/** kube-proxy, faulty: a Local Service whose only endpoint is on node-1. */
export async function kubeProxyUnguardedJump(): Promise<string[]> {
  const web: ServiceSpec = { name: 'web', type: 'NodePort', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30080 }] };
  const local: ServiceSpec = { name: 'local', type: 'NodePort', externalTrafficPolicy: 'Local', selector: { app: 'local' }, ports: [{ port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30081 }] };
  const w = new World({
    seed: 1,
    cluster: {
      nodes: [{ name: 'node-1' }, { name: 'node-2' }],
      services: [web, local],
      pods: [
        { name: 'web-0', node: 'node-1', labels: { app: 'web' }, ports: [{ port: 8080, protocol: 'TCP' }] },
        { name: 'local-0', node: 'node-1', labels: { app: 'local' }, ports: [{ port: 8080, protocol: 'TCP' }] },
      ],
    },
    controller: kubeProxy('faulty'),
    probes: [{ kind: 'nodeport-health', service: 'web', everyMs: 1000 }],
    invariants: [],
  });
  await w.run(5000);
  return storyLines(w, 1000).filter((l) => !/ iptables -t \w+ -[NI] |endpointslices on/.test(l));
}
