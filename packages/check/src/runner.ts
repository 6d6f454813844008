/**
 * The property runner: generate scenarios with fast-check, run each in a fresh deterministic
 * simulation, and when one breaks an invariant, shrink it to the shortest history that still
 * breaks it *the same way*, then replay that history with the trace on and tell its story.
 *
 * Replay is exact: fast-check's `seed` and `path` regenerate the counterexample, and the
 * counterexample (a plain object) reruns to the same bytes because the simulation is
 * deterministic. The runner checks that last claim on every failure (VOPR-style): the replay must
 * end with the same outcome as the run that found it, or the report says so.
 */
import fc from 'fast-check';
import { story, type RendererTable, type RunOutcome, type TraceEvent } from '@netsim/sim';

/** What one run of a scenario reports. */
export interface SimReport {
  readonly outcome: RunOutcome;
  /** The trace (empty when the run was asked not to trace). */
  readonly events: readonly TraceEvent[];
  /** What each counting invariant examined in the run, by name (see `World.coverage`). */
  readonly coverage?: { readonly [invariant: string]: number };
}

/**
 * A property over simulations: how to generate scenarios and how to run one.
 *
 * @example
 * ```ts
 * const prop: SimulationProperty<Scenario> = {
 *   name: 'npl keeps DNAT fresh',
 *   scenarios: scenarioArbitrary({ ... }),
 *   run: (scenario, { trace }) => runScenario(scenario, { controller: npl, trace }),
 * };
 * const result = await checkProperty(prop, { seed: 42, numRuns: 200 });
 * ```
 */
export interface SimulationProperty<S> {
  readonly name: string;
  readonly scenarios: fc.Arbitrary<S>;
  run(scenario: S, opts: { readonly trace: boolean }): Promise<SimReport>;
  /** Renderers for the story's custom event types. */
  readonly renderers?: RendererTable;
}

export interface CheckOptions {
  /** fast-check's seed (default 1: the default run is reproducible; campaigns pass their own). */
  readonly seed?: number;
  /** fast-check's replay path, printed with every failure. */
  readonly path?: string;
  /** Scenarios to try (default 100). */
  readonly numRuns?: number;
  /**
   * Count a shrunk candidate as failing only when it fails the same way as the first failure
   * (same status and same invariant, finding kind or bound). Default true: shrinking must not
   * wander off to a different bug.
   */
  readonly sameFailure?: boolean;
  /** Upper bound on shrink attempts after the first failure (default 10,000); past it, candidates count as passing and shrinking stops. */
  readonly maxShrinks?: number;
  /**
   * Wall-clock budget in milliseconds for the whole check (fast-check's `interruptAfterTimeLimit`):
   * past it the search stops, and a counterexample being shrunk is reported as shrunk so far.
   * Reading the wall clock makes the number of runs depend on the machine; the runs themselves
   * stay deterministic (the same seed and run count regenerate them).
   */
  readonly timeLimitMs?: number;
}

/** A failure signature: what "the same way" means when shrinking. */
export function failureSignature(o: RunOutcome): string {
  switch (o.status) {
    case 'ok':
      return 'ok';
    case 'violation':
      return `violation:${o.violation.invariant}`;
    case 'finding':
      return `finding:${o.finding.kind}`;
    case 'bound':
      return `bound:${o.bound}`;
  }
}

/** One-line summary of how a run ended. */
export function describeOutcome(o: RunOutcome): string {
  switch (o.status) {
    case 'ok':
      return `ok (${o.reason}) after ${o.steps} steps at t=${o.timeMs}ms`;
    case 'violation':
      return `invariant "${o.violation.invariant}" violated at step ${o.violation.step}, t=${o.violation.timeMs}ms: ${o.violation.message}`;
    case 'finding':
      return `finding (${o.finding.kind}) at step ${o.finding.step}, t=${o.finding.timeMs}ms: ${o.finding.message}`;
    case 'bound':
      return `bound "${o.bound}" hit at step ${o.steps}, t=${o.timeMs}ms: ${o.message}`;
  }
}

