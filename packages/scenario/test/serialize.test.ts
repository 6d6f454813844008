import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IPTABLES_FAULTS, POD_CHURN, RESTARTS, WATCH_FAULTS, checkProperty, controllerProperty, exportCounterexample, scenarioArbitrary } from '@netsim/check';
import type { ProbeSpec, ServiceSpec, SimScenario, TimedAction } from '@netsim/sim';
import { buildInvariant, invariantName, loadScenario, replay, scenarioFromCounterexample, serializeScenario, type Expectation, type InvariantSpec, type ScenarioFile } from '../src/index.ts';
import { toyControllers } from './fixtures/toy.ts';

const web: ServiceSpec = {
  name: 'web',
  type: 'NodePort',
  selector: { app: 'web' },
  ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30080 }],
  annotations: { 'nodeportlocal.antrea.io/enabled': 'true' },
  externalTrafficPolicy: 'Local',
};

const invariantArb: fc.Arbitrary<InvariantSpec> = fc.oneof(
  fc.record({ kind: fc.constant('no-stale-dnat' as const), chains: fc.constant(['ANTREA-NODE-PORT-LOCAL']), settleMs: fc.integer({ min: 0, max: 5000 }) }),
  fc.record({ kind: fc.constant('chain-never-empty' as const), chain: fc.constant('FLANNEL-POSTRTG'), requiredTarget: fc.constant('MASQUERADE' as const) }),
  fc.record({ kind: fc.constant('annotations-agree' as const), annotation: fc.constant('nodeportlocal.antrea.io'), chain: fc.constant('ANTREA-NODE-PORT-LOCAL'), table: fc.constant('nat' as const) }),
  fc.record({ kind: fc.constant('no-duplicate-rules' as const), chains: fc.constant(['KUBE-SERVICES', 'KUBE-NODEPORTS']) }),
  fc.record({ kind: fc.constant('probes-succeed' as const) }, { requiredKeys: ['kind'] }),
);

function expectationArb(invariants: readonly InvariantSpec[]): fc.Arbitrary<Expectation> {
  return fc
    .tuple(outcomeArb(invariants), fc.option(fc.array(fc.string({ minLength: 1, maxLength: 20 }), { minLength: 1, maxLength: 3 }), { nil: undefined }), fc.option(fc.array(fc.string({ minLength: 1, maxLength: 20 }), { maxLength: 2 }), { nil: undefined }))
    .map(([e, inc, exc]) => ({ ...e, ...(inc !== undefined ? { storyIncludes: inc } : {}), ...(exc !== undefined ? { storyExcludes: exc } : {}) }));
}

function outcomeArb(invariants: readonly InvariantSpec[]): fc.Arbitrary<Expectation> {
  const window = fc.option(fc.tuple(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: 10_000 })).map(([a, b]) => [a, a + b] as const), { nil: undefined });
  return fc.oneof(
    fc.constant({ outcome: 'ok' as const }),
    fc.record({ invariant: fc.constantFrom(...invariants.map(invariantName)), betweenMs: window, message: fc.option(fc.string({ maxLength: 12 }), { nil: undefined }) }).map(({ invariant, betweenMs, message }) => ({
      outcome: 'violation' as const,
      invariant,
      ...(betweenMs !== undefined ? { betweenMs } : {}),
      ...(message !== undefined ? { message } : {}),
    })),
    fc.record({ kind: fc.constantFrom('livelock', 'controller-error'), betweenMs: window }).map(({ kind, betweenMs }) => ({ outcome: 'finding' as const, kind, ...(betweenMs !== undefined ? { betweenMs } : {}) })),
  );
}

/** The last node runs its own controller, with options. */
function withNodeController(s: SimScenario): fc.Arbitrary<SimScenario> {
  return fc.record({ variant: fc.constantFrom('npl:fixed', 'npl:faulty'), workers: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }) }).map(({ variant, workers }) => ({
    ...s,
    cluster: { ...s.cluster, nodes: s.cluster.nodes.map((n, i) => (i === s.cluster.nodes.length - 1 ? { ...n, controller: { name: variant, ...(workers !== undefined ? { options: { workers } } : {}) } } : n)) },
  }));
}

