/**
 * The histories the closing swarm shapes generate (`service-edit`, `failed-restore`, `drain`),
 * written out by hand: the built-in, controller-agnostic oracles must judge each one, silent on
 * the fixed reference and failing the variant whose bug the history exposes.
 */
import { describe, expect, it } from 'vitest';
import { SIM_SCENARIO_FORMAT, builtinInvariants, runScenario, type PodSpec, type ServiceSpec, type SimScenario, type TimedAction } from '@netsim/sim';
import { CONTROLLERS } from '@netsim/controllers';
import { controllers as variants } from '../../../controllers/mutants/index.ts';

const controllers = { ...CONTROLLERS, ...variants };

const NPL_PORTS = [
  { port: 8080, protocol: 'TCP' as const, name: 'http' },
  { port: 8081, protocol: 'TCP' as const, name: 'metrics' },
  { port: 8082, protocol: 'TCP' as const, name: 'admin' },
];
const NPL_SERVICE: ServiceSpec = {
  name: 'web',
  selector: { app: 'web' },
  annotations: { 'nodeportlocal.antrea.io/enabled': 'true' },
  ports: [
    { name: 'p0', port: 80, targetPort: 8080, protocol: 'TCP' },
    { name: 'p1', port: 81, targetPort: 'metrics', protocol: 'TCP' },
  ],
};
const PROXY_PORTS = [
  { port: 8080, protocol: 'TCP' as const },
  { port: 5353, protocol: 'UDP' as const },
];
const PROXY_SERVICES: ServiceSpec[] = [
  { name: 'web', type: 'NodePort', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30080 }, { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP', nodePort: 30053 }] },
  { name: 'web-local', type: 'NodePort', externalTrafficPolicy: 'Local', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30081 }] },
];

function pod(name: string, node: string, ports: PodSpec['ports'], extra: Partial<PodSpec> = {}): PodSpec {
  return { name, node, labels: { app: 'web', 'statefulset.kubernetes.io/pod-name': name }, ports, ...extra };
}

function scenario(controller: string, nodes: number, services: ServiceSpec[], pods: PodSpec[], timeline: TimedAction[], options?: { readonly syncPeriodMs: number }, seed = 7): SimScenario {
  return {
    format: SIM_SCENARIO_FORMAT,
    seed,
    cluster: { nodes: Array.from({ length: nodes }, (_, i) => ({ name: `node-${i + 1}` })), services, pods },
    controller: options !== undefined ? { name: controller, options } : { name: controller },
    timeline,
    horizonMs: 20_000,
    settleMs: 3000,
  };
}

async function verdict(s: SimScenario): Promise<string> {
  const { outcome } = await runScenario(s, { controllers, invariants: builtinInvariants(), trace: false });
  return outcome.status === 'violation' ? `${outcome.violation.invariant}: ${outcome.violation.message}` : outcome.status;
}

const TIMEOUT_MS = 60_000;