/** A shrunk counterexample, replayed with its trace. */
export interface CheckFailure<S> {
  readonly ok: false;
  readonly property: string;
  /** The shortest failing scenario found (a plain, JSON-able object for world scenarios). */
  readonly scenario: S;
  /** How the replay of `scenario` ended. */
  readonly outcome: RunOutcome;
  /** The replay's full trace. */
  readonly events: readonly TraceEvent[];
  /** The numbered story of the replay. */
  readonly story: readonly string[];
  /** fast-check's seed and path: `checkProperty(prop, { seed, path })` regenerates `scenario`. */
  readonly seed: number;
  readonly path: string;
  readonly numRuns: number;
  readonly numShrinks: number;
  /** False if the replay ended differently from the run that found the failure (nondeterminism). */
  readonly deterministic: boolean;
  /** A human report: outcome, reproduction line, story. */
  readonly report: string;
}

export interface CheckSuccess {
  readonly ok: true;
  readonly property: string;
  readonly seed: number;
  readonly numRuns: number;
  /** True when `timeLimitMs` stopped the search before `numRuns` runs. */
  readonly interrupted?: boolean;
}

export type CheckResult<S> = CheckSuccess | CheckFailure<S>;

/** Run `scenario` once with its trace and return the report and story. */
export async function replayScenario<S>(prop: SimulationProperty<S>, scenario: S): Promise<{ readonly report: SimReport; readonly story: readonly string[] }> {
  const report = await prop.run(scenario, { trace: true });
  return { report, story: story(report.events, prop.renderers === undefined ? {} : { renderers: prop.renderers }) };
}

/**
 * Check a property: `numRuns` generated scenarios, shrinking and a story on failure.
 * Never throws for a failing property; returns a {@link CheckFailure} instead.
 */
export async function checkProperty<S>(prop: SimulationProperty<S>, opts: CheckOptions = {}): Promise<CheckResult<S>> {
  const seed = opts.seed ?? 1;
  const sameFailure = opts.sameFailure ?? true;
  let signature: string | null = null;
  let found: RunOutcome | null = null;
  let shrinks = 0;
  const maxShrinks = opts.maxShrinks ?? 10_000;
  const property = fc.asyncProperty(prop.scenarios, async (scenario) => {
    if (signature !== null && shrinks++ >= maxShrinks) return true;
    const { outcome } = await prop.run(scenario, { trace: false });
    if (outcome.status === 'ok') return true;
    const sig = failureSignature(outcome);
    if (signature === null) signature = sig;
    if (sameFailure && sig !== signature) return true;
    found = outcome;
    return false;
  });
  const details = await fc.check(property, {
    seed,
    numRuns: opts.numRuns ?? 100,
    ...(opts.path !== undefined ? { path: opts.path } : {}),
    ...(opts.timeLimitMs !== undefined ? { interruptAfterTimeLimit: opts.timeLimitMs, markInterruptAsFailure: false } : {}),
  });
  // A time limit that ran out before the first run ends fast-check's check as failed with no
  // counterexample: no run failed, so it is a success with no runs.
  if (!details.failed || (details.interrupted && details.counterexample === null && details.numRuns === 0)) return { ok: true, property: prop.name, seed: details.seed, numRuns: details.numRuns, ...(details.interrupted ? { interrupted: true } : {}) };
  const counterexample = details.counterexample;
  if (counterexample === null) {
    // fast-check gave up without a counterexample (too many skipped runs or an interruption).
    const err: unknown = details.errorInstance;
    throw err instanceof Error ? err : new Error(`property "${prop.name}" failed without a counterexample`);
  }
  const [scenario] = counterexample;
  const { report, story: lines } = await replayScenario(prop, scenario);
  const last = found as RunOutcome | null;
  const deterministic = last !== null && failureSignature(last) === failureSignature(report.outcome) && last.steps === report.outcome.steps;
  const path = details.counterexamplePath ?? '';
  const text = [
    `property "${prop.name}" failed after ${details.numRuns} runs and ${details.numShrinks} shrinks`,
    describeOutcome(report.outcome),
    `reproduce with: seed ${details.seed} path "${path}" (checkProperty(prop, { seed: ${details.seed}, path: '${path}' }))`,
    ...(deterministic ? [] : ['WARNING: replaying the counterexample ended differently from the run that found it: something in the run is not deterministic']),
    '',
    ...lines,
  ].join('\n');
  return {
    ok: false,
    property: prop.name,
    scenario,
    outcome: report.outcome,
    events: report.events,
    story: lines,
    seed: details.seed,
    path,
    numRuns: details.numRuns,
    numShrinks: details.numShrinks,
    deterministic,
    report: text,
  };
}