/** A network section and network actions that build and play on every generated cluster. */
function withNetwork(s: SimScenario): fc.Arbitrary<SimScenario> {
  const at = fc.integer({ min: 0, max: s.horizonMs });
  const actions: fc.Arbitrary<TimedAction>[] = [
    fc.record({ atMs: at, rp: fc.integer({ min: 0, max: 2 }) }).map(({ atMs, rp }) => ({ atMs, action: { kind: 'sysctl.set' as const, host: 'node-1', key: 'net.ipv4.conf.all.rp_filter', value: String(rp) } })),
    fc.record({ atMs: at, up: fc.boolean() }).map(({ atMs, up }) => ({ atMs, action: { kind: 'link.set' as const, host: 'client', iface: 'eth0', state: up ? ('up' as const) : ('down' as const) } })),
    at.map((atMs) => ({ atMs, action: { kind: 'host.run' as const, host: 'gw', command: 'sysctl -w net.ipv4.conf.all.rp_filter=2' } })),
  ];
  return fc
    .record({
      podNetwork: fc.option(fc.constantFrom('host-gw' as const, 'vxlan' as const), { nil: undefined }),
      rules: fc.boolean(),
      extra: fc.array(fc.oneof(...actions), { maxLength: 4 }),
      addrAt: fc.option(at, { nil: undefined }),
      routeAt: fc.option(at, { nil: undefined }),
      fromPod: fc.boolean(),
    })
    .map(({ podNetwork, rules, extra, addrAt, routeAt, fromPod }) => {
      const [first, ...rest] = s.cluster.nodes;
      const addr = addrAt === undefined ? [] : [{ atMs: addrAt, action: { kind: 'addr.add' as const, host: 'client', iface: 'eth0', address: '198.51.100.13/25' } }, { atMs: addrAt, action: { kind: 'addr.del' as const, host: 'client', iface: 'eth0', address: '198.51.100.13/25' } }];
      const route = routeAt === undefined ? [] : [{ atMs: routeAt, action: { kind: 'route.add' as const, host: 'gw', route: '198.51.100.0/26 via 192.0.2.3' } }, { atMs: routeAt, action: { kind: 'route.del' as const, host: 'gw', route: '198.51.100.0/26 via 192.0.2.3' } }];
      const probe: ProbeSpec = fromPod ? { kind: 'connect', from: { pod: 'web-0', namespace: 'default' }, to: '192.0.2.11', port: 30080, everyMs: 700 } : { kind: 'connect', from: { host: 'client' }, to: '198.51.100.11', port: 30080, everyMs: 900 };
      return {
        ...s,
        cluster: {
          ...s.cluster,
          nodes: [{ ...(first ?? { name: 'node-1' }), network: ['ip link add eth1 type physical', 'ip link set eth1 up', 'ip addr add 198.51.100.11/25 dev eth1'] }, ...rest],
          network: {
            ...(podNetwork !== undefined ? { podNetwork } : {}),
            hosts: [
              { name: 'client', network: ['ip link add eth0 type physical', 'ip link set eth0 up', 'ip addr add 198.51.100.12/25 dev eth0', 'ip link add eth9 type physical'] },
              { name: 'gw', network: ['ip link add eth9 type physical'], ...(rules ? { rules: '*filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -m conntrack --ctstate INVALID -j DROP\nCOMMIT\n' } : {}) },
            ],
            links: [
              { kind: 'segment', name: 'uplink2', members: ['client/eth0', 'node-1/eth1'] },
              { kind: 'wire', ends: ['client/eth9', 'gw/eth9'] },
            ],
          },
        },
        timeline: [...s.timeline, ...extra, ...addr, ...route],
        probes: [...(s.probes ?? []), probe],
      };
    });
}

const fileArb: fc.Arbitrary<ScenarioFile> = fc
  .record({
    name: fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/),
    description: fc.option(fc.string({ unit: 'binary', maxLength: 80 }), { nil: undefined }),
    scenario: scenarioArbitrary({
      controller: { name: 'npl:faulty', options: { portRange: '61000-62000', workers: 2 } },
      cluster: { nodes: { min: 1, max: 3 }, services: [web], queueModes: ['DeltaFIFO', 'RealFIFO', 'AtomicFIFO'], ipamPolicies: ['round-robin', 'lowest-free'], nodeCidrMaskSize: 28 },
      timeline: { kinds: ['workload.scale', ...POD_CHURN, ...WATCH_FAULTS, ...RESTARTS, ...IPTABLES_FAULTS, 'service.create', 'service.update', 'service.delete', 'drain', 'service-edit'], serviceVariants: [web, { ...web, name: 'db', externalTrafficPolicy: 'Cluster' }] },
      probes: [{ kind: 'npl-health', everyMs: 500 }, { kind: 'npl-health', everyMs: 700, annotation: 'example.com/npl' }, { kind: 'pod-egress', everyMs: 1500 }, { kind: 'nodeport-health', service: 'web', everyMs: 1000 }],
      schedule: 'path',
    }).chain((x) => fc.oneof(fc.constant(x), withNetwork(x), withNodeController(x))),
    invariants: fc.array(invariantArb, { minLength: 1, maxLength: 4 }),
  })
  .chain((r) => expectationArb(r.invariants).map((expect) => ({ name: r.name, ...(r.description !== undefined ? { description: r.description } : {}), scenario: r.scenario, invariants: r.invariants, expect })));