describe('closing histories: the oracles judge the state a controller leaves after the last change', () => {
  const npl = (controller: string, change: ServiceSpec): SimScenario => scenario(controller, 1, [NPL_SERVICE], [pod('web-0', 'node-1', NPL_PORTS), pod('web-1', 'node-1', NPL_PORTS)], [{ atMs: 4000, action: { kind: 'service.update', service: change } }]);

  it('service-edit, a targetPort moved: the old port mapping must go (npl:fixed silent, npl:port-update-ignored caught)', async () => {
    const retarget: ServiceSpec = { ...NPL_SERVICE, ports: [{ name: 'p0', port: 80, targetPort: 'admin', protocol: 'TCP' }, NPL_SERVICE.ports[1] as ServiceSpec['ports'][number]] };
    expect(await verdict(npl('npl:fixed', retarget))).toBe('ok');
    expect(await verdict(npl('npl:port-update-ignored', retarget))).toMatch(/^published mappings are served: default\/web-\d on node-1 (is eligible for a nodeportlocal.antrea.io mapping of port 8082\/TCP .* but publishes none|publishes nodeportlocal.antrea.io node port \d+ → 8080\/TCP, but no Service makes that port eligible)/);
  }, TIMEOUT_MS);

  it('service-edit, a selector narrowed to one Pod by name: the other Pod loses its mappings (npl:fixed silent, npl:selector-update-ignored caught)', async () => {
    const narrowed: ServiceSpec = { ...NPL_SERVICE, selector: { app: 'web', 'statefulset.kubernetes.io/pod-name': 'web-0' } };
    expect(await verdict(npl('npl:fixed', narrowed))).toBe('ok');
    expect(await verdict(npl('npl:selector-update-ignored', narrowed))).toMatch(/^published mappings are served: default\/web-1 on node-1 publishes .* but no Service makes that port eligible/);
  }, TIMEOUT_MS);

  it('drain under NodePortLocal: a terminating Pod that still runs keeps its own mappings, which are not stale (npl:fixed silent)', async () => {
    const s = scenario('npl:fixed', 1, [NPL_SERVICE], [pod('web-0', 'node-1', NPL_PORTS)], [
      { atMs: 1000, action: { kind: 'pod.create', pod: pod('web-3', 'node-1', NPL_PORTS, { terminationGracePeriodSeconds: 30, preStopSleepSeconds: 10 }) } },
      { atMs: 3000, action: { kind: 'node.drain', node: 'node-1' } },
    ]);
    expect(await verdict(s)).toBe('ok');
  }, TIMEOUT_MS);

  it('failed-restore: a Pod deleted while the next iptables-restore fails must still leave the rules (kube-proxy:fixed silent, kube-proxy:lost-changes-after-failed-restore caught)', async () => {
    const s = (controller: string): SimScenario =>
      scenario(controller, 1, PROXY_SERVICES, [pod('stable-0', 'node-1', PROXY_PORTS), pod('web-0', 'node-1', PROXY_PORTS)], [
        { atMs: 4000, action: { kind: 'iptables.restore-fail', node: 'node-1', line: 3 } },
        { atMs: 4000, action: { kind: 'pod.delete', name: 'web-0' } },
      ], { syncPeriodMs: 5000 });
    expect(await verdict(s('kube-proxy:fixed'))).toBe('ok');
    expect(await verdict(s('kube-proxy:lost-changes-after-failed-restore'))).toMatch(/^(no stale DNAT anywhere|datapath probes succeed): .*198\.18\.0\.3/);
  }, TIMEOUT_MS);

  // KEP-1669: with no ready endpoint left, kube-proxy sends to the serving terminating ones, under
  // externalTrafficPolicy Local (per node) and Cluster (cluster-wide).
  const drain = (controller: string, nodes: number): SimScenario =>
    scenario(controller, nodes, PROXY_SERVICES, [pod('stable-0', 'node-1', PROXY_PORTS)], [
      { atMs: 2000, action: { kind: 'pod.create', pod: pod('web-3', `node-${nodes}`, PROXY_PORTS, { terminationGracePeriodSeconds: 30, preStopSleepSeconds: 10 }) } },
      { atMs: 5000, action: { kind: 'node.drain', node: `node-${nodes}` } },
    ], { syncPeriodMs: 5000 });

  it("drain of a node whose last endpoint keeps serving while it terminates: Local traffic there still reaches it (kube-proxy:fixed silent, kube-proxy:terminating-endpoints-ignored caught)", async () => {
    expect(await verdict(drain('kube-proxy:fixed', 2))).toBe('ok');
    expect(await verdict(drain('kube-proxy:terminating-endpoints-ignored', 2))).toMatch(/^datapath probes succeed: an external client \(192\.0\.2\.2\) cannot reach Service default\/web-local \(externalTrafficPolicy Local\) at 192\.0\.2\.12:30081\/TCP/);
  }, TIMEOUT_MS);

  it('drain with UDP flows already going to the draining Pod: they may keep reaching it while it serves, and the settle time starts again when it goes (kube-proxy:fixed silent)', async () => {
    const s = scenario('kube-proxy:fixed', 2, PROXY_SERVICES.map((x) => (x.name === 'web-local' ? { ...x, ports: [...x.ports, { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP' as const, nodePort: 30054 }] } : x)), [pod('stable-0', 'node-1', PROXY_PORTS), pod('web-2', 'node-2', PROXY_PORTS), pod('web-0', 'node-2', PROXY_PORTS)], [
      { atMs: 0, action: { kind: 'pod.create', pod: pod('web-3', 'node-1', PROXY_PORTS, { terminationGracePeriodSeconds: 10, preStopSleepSeconds: 6 }) } },
      { atMs: 1500, action: { kind: 'node.drain', node: 'node-1' } },
    ], { syncPeriodMs: 5000 }, 0);
    expect(await verdict(s)).toBe('ok');
  }, TIMEOUT_MS);

  it('drain of the only node: every endpoint terminates, and Cluster traffic still reaches the serving one (kube-proxy:fixed silent, the variant caught)', async () => {
    expect(await verdict(drain('kube-proxy:fixed', 1))).toBe('ok');
    expect(await verdict(drain('kube-proxy:terminating-endpoints-ignored', 1))).toMatch(/^datapath probes succeed: .*cannot reach Service default\/web/);
  }, TIMEOUT_MS);
});
