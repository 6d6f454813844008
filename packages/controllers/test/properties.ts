/**
 * The properties the controllers are checked against: generated histories for each controller
 * family and the built-in invariants that watch it. The default test run uses fixed seeds and
 * CI-sized run counts; `NETSIM_CONTROLLER_RUNS=N` raises the run count of the fixed variants'
 * properties (the campaign, see docs/controllers.md).
 */
import { IPTABLES_FAULTS, POD_CHURN, RESTARTS, WATCH_FAULTS, controllerProperty, scenarioArbitrary, type SimulationProperty } from '@netsim/check';
import { chainNeverEmpty, hasTarget, probesSucceed, type ActionKind, type InvariantSource, type PodSpec, type PortSpec, type ServiceSpec, type SimScenario } from '@netsim/sim';
import { CONTROLLERS, MASQ_CHAIN, NPL_ENABLED_ANNOTATION, type ControllerName } from '../src/index.ts';
import { nplInvariants } from './helpers.ts';

/** Runs of a fixed variant's property: the campaign sets NETSIM_CONTROLLER_RUNS. */
export function fixedRuns(ciDefault: number): number {
  const v = Number(process.env['NETSIM_CONTROLLER_RUNS'] ?? '');
  return Number.isSafeInteger(v) && v > 0 ? v : ciDefault;
}

const NPL_PORTS: readonly PortSpec[] = [8080, 8081, 8082].map((port) => ({ port, protocol: 'TCP' as const }));

const nplSvc: ServiceSpec = {
  name: 'web',
  selector: { app: 'web' },
  annotations: { [NPL_ENABLED_ANNOTATION]: 'true' },
  ports: NPL_PORTS.map((p, i) => ({ name: `p${i}`, port: 80 + i, targetPort: p.port, protocol: p.protocol })),
};

/**
 * Antrea maps every target port of a selecting Service, declared by the Pod or not, while "no
 * stale DNAT" expects a declared port: generated Pods declare the Service's target ports.
 */
function declareServicePorts(ports: readonly PortSpec[]): (s: SimScenario) => SimScenario {
  const pod = (p: PodSpec): PodSpec => ({ ...p, ports: [...ports] });
  return (s) => ({
    ...s,
    cluster: { ...s.cluster, ...(s.cluster.pods !== undefined ? { pods: s.cluster.pods.map(pod) } : {}) },
    timeline: s.timeline.map((t) => (t.action.kind === 'pod.create' ? { ...t, action: { ...t.action, pod: pod(t.action.pod) } } : t)),
  });
}

/** NodePortLocal under Pod churn and the given faults; `ports` sets how many ports each Pod has. */
export function nplProperty(name: ControllerName, kinds: readonly ActionKind[], opts: { readonly ports?: number; readonly maxActions?: number; readonly settleMs?: number; readonly horizonMs?: number } = {}): SimulationProperty<SimScenario> {
  // An agent whose start-up fails exits and is restarted by the kubelet, as antrea-agent is.
  const ports = NPL_PORTS.slice(0, opts.ports ?? NPL_PORTS.length);
  return controllerProperty({
    name: `${name} keeps DNAT, annotations and rules in agreement`,
    scenarios: scenarioArbitrary({
      controller: { name },
      cluster: { nodes: { min: 1, max: 2 }, initialPods: 2, services: [{ ...nplSvc, ports: nplSvc.ports.slice(0, ports.length) }] },
      pods: { poolSize: 3, maxPorts: 1 },
      timeline: { kinds, maxActions: opts.maxActions ?? 8 },
      probes: [{ kind: 'npl-health', everyMs: 1000 }],
      horizonMs: opts.horizonMs ?? 20_000,
      settleMs: opts.settleMs ?? 3000,
    }).map(declareServicePorts(ports)),
    controllers: CONTROLLERS,
    invariants: [...nplInvariants, probesSucceed()],
    world: { controllerErrors: 'crash' },
  });
}

export const masqInvariants: readonly InvariantSource[] = [chainNeverEmpty({ chain: MASQ_CHAIN, required: hasTarget('MASQUERADE') })];

/** flannel under Pod churn, restarts and crashes (and, for the fixed variant, iptables faults). */
export function flannelProperty(name: ControllerName, kinds: readonly ActionKind[]): SimulationProperty<SimScenario> {
  return controllerProperty({
    name: `${name} keeps ${MASQ_CHAIN} programmed and Pods' egress working`,
    scenarios: scenarioArbitrary({
      controller: { name },
      cluster: { nodes: { min: 1, max: 2 }, initialPods: 2 },
      pods: { poolSize: 3, maxPorts: 1 },
      timeline: { kinds, maxActions: 6 },
      probes: [{ kind: 'pod-egress', everyMs: 1000 }],
      horizonMs: 30_000,
      // flanneld heals a failed bootstrap at its next ensure, one resync period (5 s) later: the
      // probes get that long. The chain invariant is strict and ignores settle times.
      settleMs: 6000,
    }),
    controllers: CONTROLLERS,
    invariants: [...masqInvariants, probesSucceed()],
    world: { controllerErrors: 'crash' },
  });
}

export { IPTABLES_FAULTS, POD_CHURN, RESTARTS, WATCH_FAULTS };

const webNodePort: ServiceSpec = { name: 'web', type: 'NodePort', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] };
const webLocal: ServiceSpec = { name: 'web-local', type: 'NodePort', externalTrafficPolicy: 'Local', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] };

/** A backend that is never churned, so the probed Service always has an endpoint. */
function withStableBackend(s: SimScenario): SimScenario {
  const stable: PodSpec = { name: 'stable-0', node: 'node-1', labels: { app: 'web' }, ports: [{ port: 8080, protocol: 'TCP' }] };
  return { ...s, cluster: { ...s.cluster, pods: [stable, ...(s.cluster.pods ?? [])] } };
}

/**
 * kube-proxy on two nodes with a Cluster-policy NodePort Service (health-checked by the load
 * balancer on every node) and a Local-policy one over the same Pods, under Pod churn and faults.
 */
export function kubeProxyProperty(name: ControllerName, kinds: readonly ActionKind[], options: { readonly syncPeriodMs?: number } = {}): SimulationProperty<SimScenario> {
  return controllerProperty({
    name: `${name} keeps NodePort health checks passing`,
    scenarios: scenarioArbitrary({
      controller: { name, ...(options.syncPeriodMs !== undefined ? { options: { syncPeriodMs: options.syncPeriodMs } } : {}) },
      cluster: { nodes: { min: 2, max: 2 }, initialPods: 2, services: [webNodePort, webLocal] },
      pods: { poolSize: 3, maxPorts: 1, ports: [{ port: 8080, protocol: 'TCP' }] },
      timeline: { kinds, maxActions: 6 },
      probes: [{ kind: 'nodeport-health', service: 'web', everyMs: 1000 }],
      horizonMs: 20_000,
      settleMs: 3000,
    }).map(withStableBackend),
    controllers: CONTROLLERS,
    invariants: [probesSucceed()],
    world: { controllerErrors: 'crash' },
  });
}
