/**
 * The faulty flannel lifecycle (v0.26): a restart empties FLANNEL-POSTRTG for the whole time the
 * agent is away.
 */
import { describe, expect, it } from 'vitest';
import { World, story, type Controller, type ControllerContext } from '@netsim/sim';
import { MASQ_CHAIN, flannel } from '../../src/index.ts';
import { argvOf, chainLines, fieldOf } from '../helpers.ts';
import { MASQ_INVARIANT_NAME, masqInvariants, probeChanges } from './helpers.ts';

function world(invariants = masqInvariants): World {
  return new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: flannel('faulty'), invariants });
}

describe('flannel:faulty (v0.26 lifecycle)', () => {
  it('should delete every recorded rule one second after SIGTERM and leave the chain empty until the next start has bootstrapped', async () => {
    const w = world([]);
    w.at(12_000, { kind: 'agent.restart', node: 'node-1', downMs: 2000 });
    const sizes: { readonly t: number; readonly n: number }[] = [];
    w.engine.onAfterStep(() => {
      const n = chainLines(w.ruleset('node-1'), 'nat', MASQ_CHAIN).length;
      if (sizes.at(-1)?.n !== n) sizes.push({ t: w.engine.now(), n });
    });
    expect((await w.run(20_000)).status).toBe('ok');
    // Programmed at start, emptied by the SIGTERM teardown at 13016 ms, refilled by the next
    // process's bootstrap after its restart: about 3 s without masquerading.
    expect(sizes.map((s) => s.n)).toEqual([0, 6, 0, 6]);
    const [, programmed, emptied, refilled] = sizes;
    expect(programmed?.t).toBeLessThan(100);
    expect(emptied?.t).toBe(13_016);
    expect((refilled?.t ?? 0) - (emptied?.t ?? 0)).toBeGreaterThan(2000);
    const teardown = w.events.find((e) => e.type === 'iptables.restore' && e.t === 13_016);
    expect(fieldOf(teardown, 'input')).toContain('-D POSTROUTING -m comment --comment "flanneld masq" -j FLANNEL-POSTRTG');
    // The next start creates-or-flushes the chain before it bootstraps.
    expect(w.events.some((e) => argvOf(e) === 'iptables -t nat -N FLANNEL-POSTRTG --wait' && e['exit'] === 1 && e.t > 13_016)).toBe(true);
  });

  it("should break Pods' new outbound connections from the teardown until the next flanneld has bootstrapped", async () => {
    const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }], pods: [{ name: 'web-0', node: 'node-1', ports: [] }] }, controller: flannel('faulty'), probes: [{ kind: 'pod-egress', everyMs: 500 }] });
    w.at(12_000, { kind: 'agent.restart', node: 'node-1', downMs: 2000 });
    expect((await w.run(20_000)).status).toBe('ok');
    // The first probe after the teardown leaves with the Pod's own address: the gateway has no route back.
    expect(probeChanges(w.events)).toEqual(['t=13500 false timed-out', 't=15500 true established']);
    expect(w.events.find((e) => e.type === 'probe.result' && e['ok'] === false)?.['detail']).toMatch(/^tcp 203\.0\.113\.10:443 > 198\.18\.0\.2:\d+ \[SYN,ACK\] dropped at gw: no route to 198\.18\.0\.2$/);
  });

  it('should be caught by "chain never empty once programmed" at the teardown', async () => {
    const w = world();
    w.at(12_000, { kind: 'agent.restart', node: 'node-1', downMs: 2000 });
    const out = await w.run(20_000);
    expect(out).toMatchObject({ status: 'violation', violation: { invariant: MASQ_INVARIANT_NAME, timeMs: 13_016 } });
    expect(story(w.events).slice(-4).join('\n')).toMatch(
      /gets SIGTERM \(grace 30000ms\)\n.*t=13016ms node-1\/flanneld: iptables-restore --noflush --wait \(9 lines\)\n.*VIOLATION of "FLANNEL-POSTRTG never empty once programmed": FLANNEL-POSTRTG on node-1 is empty \(it had 6 rules\)/,
    );
  });

  it('should flush the live chain at start even after a crash, when nothing was torn down', async () => {
    const w = world();
    w.at(12_000, { kind: 'agent.crash', node: 'node-1', restartAfterMs: 500 });
    const out = await w.run(20_000);
    expect(out).toMatchObject({ status: 'violation', violation: { invariant: MASQ_INVARIANT_NAME } });
    expect(story(w.events).join('\n')).toMatch(/iptables -t nat -F FLANNEL-POSTRTG --wait\n.*VIOLATION/);
  });

  it('should re-bootstrap the rules at the next ensure when one goes missing', async () => {
    // Someone deletes one of the rules by hand at t=7s (the same process stands in for them).
    const base = flannel('faulty');
    const controller: Controller<ControllerContext> = {
      name: base.name,
      create: (ctx) => {
        const inner = base.create(ctx);
        return {
          start: () => {
            ctx.after(7000, 'admin deletes a rule', () => ctx.iptables.delete('nat', MASQ_CHAIN, '-m', 'mark', '--mark', '0x4000/0x4000', '-m', 'comment', '--comment', 'flanneld masq', '-j', 'RETURN'));
            return inner.start();
          },
        };
      },
    };
    const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller, invariants: masqInvariants });
    expect(await w.run(12_000)).toMatchObject({ status: 'ok' });
    const missing = w.events.find((e) => e.type === 'agent.log' && e['msg'] === 'Some iptables rules are missing; deleting and recreating rules');
    expect(missing?.t).toBeGreaterThan(7000);
    expect(missing?.t).toBeLessThan(10_100);
    const rules = chainLines(w.ruleset('node-1'), 'nat', MASQ_CHAIN);
    expect(rules).toHaveLength(6);
    expect(rules[0]).toBe('-A FLANNEL-POSTRTG -m mark --mark 0x4000/0x4000 -m comment --comment "flanneld masq" -j RETURN');
  });
});
