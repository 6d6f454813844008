/**
 * The code of docs/testing-your-controller.md, executed, so the guide cannot rot. The outputs the
 * guide pastes are the ones these runs produce.
 */
import { describe, expect, it } from 'vitest';
import '../src/vitest.ts';
import { World, annotationsAgreeWithRules, noStaleDnat, runScenario, story } from '@netsim/sim';
import { POD_CHURN, WATCH_FAULTS, checkProperty, controllerProperty, exportCounterexample, scenarioArbitrary } from '../src/index.ts';
import { portMapper } from './fixtures/portMapper.ts';

const invariants = [noStaleDnat({ chains: ['PORT-MAPPER'] }), annotationsAgreeWithRules({ annotation: 'example.com/ports', chain: 'PORT-MAPPER' })];

function property(remember: 'name' | 'uid+ip') {
  return controllerProperty({
    name: 'port-mapper keeps DNAT and annotations right',
    scenarios: scenarioArbitrary({ controller: { name: 'port-mapper' }, timeline: { kinds: [...POD_CHURN, ...WATCH_FAULTS] } }),
    controllers: { 'port-mapper': () => portMapper(remember) },
    invariants,
  });
}


/** Property searches run many simulations; the bound is generous because the machine may be shared (not a speed assertion). */
const PROPERTY_TIMEOUT_MS = 60_000;
describe('guide: testing your controller', () => {
  it('step 1: should run one hand-written history and tell its story', async () => {
    const world = new World({ seed: 7, cluster: { nodes: [{ name: 'node-1' }] }, controller: portMapper('name'), invariants });
    world.at(1000, { kind: 'pod.create', pod: { name: 'web-0', node: 'node-1', ports: [{ port: 8080, protocol: 'TCP' }] } });
    const outcome = await world.run(5000);
    expect(outcome).toHoldInvariants();
    expect(story(world.events)).toContain('11. t=1501ms node-1/port-mapper: iptables -t nat -A PORT-MAPPER -p tcp -m tcp --dport 40000 -j DNAT --to-destination 198.18.0.2:8080 --wait');
    expect(world.api.get('Pod', 'default', 'web-0').metadata.annotations['example.com/ports']).toBe('[{"podPort":8080,"nodeIP":"192.0.2.11","nodePort":40000,"protocol":"tcp"}]');
  }, PROPERTY_TIMEOUT_MS);

  it('step 2: should find the same-name bug, shrink it to two actions and replay it', async () => {
    const result = await checkProperty(property('name'), { seed: 1, numRuns: 300 });
    if (result.ok) throw new Error('expected the guide to find the bug');
    expect(result.scenario.timeline).toEqual([
      { atMs: 501, action: { kind: 'watch.gap', durationMs: 1 } },
      { atMs: 502, action: { kind: 'pod.recreate', name: 'web-0', gapMs: 0 } },
    ]);
    expect(result.story).toContain('19. t=2013ms node-1/port-mapper/pods onUpdate default/web-0 uid 9056→6e0e');
    expect(result.story.at(-2)).toBe(
      '20. t=5014ms VIOLATION of "no stale DNAT": DNAT tcp --dport 40000 → 198.18.0.2:8080 in PORT-MAPPER on node-1 is stale: 198.18.0.2 was default/web-0 (uid 9056) but default/web-0 is now 198.18.0.3 (uid 6e0e) (for 3001ms, longer than the 3000ms settle time)',
    );
    // Replay by seed and path, and from the exported counterexample.
    const again = await checkProperty(property('name'), { seed: result.seed, path: result.path });
    expect(!again.ok && again.scenario).toEqual(result.scenario);
    const exported = exportCounterexample(result);
    const replay = await runScenario(exported.scenario, { controllers: { 'port-mapper': () => portMapper('name') }, invariants });
    expect(replay).toBreakInvariant('no stale DNAT');
    expect(replay.outcome.timeMs).toBe(exported.expected.timeMs);
  }, PROPERTY_TIMEOUT_MS);

  it('step 3: should hold once the controller compares uid and IP', async () => {
    await expect(property('uid+ip')).toHoldProperty({ seed: 1, numRuns: 100 });
  }, PROPERTY_TIMEOUT_MS);
});
