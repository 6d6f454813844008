import { describe, expect, it } from 'vitest';
import { DisruptionTracker, EVERY_NODE, World, noStaleDnat, type Controller, type ControllerContext } from '../src/index.ts';

describe('DisruptionTracker', () => {
  it('should scope windows to their node, and to every node for cluster-wide ones', () => {
    const t = new DisruptionTracker();
    t.add({ scope: 'node-1', fromMs: 1000, untilMs: 3000, cause: 'watch.gap' });
    t.mark(EVERY_NODE, 500, 'pod.create');
    expect(t.calmSince('node-1', 2000)).toBe(2000);
    expect(t.calmSince('node-2', 2000)).toBe(500);
    expect(t.calmSince('node-1', 4000)).toBe(3000);
    expect(t.calmSinceAnywhere(2000)).toBe(2000);
    expect(t.lastCause('node-1', 4000)).toBe('watch.gap');
    expect(t.lastCause('node-2', 4000)).toBe('pod.create');
  });

  it('should answer the same whether or not it was advanced: reading changes nothing', () => {
    const a = new DisruptionTracker();
    const b = new DisruptionTracker();
    for (const t of [a, b]) {
      t.add({ scope: 'node-1', fromMs: 100, untilMs: 900, cause: 'iptables.lock' });
      t.add({ scope: 'node-1', fromMs: 1200, untilMs: 1300, cause: 'iptables.slow' });
    }
    for (const now of [50, 500]) expect(a.calmSince('node-1', now)).toBe(b.calmSince('node-1', now));
    // Time only moves forward: after advancing to 1000, ask about 1000 and later.
    a.advance(1000);
    for (const now of [1000, 1250, 5000]) {
      expect(a.calmSince('node-1', now)).toBe(b.calmSince('node-1', now));
      expect(b.calmSince('node-1', now)).toBe(b.calmSince('node-1', now));
    }
    expect(b.calmSince('node-1', 1100)).toBe(900);
  });

  it('should end a window early when the fault is over before its bound', () => {
    const t = new DisruptionTracker();
    const w = t.add({ scope: 'node-1', fromMs: 100, untilMs: 30_100, cause: 'agent.restart' });
    t.endEarly(w, 200);
    expect(t.calmSince('node-1', 5000)).toBe(200);
    expect(t.lastEndMs()).toBe(200);
  });
});

const CHAIN = 'TEST-PORTMAP';

/** Programs a DNAT rule to an address no Pod holds, then throws on every start: it crash-loops. */
function breaksThenCrashLoops(): Controller<ControllerContext> {
  return {
    name: 'crashloop',
    create: (ctx) => ({
      start: async () => {
        if (ctx.incarnation === 1) {
          await ctx.iptables.newChain('nat', CHAIN);
          await ctx.iptables.append('nat', CHAIN, '-p', 'tcp', '--dport', '61000', '-j', 'DNAT', '--to-destination', '198.18.0.200:8080');
        }
        await ctx.sleep(100);
        throw new Error('cannot sync: panic');
      },
    }),
  };
}

describe('disruption scoping in the world', () => {
  it('should fail a 60 s run of a controller that breaks its rules and then crash-loops', async () => {
    const world = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: breaksThenCrashLoops(), controllerErrors: 'crash', invariants: [noStaleDnat({ chains: [CHAIN] })], agent: { restartDelayMs: 1000 } });
    const outcome = await world.run(60_000);
    expect(outcome.status).toBe('violation');
    if (outcome.status !== 'violation') return;
    expect(outcome.violation.invariant).toBe('no stale DNAT');
    // Blamed once the first (and only forgiven) start has had its settle time.
    expect(outcome.violation.timeMs).toBeLessThan(5000);
    // Its own restarts are no disruption: the node has been calm since the first start.
    expect(world.view.calmSince('node-1')).toBe(0);
  });

  it('should forgive only the node an injected fault hits', async () => {
    const world = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }, { name: 'node-2' }] }, controller: { name: 'idle', create: () => ({ start: () => undefined }) } });
    world.at(1000, { kind: 'iptables.lock', node: 'node-2', durationMs: 4000 });
    world.at(2000, { kind: 'agent.crash', node: 'node-1', restartAfterMs: 500 });
    await world.run(3000);
    expect(world.view.calmSince('node-2')).toBe(3000);
    // node-1: the crash at 2000 ended when the new process started at 2500.
    expect(world.view.calmSince('node-1')).toBe(2500);
    const before = world.view.calmSince('node-1');
    expect(world.view.calmSince('node-1')).toBe(before);
  });
});
