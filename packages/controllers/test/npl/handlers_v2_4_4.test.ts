/**
 * The fixed NodePortLocal agent (Antrea v2.4.4) on the histories that break v2.3.2.
 */
import { describe, expect, it } from 'vitest';
import { World } from '@netsim/sim';
import { NPL_ANNOTATION, NPL_CHAIN, nodePortLocal } from '../../src/index.ts';
import { EIGHT_PORTS, argvOf, chainLines, nplInvariants, nplService } from '../helpers.ts';

function world(settleMs = 3000): World {
  return new World({
    seed: 1,
    settleMs,
    cluster: { nodes: [{ name: 'node-1' }], services: [nplService], pods: [{ name: 'web-0', node: 'node-1', labels: { app: 'web' }, ports: EIGHT_PORTS }] },
    controller: nodePortLocal('fixed'),
    invariants: nplInvariants,
  });
}

function expectEightFreshRules(w: World): void {
  const pod = w.api.get('Pod', 'default', 'web-0');
  const ip = pod.status.podIP ?? '?';
  const rules = chainLines(w.ruleset('node-1'), 'nat', NPL_CHAIN);
  expect(rules).toHaveLength(8);
  for (const l of rules) expect(l).toContain(`--to-destination ${ip}:`);
  const published = JSON.parse(pod.metadata.annotations[NPL_ANNOTATION] ?? '[]') as { nodePort: number; podPort: number }[];
  expect(published.map((a) => a.podPort).sort()).toEqual(EIGHT_PORTS.map((p) => p.port));
  for (const a of published) expect(rules).toContain(`-A ${NPL_CHAIN} -p tcp -m tcp --dport ${a.nodePort} -j DNAT --to-destination ${ip}:${a.podPort}`);
}

describe('npl:fixed (Antrea v2.4.4)', () => {
  it('should delete every rule of an 8-port Pod at its first delete event', async () => {
    const w = world();
    for (let i = 0; i < 4; i++) w.at(5000 + 200 * i, { kind: 'pod.recreate', name: 'web-0', gapMs: 10 });
    expect(await w.run(15_000)).toMatchObject({ status: 'ok' });
    const firstDeletes = w.events.filter((e) => argvOf(e).includes(`-D ${NPL_CHAIN}`) && e.t < 5100);
    expect(firstDeletes).toHaveLength(8);
    expectEightFreshRules(w);
  });

  it('should recreate the rules with the new IP when a same-name recreate falls in a watch gap', async () => {
    // Any controller is blind during the gap: the relist comes ~5.2 s after the delete (4 s gap
    // plus the reflector's backoff), so the settle time covers that.
    const w = world(6000);
    w.at(5000, { kind: 'watch.gap', node: 'node-1', durationMs: 4000 });
    w.at(5100, { kind: 'pod.recreate', name: 'web-0', gapMs: 100 });
    expect(await w.run(15_000)).toMatchObject({ status: 'ok' });
    expect(w.api.get('Pod', 'default', 'web-0').status.podIP).toBe('198.18.0.3');
    expect(w.events.filter((e) => e.type === 'agent.log' && e['msg'] === 'Deleting NodePortLocal rule for Pod because of IP change')).toHaveLength(8);
    expectEightFreshRules(w);
  });
});