describe('serializeScenario', () => {
  it('should write YAML that loads back to the same data, and rewrite it to the same text', () => {
    fc.assert(
      fc.property(fileArb, (f) => {
        const text = serializeScenario(f);
        const back = loadScenario(text, { file: 'roundtrip.yaml' });
        expect(back).toEqual(f);
        expect(serializeScenario(back)).toBe(text);
      }),
      { seed: 42, numRuns: 100 },
    );
  });

  it('should write short collections on one line and put the schema line first', () => {
    const sample = fc.sample(fileArb, { seed: 3, numRuns: 1 })[0] as ScenarioFile;
    // Without the generated network section, so node-1 is one short mapping.
    const { network: _network, ...cluster } = sample.scenario.cluster;
    const plain: ScenarioFile = {
      ...sample,
      scenario: { ...sample.scenario, cluster: { ...cluster, nodes: cluster.nodes.map((n) => ({ name: n.name })) }, timeline: sample.scenario.timeline.filter((t) => !('host' in t.action)), probes: (sample.scenario.probes ?? []).filter((p) => p.kind !== 'connect') },
    };
    const f = loadScenario(serializeScenario(plain));
    const text = serializeScenario(f, { schemaUrl: '../packages/scenario/schema/scenario.schema.json', comment: 'found by netsim fuzz' });
    expect(text.split('\n').slice(0, 3)).toEqual(['# yaml-language-server: $schema=../packages/scenario/schema/scenario.schema.json', '# found by netsim fuzz', 'format: netsim.scenario/v1']);
    expect(text).toMatch(/^ {2}nodes:\n {4}- { name: node-1 }$/m);
  });
});

describe('scenarioFromCounterexample', () => {
  it('should export a counterexample from @netsim/check as a scenario file that replays to the same violation', async () => {
    const invariants: InvariantSpec[] = [{ kind: 'no-stale-dnat', chains: ['TOY-DNAT'] }];
    const prop = controllerProperty({
      name: 'toy DNAT stays fresh',
      scenarios: scenarioArbitrary({
        controller: { name: 'toy-dnat:faulty' },
        cluster: { nodes: { min: 1, max: 1 }, initialPods: 1 },
        pods: { poolSize: 1, maxPorts: 1 },
        timeline: { kinds: ['pod.recreate', 'watch.gap'], maxActions: 4 },
        horizonMs: 12_000,
        settleMs: 2000,
      }),
      controllers: toyControllers,
      invariants: invariants.map((s) => buildInvariant(s)),
    });
    const failure = await checkProperty(prop, { seed: 8, numRuns: 100 });
    if (failure.ok) throw new Error('expected the faulty toy to break "no stale DNAT"');
    const c = exportCounterexample(failure);
    const file = scenarioFromCounterexample(c, { name: 'toy-found', invariants });
    const text = serializeScenario(file);
    const loaded = loadScenario(text, { file: 'toy-found.yaml' });
    expect(loaded).toEqual(file);
    expect(loaded.expect).toEqual({ outcome: 'violation', invariant: 'no stale DNAT', betweenMs: [c.expected.timeMs, c.expected.timeMs] });
    const r = await replay(loaded, { controllers: toyControllers });
    expect(r.met).toBe(true);
    expect(r.outcome.steps).toBe(c.expected.step);
    expect(r.story.at(-2)).toMatch(/VIOLATION of "no stale DNAT"/);
  });

  it('should refuse a counterexample whose invariant is not among the given ones', async () => {
    const prop = controllerProperty({
      name: 'p',
      scenarios: fc.constant((await import('./fixtures/toyScenario.ts')).toyScenario('toy-dnat:faulty')),
      controllers: toyControllers,
      invariants: [buildInvariant({ kind: 'no-stale-dnat', chains: ['TOY-DNAT'] })],
    });
    const failure = await checkProperty(prop, { seed: 1, numRuns: 1 });
    if (failure.ok) throw new Error('expected a failure');
    expect(() => scenarioFromCounterexample(exportCounterexample(failure), { name: 'x', invariants: [{ kind: 'probes-succeed' }] })).toThrow(
      'scenarioFromCounterexample: the counterexample violates "no stale DNAT", which none of the given invariants is named (probes succeed)',
    );
  });
});

describe('custom invariants with options', () => {
  it('should give a registered factory the options of its entry, keep them through a file, and report the entry by its name', () => {
    const seen: unknown[] = [];
    const registry = {
      'at most N Pods': (options: { readonly [k: string]: unknown }) => {
        seen.push(options);
        const max = typeof options['max'] === 'number' ? options['max'] : 0;
        return { name: 'module name', check: () => (max < 1 ? `at most ${max} Pods` : undefined) };
      },
    };
    const spec: InvariantSpec = { kind: 'custom', name: 'at most N Pods', options: { max: 0 } };
    const src = buildInvariant(spec, registry);
    const inv = typeof src === 'function' ? src() : src;
    expect(seen).toEqual([{ max: 0 }]);
    expect(inv.name).toBe('at most N Pods');
    expect(typeof inv.check).toBe('function');
    const sample = fc.sample(fileArb, { seed: 3, numRuns: 1 })[0] as ScenarioFile;
    const text = serializeScenario({ ...sample, invariants: [spec], expect: { outcome: 'ok' } });
    expect(loadScenario(text).invariants).toEqual([spec]);
    // No options in the entry: the factory gets {}.
    const plain = buildInvariant({ kind: 'custom', name: 'at most N Pods' }, registry);
    if (typeof plain === 'function') plain();
    expect(seen).toEqual([{ max: 0 }, {}]);
  });
});
