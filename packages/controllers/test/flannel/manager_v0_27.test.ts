/**
 * The fixed flannel lifecycle (v0.27): nothing is torn down on SIGTERM, and start-up cleans
 * stale state without emptying the live chain.
 */
import { describe, expect, it } from 'vitest';
import { World, type Controller, type ControllerContext } from '@netsim/sim';
import { MASQ_CHAIN, flannel } from '../../src/index.ts';
import { argvOf, chainLines, fieldOf } from '../helpers.ts';
import { MASQ_INVARIANT_NAME, masqInvariants, probeChanges } from './helpers.ts';

/** Process #1 is a flanneld that leaves a duplicate and a rule for another subnet behind; later ones are `next`. */
function afterLeftovers(next: Controller<ControllerContext>): Controller<ControllerContext> {
  return {
    name: 'flanneld',
    create: (ctx) => {
      if (ctx.incarnation > 1) return next.create(ctx);
      const inner = flannel('faulty').create(ctx);
      return {
        start: async () => {
          await inner.start();
          await ctx.sleep(1000);
          await ctx.iptables.append('nat', MASQ_CHAIN, '-s', '198.18.9.0/24', '-d', '198.18.0.0/15', '-m', 'comment', '--comment', 'flanneld masq', '-j', 'RETURN');
          await ctx.iptables.append('nat', MASQ_CHAIN, '-s', '198.18.0.0/15', '!', '-d', '224.0.0.0/4', '-m', 'comment', '--comment', 'flanneld masq', '-j', 'MASQUERADE', '--random-fully');
        },
      };
    },
  };
}

describe('flannel:fixed (v0.27 lifecycle)', () => {
  it('should keep the chain programmed through a graceful restart and a crash', async () => {
    const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }, { name: 'node-2' }] }, controller: flannel('fixed'), invariants: masqInvariants });
    w.at(12_000, { kind: 'agent.restart', node: 'node-1', downMs: 2000 });
    w.at(15_000, { kind: 'agent.crash', node: 'node-2', restartAfterMs: 100 });
    expect(await w.run(25_000)).toMatchObject({ status: 'ok' });
    expect(w.events.some((e) => e.type === 'iptables.restore' && e.t >= 12_000 && e.t < 14_000)).toBe(false);
    for (const n of ['node-1', 'node-2']) expect(chainLines(w.ruleset(n), 'nat', MASQ_CHAIN)).toHaveLength(6);
  });

  it("should keep Pods' egress working through a restart", async () => {
    const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }], pods: [{ name: 'web-0', node: 'node-1', ports: [] }] }, controller: flannel('fixed'), probes: [{ kind: 'pod-egress', everyMs: 500 }] });
    w.at(12_000, { kind: 'agent.restart', node: 'node-1', downMs: 2000 });
    expect((await w.run(20_000)).status).toBe('ok');
    expect(probeChanges(w.events)).toEqual([]);
    expect(w.view.probes()).toMatchObject([{ id: 'pod-egress default/web-0 → 203.0.113.10:443', ok: true, outcome: 'established' }]);
  });

  it('should replace stale rules at start in one restore, never emptying the chain', async () => {
    const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: afterLeftovers(flannel('fixed')), invariants: masqInvariants });
    w.at(5000, { kind: 'agent.crash', node: 'node-1', restartAfterMs: 1000 });
    expect(await w.run(10_000)).toMatchObject({ status: 'ok' });
    const rules = chainLines(w.ruleset('node-1'), 'nat', MASQ_CHAIN);
    expect(rules).toHaveLength(6);
    expect(rules.join('\n')).not.toContain('198.18.9.0/24');
    const start = w.events.find((e) => e.type === 'iptables.restore' && e.t > 6000);
    expect(fieldOf(start, 'input')).toMatch(/^\*nat\n:FLANNEL-POSTRTG - \[0:0\]\n-D POSTROUTING .*\n-A POSTROUTING .*\n(-A FLANNEL-POSTRTG .*\n){6}COMMIT\n$/);
    expect(w.events.some((e) => argvOf(e).includes('-F FLANNEL-POSTRTG'))).toBe(false);
  });

  it("should still flush at start with chainSetup 'clear', as v0.27.0 does, and be caught for it", async () => {
    const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: flannel('fixed', { chainSetup: 'clear' }), invariants: masqInvariants });
    w.at(12_000, { kind: 'agent.restart', node: 'node-1', downMs: 2000 });
    const out = await w.run(20_000);
    // Only the start-up flush: from -F to the bootstrap restore, a few milliseconds.
    expect(out).toMatchObject({ status: 'violation', violation: { invariant: MASQ_INVARIANT_NAME } });
    expect(out.timeMs).toBeGreaterThan(14_000);
    expect(w.events.some((e) => argvOf(e) === 'iptables -t nat -F FLANNEL-POSTRTG --wait')).toBe(true);
  });
});
