import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validateScenario, type ServiceSpec, type SimScenario, type TimedAction } from '@netsim/sim';
import { CLOSING_QUIET_MS, POD_NAME_LABEL, closeTimeline, generatableFeatures, generatorContext, historyShapeArbitrary, scenarioArbitrary, serviceRetargetArbitrary, timelineArbitrary } from '../src/index.ts';

const SERVICE: ServiceSpec = {
  name: 'web',
  selector: { app: 'web' },
  ports: [
    { name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' },
    { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP' },
  ],
};
const PORTS = [
  { port: 8080, protocol: 'TCP' as const, name: 'http' },
  { port: 5353, protocol: 'UDP' as const, name: 'dns' },
];
const ctx = generatorContext(['node-1', 'node-2'], { pods: { poolSize: 3, ports: PORTS }, services: [SERVICE] });

describe('closing history shapes', () => {
  it('should end a timeline with the closing entry: every other action moves before it, in order', () => {
    const a = (atMs: number, name: string): TimedAction => ({ atMs, action: { kind: 'pod.delete', name } });
    const out = closeTimeline(
      [
        { actions: [a(9000, 'late')], closing: false },
        { actions: [a(4000, 'close'), a(4200, 'close-2')], closing: true },
        { actions: [a(1000, 'early'), a(16_000, 'later')], closing: false },
        { actions: [a(2000, 'second-closing')], closing: true },
      ],
      0,
      17_000,
    );
    const names = out.map((t) => (t.action.kind === 'pod.delete' ? t.action.name : ''));
    expect(names.slice(-2)).toEqual(['close', 'close-2']);
    expect(new Set(names)).toEqual(new Set(['late', 'close', 'close-2', 'early', 'later', 'second-closing']));
    for (const t of out.slice(0, -2)) expect(t.atMs).toBeLessThan(4000);
    const times = out.map((t) => t.atMs);
    expect(times).toEqual([...times].sort((x, y) => x - y));
    // Without a closing entry the timeline is only sorted.
    expect(closeTimeline([{ actions: [a(9000, 'x'), a(10, 'y')], closing: false }], 0, 17_000).map((t) => t.atMs)).toEqual([10, 9000]);
  });

  it('should leave at least CLOSING_QUIET_MS before the end of the window after a closing shape starts', () => {
    const timeline = timelineArbitrary(['node-1', 'node-2'], 20_000, 3000, { kinds: ['pod.create', 'pod.delete', 'watch.gap', 'service-edit', 'failed-sync', 'drain'], maxActions: 8, pods: { poolSize: 3, ports: PORTS }, services: [SERVICE] });
    let closed = 0;
    fc.assert(
      fc.property(timeline, (tl) => {
        const isClosing = (t: TimedAction): boolean => t.action.kind === 'service.update' || t.action.kind === 'iptables.restore-fail' || t.action.kind === 'iptables.fail' || t.action.kind === 'node.drain' || (t.action.kind === 'pod.create' && t.action.pod.preStopSleepSeconds !== undefined);
        if (!tl.some(isClosing)) return;
        closed++;
        // The timeline ends with one closing shape: a Service edit, a failed restore and its Pod change, or a drain.
        const last = tl.at(-1) as TimedAction;
        const tail = last.action.kind === 'service.update' ? 1 : 2;
        const start = tl[tl.length - tail] as TimedAction;
        if (tail === 2) expect(start.action.kind === 'iptables.restore-fail' || start.action.kind === 'iptables.fail' || (start.action.kind === 'pod.create' && last.action.kind === 'node.drain')).toBe(true);
        expect(start.atMs).toBeLessThanOrEqual(17_000 - CLOSING_QUIET_MS);
        for (const t of tl.slice(0, -tail)) expect(t.atMs).toBeLessThanOrEqual(start.atMs);
      }),
      { seed: 21, numRuns: 300 },
    );
    expect(closed).toBeGreaterThan(50);
  });

  it('service-edit: should change a targetPort, remove a port or change the selector, every time', () => {
    const edits = fc.sample(serviceRetargetArbitrary(ctx, SERVICE), { seed: 22, numRuns: 300 });
    const targets = (s: ServiceSpec): string => s.ports.map((p) => `${p.port}:${String(p.targetPort)}`).join(',');
    const selectors = new Set<string>();
    let retargeted = 0;
    let removed = 0;
    for (const e of edits) {
      if (e.ports.length < SERVICE.ports.length) removed++;
      else if (targets(e) !== targets(SERVICE)) retargeted++;
      selectors.add(JSON.stringify(e.selector));
      expect(e.ports.length).toBeGreaterThan(0);
    }
    expect(removed).toBeGreaterThan(20);
    expect(retargeted).toBeGreaterThan(20);
    // Nothing, every Pod, or one Pod by its StatefulSet name label.
    expect(selectors).toContain(JSON.stringify({ app: 'other' }));
    expect(selectors).toContain(JSON.stringify({ app: 'web' }));
    expect(selectors).toContain(JSON.stringify({ app: 'web', [POD_NAME_LABEL]: 'web-1' }));
  });

  it('should label generated Pods with their StatefulSet name, so a selector can pick one', () => {
    const [tl] = fc.sample(timelineArbitrary(['node-1'], 20_000, 3000, { kinds: ['pod.create'], maxActions: 5 }).filter((t) => t.length > 0), { seed: 23, numRuns: 1 }) as [TimedAction[]];
    for (const t of tl) if (t.action.kind === 'pod.create') expect(t.action.pod.labels?.[POD_NAME_LABEL]).toBe(t.action.pod.name);
  });

  it('failed-sync: should fail the next iptables-restore or iptables commands of a node just before a Pod change', () => {
    const faults = new Set<string>();
    for (const tl of fc.sample(historyShapeArbitrary('failed-sync', ctx, 0, 17_000), { seed: 24, numRuns: 100 })) {
      const [fail, change] = tl as [TimedAction, TimedAction];
      expect(tl).toHaveLength(2);
      faults.add(fail.action.kind === 'iptables.fail' ? `iptables.fail ${fail.action.count !== undefined ? 'count' : 'duration'}` : fail.action.kind);
      expect(['pod.delete', 'pod.create', 'pod.recreate', 'workload.scale']).toContain(change.action.kind);
      expect(change.atMs - fail.atMs).toBeGreaterThanOrEqual(0);
      expect(change.atMs - fail.atMs).toBeLessThanOrEqual(500);
    }
    expect([...faults].sort()).toEqual(['iptables.fail count', 'iptables.fail duration', 'iptables.restore-fail']);
  });

  it('drain: should create a Pod whose preStop sleep fits its grace period, then drain its node once it is Ready', () => {
    for (const tl of fc.sample(historyShapeArbitrary('drain', ctx, 0, 17_000), { seed: 25, numRuns: 100 })) {
      const [create, drain] = tl as [TimedAction, TimedAction];
      if (create.action.kind !== 'pod.create' || drain.action.kind !== 'node.drain') throw new Error(`unexpected drain shape ${JSON.stringify(tl)}`);
      const pod = create.action.pod;
      expect(pod.name).toBe('web-3'); // outside the pool: churn never names it
      expect(pod.preStopSleepSeconds).toBeGreaterThan(3); // longer than the settle time
      expect(pod.preStopSleepSeconds).toBeLessThanOrEqual(pod.terminationGracePeriodSeconds ?? 0);
      expect(drain.action.node).toBe(pod.node);
      expect(drain.atMs - create.atMs).toBeGreaterThanOrEqual(1500);
    }
  });

  it('should offer service-edit only where there is a Service, and generate valid scenarios with every shape', () => {
    const bare = generatorContext(['node-1'], {});
    expect(generatableFeatures(bare, ['service-edit', 'failed-sync', 'drain'])).toEqual(['failed-sync', 'drain']);
    const arb = scenarioArbitrary({ controller: { name: 'toy' }, cluster: { services: [SERVICE] }, pods: { ports: PORTS }, timeline: { kinds: ['pod.create', 'service-edit', 'failed-sync', 'drain'], maxActions: 6 }, swarm: true });
    fc.assert(
      fc.property(arb, (s: SimScenario) => {
        validateScenario(s);
      }),
      { seed: 26, numRuns: 200 },
    );
  });
});
