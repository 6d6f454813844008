import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkScenarioNetwork, runScenario, validateScenario, type ActionKind, type SimScenario } from '@netsim/sim';
import { IPTABLES_FAULTS, NETWORK_CHANGES, POD_CHURN, RESTARTS, WATCH_FAULTS, scenarioArbitrary } from '../src/index.ts';

const ALL: ActionKind[] = [...POD_CHURN, ...RESTARTS, ...WATCH_FAULTS, ...IPTABLES_FAULTS];

describe('scenarioArbitrary', () => {
  const arb = scenarioArbitrary({
    controller: { name: 'toy' },
    cluster: { nodes: { min: 1, max: 3 }, queueModes: ['DeltaFIFO', 'RealFIFO', 'AtomicFIFO'], ipamPolicies: ['round-robin', 'lowest-free'] },
    timeline: { kinds: ALL, maxActions: 20 },
  });

  it('should only generate valid scenarios', () => {
    fc.assert(
      fc.property(arb, (s) => {
        validateScenario(s);
      }),
      { seed: 11, numRuns: 300 },
    );
  });

  it('should generate timelines in time order, inside the horizon minus the settle time', () => {
    fc.assert(
      fc.property(arb, (s) => {
        const times = s.timeline.map((t) => t.atMs);
        expect(times).toEqual([...times].sort((a, b) => a - b));
        for (const t of times) expect(t).toBeLessThanOrEqual(s.horizonMs - s.settleMs);
      }),
      { seed: 12, numRuns: 200 },
    );
  });

  it('should produce plain JSON data that survives a round trip', () => {
    const [s] = fc.sample(arb, { seed: 13, numRuns: 1 }) as [SimScenario];
    expect(JSON.parse(JSON.stringify(s))).toEqual(s);
  });

  it('should cover same-name recreation, multi-port Pods, faults and restarts', () => {
    const samples = fc.sample(arb, { seed: 14, numRuns: 300 });
    const kinds = new Set(samples.flatMap((s) => s.timeline.map((t) => t.action.kind)));
    for (const k of ALL) expect(kinds).toContain(k);
    const multiPort = samples.some((s) => s.timeline.some((t) => t.action.kind === 'pod.create' && t.action.pod.ports.length > 1));
    expect(multiPort).toBe(true);
    // The same name is created twice in one timeline: churn on identities.
    const reused = samples.some((s) => {
      const names = s.timeline.flatMap((t) => (t.action.kind === 'pod.create' ? [t.action.pod.name] : []));
      return new Set(names).size < names.length;
    });
    expect(reused).toBe(true);
  });

  it('should shrink a timeline towards fewer, earlier actions', () => {
    const r = fc.check(
      fc.property(arb, (s) => s.timeline.filter((t) => t.action.kind === 'pod.recreate').length < 2),
      { seed: 15, numRuns: 500 },
    );
    expect(r.failed).toBe(true);
    const [s] = r.counterexample as [SimScenario];
    expect(s.timeline.map((t) => t.action.kind)).toEqual(['pod.recreate', 'pod.recreate']);
    expect(s.timeline.map((t) => t.atMs)).toEqual([0, 0]);
  });

  it('should generate and shrink the same scenarios whether an arbitrary is fresh or was used before', () => {
    // The arbitraries built per node list are kept and reused: reuse must not change what is generated.
    const opts = { controller: { name: 'toy' }, cluster: { nodes: { min: 1, max: 3 } }, timeline: { kinds: ALL, maxActions: 20 } } as const;
    const reused = fc.sample(arb, { seed: 21, numRuns: 40 });
    const fresh = reused.map((_, i) => fc.sample(scenarioArbitrary({ ...opts, cluster: { ...opts.cluster, queueModes: ['DeltaFIFO', 'RealFIFO', 'AtomicFIFO'], ipamPolicies: ['round-robin', 'lowest-free'] } }), { seed: 21, numRuns: i + 1 })[i]);
    expect(new Set(reused.map((s) => s.cluster.nodes.length)).size).toBe(3);
    expect(reused).toEqual(fresh);
    const prop = (a: fc.Arbitrary<SimScenario>): fc.IProperty<[SimScenario]> => fc.property(a, (s) => s.cluster.nodes.length < 2 || s.timeline.length < 3);
    const warm = fc.check(prop(arb), { seed: 22, numRuns: 300 });
    const cold = fc.check(prop(scenarioArbitrary({ ...opts, cluster: { ...opts.cluster, queueModes: ['DeltaFIFO', 'RealFIFO', 'AtomicFIFO'], ipamPolicies: ['round-robin', 'lowest-free'] } })), { seed: 22, numRuns: 300 });
    expect(warm.failed).toBe(true);
    expect([warm.counterexample, warm.counterexamplePath, warm.numShrinks]).toEqual([cold.counterexample, cold.counterexamplePath, cold.numShrinks]);
  });

  it('should generate explicit tie-break paths when asked', () => {
    const [s] = fc.sample(scenarioArbitrary({ controller: { name: 'toy' }, schedule: 'path' }), { seed: 16, numRuns: 1 }) as [SimScenario];
    expect(s.schedule?.whenPathExhausted).toBe('fifo');
    expect(Array.isArray(s.schedule?.path)).toBe(true);
  });
});

describe('network changes', () => {
  const arb = scenarioArbitrary({ controller: { name: 'idle' }, cluster: { nodes: { min: 1, max: 2 } }, timeline: { kinds: NETWORK_CHANGES, maxActions: 6 }, horizonMs: 4000 });

  it('should only generate changes every default data plane accepts', () => {
    fc.assert(
      fc.property(arb, (s) => {
        checkScenarioNetwork(s);
      }),
      { seed: 21, numRuns: 100 },
    );
  });

  it('should run them: the world builds the data plane for them and tells each one', async () => {
    const s = fc.sample(arb.filter((x) => x.timeline.length > 0), { seed: 22, numRuns: 1 })[0] as SimScenario;
    const r = await runScenario(s, { controllers: { idle: () => ({ name: 'idle', create: () => ({ start: () => undefined }) }) } });
    expect(r.outcome.status).toBe('ok');
    expect(r.events.filter((e) => e.type === 'world.net.command')).toHaveLength(s.timeline.length);
  });
});
