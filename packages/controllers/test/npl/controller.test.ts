/**
 * The NodePortLocal controller's shared machinery: the restart path (the incident's workaround)
 * and the workqueue's retry of a failed sync.
 */
import { describe, expect, it } from 'vitest';
import { World, probesSucceed } from '@netsim/sim';
import { NPL_ANNOTATION, NPL_CHAIN, nodePortLocal } from '../../src/index.ts';
import { EIGHT_PORTS, chainLines, fieldOf, nplInvariants, nplService } from '../helpers.ts';

function world(variant: 'faulty' | 'fixed', invariants = nplInvariants): World {
  return new World({
    seed: 1,
    cluster: { nodes: [{ name: 'node-1' }], services: [nplService], pods: [{ name: 'web-0', node: 'node-1', labels: { app: 'web' }, ports: EIGHT_PORTS }] },
    controller: nodePortLocal(variant),
    invariants,
    probes: [{ kind: 'npl-health', everyMs: 500 }],
  });
}

describe('npl controller', () => {
  it('should heal the stale rules of npl:faulty when the agent restarts: one restore rebuilds the chain from the annotation and the current Pod IP', async () => {
    const w = world('faulty', []);
    for (let i = 0; i < 4; i++) w.at(5000 + 200 * i, { kind: 'pod.recreate', name: 'web-0', gapMs: 10 });
    w.at(9000, { kind: 'agent.restart', node: 'node-1', downMs: 500 });
    const failing = new Set<string>();
    w.engine.onAfterStep(() => {
      for (const p of w.view.probes()) if (!p.ok) failing.add(`${p.atMs < 9000 ? 'before' : 'after'} ${p.id}`);
    });
    expect((await w.run(14_000)).status).toBe('ok');
    // Before the restart the health checks of the four stale mappings fail…
    expect([...failing].filter((f) => f.startsWith('before')).sort()).toEqual([8084, 8085, 8086, 8087].map((p, i) => `before npl-health default/web-0:${p} via 192.0.2.11:${61004 + i}`));
    const restore = w.events.filter((e) => e.type === 'iptables.restore' && e.t > 9000);
    expect(restore).toHaveLength(1);
    const ip = w.api.get('Pod', 'default', 'web-0').status.podIP ?? '?';
    expect(fieldOf(restore[0], 'input').split('\n')).toEqual([
      '*nat',
      `:${NPL_CHAIN} - [0:0]`,
      ...[8080, 8081, 8082, 8083, 8084, 8085, 8086, 8087].map((p) => {
        const published = (JSON.parse(w.api.get('Pod', 'default', 'web-0').metadata.annotations[NPL_ANNOTATION] ?? '[]') as { podPort: number; nodePort: number }[]).find((a) => a.podPort === p);
        return `-A ${NPL_CHAIN} -p tcp -m tcp --dport ${published?.nodePort ?? 0} -j DNAT --to-destination ${ip}:${p}`;
      }),
      'COMMIT',
      '',
    ]);
    // …and after it every mapping leads to the Pod.
    const rules = chainLines(w.ruleset('node-1'), 'nat', NPL_CHAIN);
    expect(rules).toHaveLength(8);
    for (const l of rules) expect(l).toContain(`--to-destination ${ip}:`);
    expect(w.view.probes().every((p) => p.ok)).toBe(true);
  });

  it('should requeue a key whose sync failed and program it at the retry', async () => {
    const w = new World({
      seed: 1,
      cluster: { nodes: [{ name: 'node-1' }], services: [nplService] },
      controller: nodePortLocal('fixed'),
      invariants: [...nplInvariants, probesSucceed()],
      probes: [{ kind: 'npl-health', everyMs: 500 }],
    });
    w.at(1000, { kind: 'pod.create', pod: { name: 'web-0', node: 'node-1', labels: { app: 'web' }, ports: EIGHT_PORTS } });
    w.at(1400, { kind: 'iptables.fail', node: 'node-1', count: 1 });
    expect(await w.run(8000)).toMatchObject({ status: 'ok' });
    const errors = w.events.filter((e) => e.type === 'agent.log' && e['msg'] === 'Error syncing Pod, requeuing');
    expect(errors).toHaveLength(1);
    expect(chainLines(w.ruleset('node-1'), 'nat', NPL_CHAIN)).toHaveLength(8);
  });
});
