/**
 * Assertions for any test runner (`node:test`, mocha, plain scripts): each throws an
 * `AssertionError` from `node:assert` whose message carries the outcome, the seed the run used
 * and the numbered story, the same text the vitest matchers of `@netsim/check/vitest` print.
 *
 * @example
 * ```ts
 * import { test } from 'node:test';
 * import { assertHoldsInvariants } from '@netsim/check';
 *
 * test('npl keeps DNAT fresh', async () => {
 *   assertHoldsInvariants(await runScenario(scenario, { controllers }));
 * });
 * ```
 */
import { AssertionError } from 'node:assert';
import { story, type RunOutcome, type TraceEvent } from '@netsim/sim';
import { checkProperty, describeOutcome, failureSignature, type CheckOptions, type SimulationProperty } from './runner.ts';

/**
 * What the assertions and matchers accept: an outcome, or a report carrying one, its trace (its
 * own `events`, or its world's) and the seed (the outcome's: the seed the run really used; else
 * its own `seed`, its world's, or the trace's `sim.start`).
 */
export type RunReceived =
  | RunOutcome
  | { readonly outcome: RunOutcome; readonly events?: readonly TraceEvent[]; readonly world?: { readonly seed: number; readonly events?: readonly TraceEvent[] }; readonly seed?: number };

/** The outcome, trace and seed of a received value, or undefined when it is neither shape. */
export function unpackRun(received: unknown): { outcome: RunOutcome; events: readonly TraceEvent[]; seed: number | undefined } | undefined {
  if (typeof received !== 'object' || received === null) return undefined;
  const r = received as { outcome?: RunOutcome; events?: readonly TraceEvent[]; status?: unknown; world?: { seed?: unknown; events?: unknown }; seed?: unknown };
  const seedOf = (outcome: RunOutcome, events: readonly TraceEvent[]): number | undefined => {
    if (typeof (outcome as { seed?: unknown }).seed === 'number') return outcome.seed;
    if (typeof r.seed === 'number') return r.seed;
    if (typeof r.world?.seed === 'number') return r.world.seed;
    const start = events.find((e) => e.type === 'sim.start') as { seed?: unknown } | undefined;
    return typeof start?.seed === 'number' ? start.seed : undefined;
  };
  if (r.outcome !== undefined && typeof r.outcome === 'object') {
    const worldEvents = r.world?.events;
    const events = r.events ?? (Array.isArray(worldEvents) ? (worldEvents as readonly TraceEvent[]) : []);
    return { outcome: r.outcome, events, seed: seedOf(r.outcome, events) };
  }
  if (typeof r.status === 'string') return { outcome: received as RunOutcome, events: [], seed: seedOf(received as RunOutcome, []) };
  return undefined;
}

/** `, seed N` and the numbered story, for failure messages. */
export function runDetails(run: { readonly events: readonly TraceEvent[]; readonly seed: number | undefined }): string {
  const lines = story(run.events);
  return `${run.seed === undefined ? '' : ` (seed ${run.seed})`}${lines.length === 0 ? '' : `\n\n${lines.join('\n')}`}`;
}

const NOT_A_RUN = 'expected a run outcome or a report with an outcome';

/** Throws unless the run ended `ok`: no invariant violated, no finding, no bound hit. */
export function assertHoldsInvariants(received: RunReceived): void {
  const r = unpackRun(received);
  if (r === undefined) throw new AssertionError({ message: NOT_A_RUN });
  if (r.outcome.status !== 'ok') throw new AssertionError({ message: `expected the run to hold its invariants, but: ${describeOutcome(r.outcome)}${runDetails(r)}` });
}

/** Throws unless the run broke this invariant (by name), or ended with `finding:<kind>` / `bound:<name>`. */
export function assertBreaksInvariant(received: RunReceived, name: string): void {
  const r = unpackRun(received);
  if (r === undefined) throw new AssertionError({ message: NOT_A_RUN });
  const sig = failureSignature(r.outcome);
  if (sig !== `violation:${name}` && sig !== name) throw new AssertionError({ message: `expected the run to break "${name}", but it ended ${describeOutcome(r.outcome)}${runDetails(r)}` });
}

/** Throws with the shrunk counterexample's report when `checkProperty` finds one. */
export async function assertHoldsProperty<S>(prop: SimulationProperty<S>, opts: CheckOptions = {}): Promise<void> {
  const result = await checkProperty(prop, opts);
  if (!result.ok) throw new AssertionError({ message: result.report });
}
