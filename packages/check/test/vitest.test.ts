import { describe, expect, it } from 'vitest';
import '../src/vitest.ts';
import { Engine } from '@netsim/sim';
import { counterProperty, runCounter } from './fixtures/counter.ts';


/** Property searches run many simulations; the bound is generous because the machine may be shared (not a speed assertion). */
const PROPERTY_TIMEOUT_MS = 60_000;
describe('vitest matchers', () => {
  it('should pass toHoldInvariants for a run that ends ok and explain a failing one with its story', async () => {
    const ok = await runCounter({ seed: 1, increments: [{ atMs: 0, by: 'A' }] }, { trace: true });
    expect(ok).toHoldInvariants();
    const racy = await runCounter({ seed: 1, increments: [{ atMs: 0, by: 'A' }, { atMs: 0, by: 'B' }] }, { trace: true });
    expect(racy).not.toHoldInvariants();
    let message = '';
    try {
      expect(racy).toHoldInvariants();
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain('expected the run to hold its invariants, but: invariant "no lost update" violated');
    expect(message).toMatch(/\n1\. t=0ms world\.action action=increment by=[AB]/);
  }, PROPERTY_TIMEOUT_MS);

  it('should print the seed the run really used (from its outcome), and the story of a world given beside the outcome', async () => {
    const racy = await runCounter({ seed: 1, increments: [{ atMs: 0, by: 'A' }, { atMs: 0, by: 'B' }] }, { trace: true });
    const messageOf = (received: unknown): string => {
      try {
        expect(received).toHoldInvariants();
      } catch (e) {
        return (e as Error).message;
      }
      return '';
    };
    // A report that claims another seed (a scenario file's own, overridden at run time) still names the one used.
    expect(messageOf({ ...racy, seed: 99, world: { seed: 99 } })).toMatch(/violated at step \d+, t=\d+ms: .* \(seed 1\)\n\n1\. t=0ms/);
    // A bare outcome carries its seed; a world beside it carries the story.
    expect(messageOf(racy.outcome)).toMatch(/ \(seed 1\)$/);
    expect(messageOf({ outcome: racy.outcome, world: { seed: 1, events: racy.events } })).toMatch(/ \(seed 1\)\n\n1\. t=0ms world\.action/);
  }, PROPERTY_TIMEOUT_MS);

  it('should match toBreakInvariant on the invariant name, or a finding kind', async () => {
    const racy = await runCounter({ seed: 1, increments: [{ atMs: 0, by: 'A' }, { atMs: 0, by: 'B' }] }, { trace: false });
    expect(racy).toBreakInvariant('no lost update');
    expect(racy).not.toBreakInvariant('something else');
    const engine = new Engine({ seed: 1 });
    engine.spawn('n/a', 't', 0, () => {
      throw new Error('boom');
    });
    expect(await engine.run()).toBreakInvariant('finding:controller-threw');
  }, PROPERTY_TIMEOUT_MS);

  it('should check a whole property with toHoldProperty', async () => {
    await expect({ ...counterProperty, scenarios: counterProperty.scenarios.map((s) => ({ ...s, increments: s.increments.slice(0, 1) })) }).toHoldProperty({ seed: 5, numRuns: 30 });
    let message = '';
    try {
      await expect(counterProperty).toHoldProperty({ seed: 42, numRuns: 200 });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/^property "counter never loses an update" failed after \d+ runs and \d+ shrinks/);
    expect(message).toContain('reproduce with: seed 42 path');
  }, PROPERTY_TIMEOUT_MS);
});
