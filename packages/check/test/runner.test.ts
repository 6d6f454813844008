import { describe, expect, it } from 'vitest';
import { Engine } from '@netsim/sim';
import { checkProperty, describeOutcome, failureSignature, type SimulationProperty } from '../src/index.ts';
import { counterProperty, runCounter, type CounterScenario } from './fixtures/counter.ts';


/** Property searches run many simulations; the bound is generous because the machine may be shared (not a speed assertion). */
const PROPERTY_TIMEOUT_MS = 60_000;
describe('checkProperty', () => {
  it('should find the race, shrink it to two increments and tell the story', async () => {
    const r = await checkProperty(counterProperty, { seed: 42, numRuns: 200 });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.scenario.increments).toHaveLength(2);
    expect(r.outcome.status).toBe('violation');
    expect(r.deterministic).toBe(true);
    expect(r.story.at(-1)).toMatch(/^\d+\. t=\d+ms VIOLATION of "no lost update": counter is 1 after 2 increments$/);
    expect(r.story[0]).toMatch(/^1\. t=\d+ms world\.action action=increment by=[AB]$/);
    expect(r.report).toContain(`reproduce with: seed 42 path "${r.path}"`);
  }, PROPERTY_TIMEOUT_MS);

  it('should regenerate the same counterexample from its seed and path', async () => {
    const first = await checkProperty(counterProperty, { seed: 42, numRuns: 200 });
    if (first.ok) throw new Error('expected a failure');
    const again = await checkProperty(counterProperty, { seed: first.seed, path: first.path });
    if (again.ok) throw new Error('expected the replay to fail');
    expect(again.scenario).toEqual(first.scenario);
    expect(again.events).toEqual(first.events);
  }, PROPERTY_TIMEOUT_MS);

  it('should pass when the system is correct', async () => {
    const serial: SimulationProperty<CounterScenario> = {
      ...counterProperty,
      name: 'one increment at a time never loses an update',
      scenarios: counterProperty.scenarios.map((s) => ({ ...s, increments: s.increments.map((inc, i) => ({ ...inc, atMs: i * 10 })) })),
    };
    const r = await checkProperty(serial, { seed: 3, numRuns: 50 });
    expect(r).toEqual({ ok: true, property: serial.name, seed: 3, numRuns: 50 });
  }, PROPERTY_TIMEOUT_MS);

  it('should not let shrinking wander to a different failure', async () => {
    // A second, unrelated bug that shrinking would reach (one lone increment) if it
    // accepted any failure: with sameFailure (the default) it stays on the race it first found.
    const signatures: string[] = [];
    const twoBugs: SimulationProperty<CounterScenario> = {
      ...counterProperty,
      run: async (s, o) => {
        const r =
          s.increments.length === 1
            ? await (async () => {
                const engine = new Engine({ seed: s.seed, trace: o.trace });
                engine.after(0, { kind: 'x', label: 'lonely' }, () => undefined);
                engine.addInvariant('no lonely increment', () => 'a lone increment');
                return { outcome: await engine.run(), events: engine.events };
              })()
            : await runCounter(s, o);
        if (r.outcome.status !== 'ok') signatures.push(failureSignature(r.outcome));
        return r;
      },
    };
    const kept = await checkProperty(twoBugs, { seed: 7, numRuns: 200 });
    if (kept.ok) throw new Error('expected a failure');
    expect(signatures[0]).toBe('violation:no lost update');
    expect(signatures).toContain('violation:no lonely increment');
    expect(failureSignature(kept.outcome)).toBe('violation:no lost update');
    expect(describeOutcome(kept.outcome)).toMatch(/^invariant "no lost update" violated at step \d+, t=\d+ms: counter is 1 after 2 increments$/);

    signatures.length = 0;
    const wandered = await checkProperty(twoBugs, { seed: 7, numRuns: 200, sameFailure: false });
    if (wandered.ok) throw new Error('expected a failure');
    expect(failureSignature(wandered.outcome)).toBe('violation:no lonely increment');
  }, PROPERTY_TIMEOUT_MS);
});
