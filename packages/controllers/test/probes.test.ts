/**
 * The built-in datapath probes against the reference controllers and one-bug variants of them:
 * the fixed ones pass and are examined, each variant fails for the right reason, in domain words.
 */
import { describe, expect, it } from 'vitest';
import { World, datapathProbes, type Controller, type ControllerContext, type PodSpec, type RunOutcome, type ServiceSpec } from '@netsim/sim';
import { CONTROLLERS } from '../src/index.ts';
import { MUTANTS } from '../mutants/index.ts';

const PORTS = [
  { port: 8080, protocol: 'TCP' as const },
  { port: 5353, protocol: 'UDP' as const },
];

const services: ServiceSpec[] = [
  { name: 'web', type: 'NodePort', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30080 }, { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP', nodePort: 30053 }] },
  { name: 'web-local', type: 'NodePort', externalTrafficPolicy: 'Local', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30081 }] },
];

const pod = (name: string, node: string): PodSpec => ({ name, node, labels: { app: 'web' }, ports: PORTS });

function controller(name: string): Controller<ControllerContext> {
  const m = MUTANTS.find((x) => x.name === name);
  if (m !== undefined) return m.create({});
  const f = CONTROLLERS[name as keyof typeof CONTROLLERS];
  if (f === undefined) throw new Error(`no controller ${name}`);
  return f({});
}

async function run(name: string, opts: { readonly pods: readonly PodSpec[]; readonly at?: readonly [number, () => unknown][]; readonly untilMs?: number }): Promise<{ readonly outcome: RunOutcome; readonly examined: number }> {
  const w = new World({ seed: 3, cluster: { nodes: [{ name: 'node-1' }, { name: 'node-2' }], services, pods: opts.pods }, controller: controller(name), invariants: [datapathProbes()], trace: false });
  for (const [t, f] of opts.at ?? []) w.engine.at(t, { kind: 'action', label: 'test' }, () => void f.call(w));
  const outcome = await w.run(opts.untilMs ?? 12_000);
  return { outcome, examined: w.coverage()['datapath probes succeed'] ?? 0 };
}

function violated(o: RunOutcome): string {
  return o.status === 'violation' ? `${o.violation.invariant}: ${o.violation.message}` : `no violation (${o.status})`;
}

describe('built-in datapath probes', () => {
  it('should pass kube-proxy:fixed and flannel:fixed, having sent probes', async () => {
    for (const name of ['kube-proxy:fixed', 'flannel:fixed']) {
      const r = await run(name, { pods: [pod('web-0', 'node-1'), pod('web-1', 'node-2')] });
      expect(r.outcome.status, `${name}: ${violated(r.outcome)}`).toBe('ok');
      expect(r.examined, name).toBeGreaterThan(10);
    }
  });

  it('should examine nothing for a controller that provides nothing the probes test', async () => {
    const r = await run('npl:fixed', { pods: [pod('web-0', 'node-1')] });
    expect(r.outcome.status).toBe('ok');
    expect(r.examined).toBe(0);
  });

  it('should catch Local-policy traffic that loses the client source', async () => {
    const r = await run('kube-proxy:local-policy-masquerades', { pods: [pod('web-0', 'node-1')] });
    expect(violated(r.outcome)).toMatch(/^datapath probes succeed: an external TCP flow from 192\.0\.2\.2 to 192\.0\.2\.11:30081 \(Service default\/web-local, externalTrafficPolicy Local\) reached default\/web-0 \(\S+\) from \S+: the client's source was not kept/);
  });

  it('should catch Local-policy traffic balanced over other nodes\' endpoints', async () => {
    const r = await run('kube-proxy:local-policy-cluster-endpoints', { pods: [pod('web-0', 'node-1'), pod('web-1', 'node-2')] });
    expect(violated(r.outcome)).toMatch(/^datapath probes succeed: an external (client \(192\.0\.2\.2\) cannot reach|TCP flow to \S+ \(Service default\/web-local, externalTrafficPolicy Local\) reached)/);
    expect(violated(r.outcome)).toMatch(/externalTrafficPolicy Local/);
  });

  it('should catch a Pod that cannot reach itself through its Service (hairpin)', async () => {
    const r = await run('kube-proxy:hairpin-not-masqueraded', { pods: [pod('web-0', 'node-1')] });
    expect(violated(r.outcome)).toMatch(/^datapath probes succeed: default\/web-0 on node-1 cannot reach Service default\/web at [\d.]+:80\/(TCP|UDP) \(it is one of its endpoints\)/);
  });

  it('should catch UDP service ports that are not proxied', async () => {
    const r = await run('kube-proxy:udp-ignored', { pods: [pod('web-0', 'node-1')] });
    expect(violated(r.outcome)).toMatch(/:53\/UDP|:30053\/UDP/);
  });

  it('should catch a UDP flow that keeps going to a removed endpoint (stale conntrack)', async () => {
    const at: [number, () => unknown][] = [[5000, function (this: World) { this.act({ kind: 'pod.delete', name: 'web-1', graceSeconds: 0 }); }]];
    const fixed = await run('kube-proxy:fixed', { pods: [pod('web-0', 'node-1'), pod('web-1', 'node-2')], at, untilMs: 15_000 });
    expect(fixed.outcome.status, violated(fixed.outcome)).toBe('ok');
    const stale = await run('kube-proxy:stale-udp-conntrack', { pods: [pod('web-0', 'node-1'), pod('web-1', 'node-2')], at, untilMs: 15_000 });
    // The UDP flow (from a Pod to the ClusterIP, or from outside to the node port) kept its port and its conntrack entry toward web-1's old address.
    expect(violated(stale.outcome)).toMatch(/^datapath probes succeed: .*cannot reach Service default\/web at (node port )?[\d.]+:(53|30053)\/UDP .*no neighbour answers for [\d.]+/);
  });

  it('should catch Pod egress that is not masqueraded, and Pod-to-Pod traffic that is', async () => {
    const noMasq = await run('flannel:no-egress-masquerade', { pods: [pod('web-0', 'node-1')] });
    expect(violated(noMasq.outcome)).toMatch(/^datapath probes succeed: default\/web-0 on node-1 cannot reach 203\.0\.113\.10:443 outside the cluster/);
    const p2p = await run('flannel:masquerade-pod-to-pod', { pods: [pod('web-0', 'node-1'), pod('web-1', 'node-2')] });
    expect(violated(p2p.outcome)).toMatch(/^datapath probes succeed: default\/web-\d's connection to default\/web-\d at [\d.]+:8080 arrives from 192\.0\.2\.1\d:\d+: Pod-to-Pod traffic lost its source/);
  });
});
