import { describe, expect, it } from 'vitest';
import { AssertionError } from 'node:assert';
import { assertBreaksInvariant, assertHoldsInvariants, assertHoldsProperty } from '../src/index.ts';
import { counterProperty, runCounter } from './fixtures/counter.ts';

/** Property searches run many simulations; the bound is generous because the machine may be shared (not a speed assertion). */
const PROPERTY_TIMEOUT_MS = 60_000;

function thrown(f: () => void): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  return undefined;
}

describe('assertions for any runner', () => {
  it('should pass assertHoldsInvariants for a run that ends ok and throw an AssertionError with the seed and story otherwise', async () => {
    assertHoldsInvariants(await runCounter({ seed: 1, increments: [{ atMs: 0, by: 'A' }] }, { trace: true }));
    const racy = await runCounter({ seed: 3, increments: [{ atMs: 0, by: 'A' }, { atMs: 0, by: 'B' }] }, { trace: true });
    const e = thrown(() => assertHoldsInvariants({ ...racy, seed: 3 }));
    expect(e).toBeInstanceOf(AssertionError);
    expect((e as Error).message).toContain('expected the run to hold its invariants, but: invariant "no lost update" violated');
    expect((e as Error).message).toContain('(seed 3)');
    expect((e as Error).message).toMatch(/\n1\. t=0ms world\.action action=increment by=[AB]/);
  }, PROPERTY_TIMEOUT_MS);

  it('should match assertBreaksInvariant on the invariant name and refuse other names and non-runs', async () => {
    const racy = await runCounter({ seed: 1, increments: [{ atMs: 0, by: 'A' }, { atMs: 0, by: 'B' }] }, { trace: false });
    assertBreaksInvariant(racy, 'no lost update');
    expect((thrown(() => assertBreaksInvariant(racy, 'something else')) as Error).message).toContain('expected the run to break "something else"');
    expect((thrown(() => assertHoldsInvariants(null as never)) as Error).message).toBe('expected a run outcome or a report with an outcome');
  }, PROPERTY_TIMEOUT_MS);

  it('should reject a failing property with the shrunk report', async () => {
    await expect(assertHoldsProperty(counterProperty, { seed: 42, numRuns: 200 })).rejects.toThrow(/^property "counter never loses an update" failed after \d+ runs/);
  }, PROPERTY_TIMEOUT_MS);
});
