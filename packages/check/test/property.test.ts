import { describe, expect, it } from 'vitest';
import { runScenario } from '@netsim/sim';
import { POD_CHURN, checkProperty, controllerProperty, exportCounterexample, scenarioArbitrary } from '../src/index.ts';
import { annotated, annotator } from './fixtures/annotator.ts';

const controllers = { 'annotator-by-name': () => annotator('by-name'), 'annotator-by-uid': () => annotator('by-uid') };

function property(variant: 'by-name' | 'by-uid') {
  return controllerProperty({
    name: `annotator (${variant}) annotates every live Pod`,
    scenarios: scenarioArbitrary({
      controller: { name: `annotator-${variant}` },
      cluster: { nodes: { min: 1, max: 2 }, initialPods: 1 },
      pods: { poolSize: 2, maxPorts: 1 },
      timeline: { kinds: POD_CHURN, maxActions: 6 },
      horizonMs: 12_000,
      settleMs: 3000,
    }),
    controllers,
    invariants: [annotated],
  });
}


/** Property searches run many simulations; the bound is generous because the machine may be shared (not a speed assertion). */
const PROPERTY_TIMEOUT_MS = 60_000;
describe('controllerProperty', () => {
  it('should find the same-name recreate bug and shrink it to a recreate of one Pod', async () => {
    const r = await checkProperty(property('by-name'), { seed: 1, numRuns: 100 });
    if (r.ok) throw new Error('expected the by-name annotator to fail');
    expect(r.deterministic).toBe(true);
    expect(r.outcome).toMatchObject({ status: 'violation', violation: { invariant: 'live Pods are annotated with their IP' } });
    const kinds = r.scenario.timeline.map((t) => t.action.kind);
    expect(kinds.length).toBeLessThanOrEqual(2);
    expect(r.story.join('\n')).toMatch(/VIOLATION of "live Pods are annotated with their IP": default\/web-\d is 198\.18\.\d+\.\d+ but its annotation says/);
  }, PROPERTY_TIMEOUT_MS);

  it('should pass for the fixed variant', async () => {
    expect(await checkProperty(property('by-uid'), { seed: 1, numRuns: 40 })).toMatchObject({ ok: true, numRuns: 40 });
  }, PROPERTY_TIMEOUT_MS);

  it('should export a counterexample as plain data that fails the same way when replayed', async () => {
    const r = await checkProperty(property('by-name'), { seed: 1, numRuns: 100 });
    if (r.ok) throw new Error('expected a failure');
    const c = exportCounterexample(r);
    const roundTripped = JSON.parse(JSON.stringify(c)) as typeof c;
    expect(roundTripped).toEqual(c);
    expect(c.format).toBe('netsim.counterexample/v1');
    const replay = await runScenario(roundTripped.scenario, { controllers, invariants: [annotated] });
    expect(replay.outcome.status).toBe(c.expected.status);
    expect(replay.outcome.steps).toBe(c.expected.step);
    expect(replay.outcome.timeMs).toBe(c.expected.timeMs);
  }, PROPERTY_TIMEOUT_MS);
});
