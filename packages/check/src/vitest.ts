/**
 * Vitest matchers for simulations. Import once in a test file (or a setup file):
 *
 * ```ts
 * import '@netsim/check/vitest';
 *
 * it('should keep DNAT fresh under churn', async () => {
 *   await expect(nplProperty).toHoldProperty({ seed: 42, numRuns: 200 });
 * });
 * it('should catch the flush window', async () => {
 *   const report = await runScenario(scenario, { controllers });
 *   expect(report).toBreakInvariant('FLANNEL-POSTRTG never empty once programmed');
 * });
 * ```
 *
 * Failure messages carry the outcome, the reproduction line and the numbered story.
 */
import { expect } from 'vitest';
import { runDetails, unpackRun as unpack, type RunReceived } from './assert.ts';
import { checkProperty, describeOutcome, failureSignature, type CheckOptions, type SimulationProperty } from './runner.ts';

type Received = RunReceived;

interface NetsimMatchers<R> {
  /** The run ended `ok`: no invariant violated, no finding, no bound hit. */
  toHoldInvariants: () => R;
  /**
   * The run ended by violating this invariant (by name), or with `finding:<kind>` /
   * `bound:<name>` for findings and bounds.
   */
  toBreakInvariant: (name: string) => R;
  /** `checkProperty` finds no counterexample (async: `await expect(prop).toHoldProperty(opts)`). */
  toHoldProperty: (opts?: CheckOptions) => Promise<R>;
}

declare module 'vitest' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type, @typescript-eslint/no-unused-vars, @typescript-eslint/no-explicit-any -- vitest's augmentation pattern: the type parameter must match its declaration
  interface Matchers<T = any> extends NetsimMatchers<void> {}
}

expect.extend({
  toHoldInvariants(received: Received) {
    const r = unpack(received);
    if (r === undefined) return { pass: false, message: () => 'expected a run outcome or a report with an outcome' };
    return {
      pass: r.outcome.status === 'ok',
      message: () => (r.outcome.status === 'ok' ? `expected the run to break an invariant, but it ended ${describeOutcome(r.outcome)}` : `expected the run to hold its invariants, but: ${describeOutcome(r.outcome)}${runDetails(r)}`),
    };
  },
  toBreakInvariant(received: Received, name: string) {
    const r = unpack(received);
    if (r === undefined) return { pass: false, message: () => 'expected a run outcome or a report with an outcome' };
    const sig = failureSignature(r.outcome);
    const pass = sig === `violation:${name}` || sig === name;
    return {
      pass,
      message: () => (pass ? `expected the run not to break "${name}", but it did: ${describeOutcome(r.outcome)}` : `expected the run to break "${name}", but it ended ${describeOutcome(r.outcome)}${runDetails(r)}`),
    };
  },
  async toHoldProperty(received: SimulationProperty<unknown>, opts: CheckOptions = {}) {
    const result = await checkProperty(received, opts);
    return {
      pass: result.ok,
      message: () => (result.ok ? `expected property "${received.name}" to fail, but it held for ${result.numRuns} runs (seed ${result.seed})` : result.report),
    };
  },
});

export {};
