import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { checkProperty, scenarioArbitrary } from '@netsim/check';
import { CONTROLLERS, FUZZ_PROFILES, GENERIC_PROFILE, fuzzProfileFor, fuzzProperty, type FuzzProfile } from '../../src/index.ts';

const npl = FUZZ_PROFILES['npl'] as FuzzProfile;
const kubeProxy = FUZZ_PROFILES['kube-proxy'] as FuzzProfile;

describe('fuzz profiles', () => {
  it('should find a profile by exact name first, then by the family before ":"', () => {
    const mine: FuzzProfile = { ...npl, invariants: [] };
    expect(fuzzProfileFor('npl:faulty')).toBe(npl);
    expect(fuzzProfileFor('npl:faulty', { ...FUZZ_PROFILES, 'npl:faulty': mine })).toBe(mine);
    expect(fuzzProfileFor('nope:fixed')).toBe(GENERIC_PROFILE);
  });

  it('should catch npl:faulty within the default 100 runs and shrink it to a short history', async () => {
    const r = await checkProperty(fuzzProperty('npl:faulty', npl, CONTROLLERS, { builtins: true }), { seed: 1, numRuns: 100 });
    if (r.ok) throw new Error('expected npl:faulty to be caught');
    expect(r.deterministic).toBe(true);
    expect(r.outcome).toMatchObject({ status: 'violation', violation: { invariant: 'no stale DNAT anywhere' } });
    expect(r.scenario.timeline.length).toBeLessThanOrEqual(3);
  });

  it('should pass npl:fixed over the CI-sized campaign (the 1,000-run one is `pnpm netsim fuzz --controller npl:fixed --runs 1000`)', async () => {
    expect(await checkProperty(fuzzProperty('npl:fixed', npl, CONTROLLERS, { builtins: true }), { seed: 1, numRuns: 60 })).toMatchObject({ ok: true, numRuns: 60 });
  });

  it('should catch kube-proxy:faulty within the default 100 runs: a node without a local endpoint of the Local Service fails its sync', async () => {
    const r = await checkProperty(fuzzProperty('kube-proxy:faulty', kubeProxy, CONTROLLERS, { builtins: true }), { seed: 1, numRuns: 100 });
    if (r.ok) throw new Error('expected kube-proxy:faulty to be caught');
    expect(r.deterministic).toBe(true);
    expect(r.outcome).toMatchObject({ status: 'violation', violation: { invariant: 'datapath probes succeed' } });
    expect(r.scenario.cluster.pods?.[0]).toMatchObject({ name: 'stable-0', node: 'node-1' });
    const story = r.story.join('\n');
    expect(story).toMatch(/node-2\/kube-proxy: iptables-restore --noflush --counters --wait \(\d+ lines\) → exit 2: iptables-restore v1\.8\.10 \(nf_tables\): Chain 'KUBE-SVL-[A-Z2-7]{16}' does not exist/);
  });

  it('should pass kube-proxy:fixed over the CI-sized campaign (the 1,000-run one is `pnpm netsim fuzz --controller kube-proxy:fixed --runs 1000`)', async () => {
    expect(await checkProperty(fuzzProperty('kube-proxy:fixed', kubeProxy, CONTROLLERS, { builtins: true }), { seed: 1, numRuns: 60 })).toMatchObject({ ok: true, numRuns: 60 });
  }, 120_000);

  it('should fuzz with agents alongside the controller under test, restarting them too', async () => {
    const flannel = FUZZ_PROFILES['flannel'] as FuzzProfile;
    const beside = [{ name: 'kube-proxy:fixed' }];
    const caught = await checkProperty(fuzzProperty('flannel:faulty', flannel, CONTROLLERS, { alongside: beside, builtins: true }), { seed: 1, numRuns: 100 });
    if (caught.ok) throw new Error('expected flannel:faulty to be caught beside kube-proxy');
    expect(caught.scenario.alongside).toEqual(beside);
    expect(caught.outcome).toMatchObject({ status: 'violation', violation: { invariant: 'owned chains stay programmed' } });
    expect(await checkProperty(fuzzProperty('flannel:fixed', flannel, CONTROLLERS, { alongside: beside, builtins: true }), { seed: 1, numRuns: 40 })).toMatchObject({ ok: true, numRuns: 40 });
    // The generated lifecycle faults hit either agent.
    const scenarios = fc.sample(scenarioArbitrary({ ...flannel.scenarios, controller: { name: 'flannel:fixed' }, alongside: beside, timeline: { ...flannel.scenarios.timeline, agents: ['kube-proxy'] } }), { seed: 4, numRuns: 200 });
    const hits = scenarios.flatMap((x) => x.timeline.map((t) => t.action)).filter((a) => a.kind === 'agent.crash' || a.kind === 'agent.restart');
    const named = hits.filter((a) => 'agent' in a && a.agent === 'kube-proxy').length;
    expect(named).toBeGreaterThan(5);
    expect(hits.length - named).toBeGreaterThan(5);
    expect(() => fuzzProperty('flannel:fixed', flannel, CONTROLLERS, { alongside: [{ name: 'nope:fixed' }] })).toThrow('"nope:fixed" (alongside) is not registered');
  });

  it('should give every generated Pod all the NodePortLocal Service target ports', () => {
    const s = npl.adjust?.({
      format: 'netsim.sim-scenario/v1',
      seed: 1,
      cluster: { nodes: [{ name: 'node-1' }], pods: [{ name: 'web-0', node: 'node-1', ports: [{ port: 8081, protocol: 'TCP' }] }] },
      controller: { name: 'npl:fixed' },
      timeline: [
        { atMs: 5, action: { kind: 'pod.create', pod: { name: 'web-1', node: 'node-1', ports: [] } } },
        { atMs: 6, action: { kind: 'workload.scale', name: 'web', replicas: 2, nodes: ['node-1'], labels: { app: 'web' }, ports: [{ port: 8080, protocol: 'TCP' }] } },
      ],
      horizonMs: 10,
      settleMs: 1,
    });
    expect(s?.cluster.pods?.[0]?.ports.map((p) => p.port)).toEqual([8080, 8081, 8082, 8083]);
    const a = s?.timeline[0]?.action;
    expect(a?.kind === 'pod.create' ? a.pod.ports.map((p) => p.port) : []).toEqual([8080, 8081, 8082, 8083]);
    const scale = s?.timeline[1]?.action;
    expect(scale?.kind === 'workload.scale' ? scale.ports.map((p) => p.port) : []).toEqual([8080, 8081, 8082, 8083]);
  });

  it('should generate workload scaling in every profile, with all NodePortLocal ports in the npl one', () => {
    for (const name of ['npl', 'flannel', 'kube-proxy']) {
      const profile = FUZZ_PROFILES[name] as FuzzProfile;
      const scenarios = fc.sample(scenarioArbitrary({ ...profile.scenarios, controller: { name: `${name}:fixed` } }).map(profile.adjust ?? ((x) => x)), { seed: 3, numRuns: 200 });
      const scales = scenarios.flatMap((x) => x.timeline.map((t) => t.action)).filter((a) => a.kind === 'workload.scale');
      expect(scales.length, name).toBeGreaterThan(10);
      if (name === 'npl') for (const a of scales) expect(a.kind === 'workload.scale' ? a.ports.map((p) => p.port) : []).toEqual([8080, 8081, 8082, 8083]);
    }
  });
});
