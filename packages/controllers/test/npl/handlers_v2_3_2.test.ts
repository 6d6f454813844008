/**
 * The faulty NodePortLocal agent (Antrea v2.3.2) reproduces both flaws of the incident, from the
 * mechanisms alone, in deterministic example histories.
 */
import { describe, expect, it } from 'vitest';
import { World, story } from '@netsim/sim';
import { NPL_ANNOTATION, NPL_CHAIN, nodePortLocal, type NplVariant } from '../../src/index.ts';
import { EIGHT_PORTS, argvOf, chainLines, nplInvariants, nplService } from '../helpers.ts';

function world(variant: NplVariant, invariants = nplInvariants): World {
  return new World({
    seed: 1,
    cluster: { nodes: [{ name: 'node-1' }], services: [nplService], pods: [{ name: 'web-0', node: 'node-1', labels: { app: 'web' }, ports: EIGHT_PORTS }] },
    controller: nodePortLocal(variant),
    invariants,
  });
}

/** The Pod is deleted four times before a recreated one gets an IP (a StatefulSet Pod restarting). */
function fourDeletesBeforeTheNewPodRuns(w: World): void {
  for (let i = 0; i < 4; i++) w.at(5000 + 200 * i, { kind: 'pod.recreate', name: 'web-0', gapMs: 10 });
}

function dnatTargets(w: World): string[] {
  return chainLines(w.ruleset('node-1'), 'nat', NPL_CHAIN).map((l) => l.replace(/^.*--dport (\d+) -j DNAT --to-destination (\S+)$/, '$1→$2'));
}

describe('npl:faulty (Antrea v2.3.2)', () => {
  it('should leave 4 of 8 rules stale when an 8-port Pod is seen deleted 4 times before its replacement runs', async () => {
    const w = world('faulty', []);
    fourDeletesBeforeTheNewPodRuns(w);
    expect((await w.run(15_000)).status).toBe('ok');
    const pod = w.api.get('Pod', 'default', 'web-0');
    expect(pod.status.podIP).toBe('198.18.0.3');
    // Each handleRemovePod deleted exactly one entry (61000..61003); the replacement got new
    // rules for those four ports and reused the four cached entries with the old IP.
    expect(dnatTargets(w)).toEqual([
      '61004→198.18.0.2:8084',
      '61005→198.18.0.2:8085',
      '61006→198.18.0.2:8086',
      '61007→198.18.0.2:8087',
      '61008→198.18.0.3:8080',
      '61009→198.18.0.3:8081',
      '61010→198.18.0.3:8082',
      '61011→198.18.0.3:8083',
    ]);
    const deletes = w.events.filter((e) => argvOf(e).includes(`-D ${NPL_CHAIN}`));
    expect(deletes).toHaveLength(4);
    // The annotation publishes all eight node ports: four of them lead to the old IP.
    const published = (JSON.parse(pod.metadata.annotations[NPL_ANNOTATION] ?? '[]') as { nodePort: number }[]).map((a) => a.nodePort).sort();
    expect(published).toEqual([61004, 61005, 61006, 61007, 61008, 61009, 61010, 61011]);
  });

  it('should be caught by "no stale DNAT" with a story naming the old and the new Pod', async () => {
    const w = world('faulty');
    fourDeletesBeforeTheNewPodRuns(w);
    const out = await w.run(15_000);
    expect(out).toMatchObject({ status: 'violation', violation: { invariant: 'no stale DNAT' } });
    expect(story(w.events).join('\n')).toMatch(
      /VIOLATION of "no stale DNAT": DNAT tcp --dport 61004 → 198\.18\.0\.2:8084 in ANTREA-NODE-PORT-LOCAL on node-1 is stale: 198\.18\.0\.2 was default\/web-0 \(uid \w{4}\) but default\/web-0 is now 198\.18\.0\.3/,
    );
  });

  it('should keep DNAT to the old IP when a same-name recreate falls in a watch gap', async () => {
    const w = world('faulty', []);
    w.at(5000, { kind: 'watch.gap', node: 'node-1', durationMs: 4000 });
    w.at(5100, { kind: 'pod.recreate', name: 'web-0', gapMs: 100 });
    expect((await w.run(15_000)).status).toBe('ok');
    const pod = w.api.get('Pod', 'default', 'web-0');
    expect(pod.status.podIP).toBe('198.18.0.3');
    // The handler saw one update (old uid → new uid) and reused every cached entry.
    const updates = w.events.filter((e) => e.type === 'kube.handler' && e['call'] === 'onUpdate' && e['oldUid'] !== e['uid']);
    expect(updates).toHaveLength(1);
    expect(w.events.some((e) => e.type === 'kube.handler' && e['call'] === 'onDelete')).toBe(false);
    expect(dnatTargets(w)).toEqual(EIGHT_PORTS.map((p, i) => `${61000 + i}→198.18.0.2:${p.port}`));
    // The new Pod is annotated with the same node ports, which lead to the old IP.
    expect(pod.metadata.annotations[NPL_ANNOTATION]).toBe(JSON.stringify(EIGHT_PORTS.map((p, i) => ({ podPort: p.port, nodeIP: '192.0.2.11', nodePort: 61000 + i, protocol: 'tcp' }))));
  });
});
