/**
 * Replaying a scenario file: run it in the engine with its invariants and compare what happened
 * with what the file expects.
 */
import { runScenario, story, type ControllerRegistry, type RendererTable, type RunOutcome, type RunScenarioOptions, type TraceEvent } from '@netsim/sim';
import { formatDuration } from './duration.ts';
import { buildInvariant, type InvariantRegistry } from './invariants.ts';
import type { Expectation, ScenarioFile } from './model.ts';

export interface ReplayOptions {
  /** Controllers by the names scenario files use (`npl:faulty`, …). */
  readonly controllers: ControllerRegistry;
  /** Run with this seed instead of the file's. */
  readonly seed?: number;
  /** Record the trace (default true; the story needs it). */
  readonly trace?: boolean;
  /** World settings (iptables backend, kubelet timings, bounds). */
  readonly world?: RunScenarioOptions['world'];
  /** Renderers for custom trace events in the story. */
  readonly renderers?: RendererTable;
  /** Users' invariants by name, for the file's `kind: custom` entries (a `--controllers` module's `invariants` export). */
  readonly invariants?: InvariantRegistry;
}

export interface ReplayResult {
  readonly file: ScenarioFile;
  /** The seed the run used. */
  readonly seed: number;
  readonly outcome: RunOutcome;
  readonly events: readonly TraceEvent[];
  /** Whether the outcome is what the file expects. */
  readonly met: boolean;
  /** The expectation in words. */
  readonly expected: string;
  /** The outcome in words. */
  readonly observed: string;
  /** Why the expectation was not met (absent when it was). */
  readonly mismatch?: string;
  /** The numbered story of the run (story-level trace lines), empty without a trace. */
  readonly story: readonly string[];
}

function window(b: readonly [number, number] | undefined): string {
  if (b === undefined) return '';
  return b[0] === b[1] ? ` at ${b[0]}ms` : ` in ${formatDuration(b[0])}..${formatDuration(b[1])}`;
}

/** The expectation in words (`violation "no stale DNAT" in 6s..10s`). */
export function describeExpectation(e: Expectation): string {
  const n = (e.storyIncludes?.length ?? 0) + (e.storyExcludes?.length ?? 0);
  return `${describeOutcomeExpectation(e)}${n === 0 ? '' : ` + ${n} story line${n === 1 ? '' : 's'}`}`;
}

function describeOutcomeExpectation(e: Expectation): string {
  switch (e.outcome) {
    case 'ok':
      return 'invariants hold';
    case 'violation':
      return `violation "${e.invariant}"${window(e.betweenMs)}`;
    case 'finding':
      return `finding ${e.kind}${window(e.betweenMs)}`;
  }
}

/** The outcome in words (`violation "no stale DNAT" at 7001ms`). */
export function describeObserved(o: RunOutcome): string {
  switch (o.status) {
    case 'ok':
      return 'invariants hold';
    case 'violation':
      return `violation "${o.violation.invariant}" at ${o.violation.timeMs}ms`;
    case 'finding':
      return `finding ${o.finding.kind} at ${o.finding.timeMs}ms`;
    case 'bound':
      return `bound ${o.bound} hit at ${o.timeMs}ms`;
  }
}

/** Why `o` (with its story lines) does not meet `e`, or `undefined` when it does. */
export function checkExpectation(e: Expectation, o: RunOutcome, story: readonly string[] = []): string | undefined {
  const outcome = checkOutcome(e, o);
  if (outcome !== undefined) return outcome;
  const missing = (e.storyIncludes ?? []).filter((piece) => !story.some((l) => l.includes(piece)));
  if (missing.length > 0) return `the story has no line containing ${missing.map((m) => JSON.stringify(m)).join(', ')}`;
  for (const piece of e.storyExcludes ?? []) {
    const line = story.find((l) => l.includes(piece));
    if (line !== undefined) return `the story should not contain ${JSON.stringify(piece)}, but has: ${line}`;
  }
  return undefined;
}

function checkOutcome(e: Expectation, o: RunOutcome): string | undefined {
  const inWindow = (t: number, b: readonly [number, number] | undefined): string | undefined =>
    b === undefined || (t >= b[0] && t <= b[1]) ? undefined : `it happened at ${t}ms, outside ${formatDuration(b[0])}..${formatDuration(b[1])}`;
  const mentions = (m: string, piece: string | undefined): string | undefined => (piece === undefined || m.includes(piece) ? undefined : `the message does not contain "${piece}": ${m}`);
  switch (e.outcome) {
    case 'ok':
      return o.status === 'ok' ? undefined : `expected the invariants to hold, but saw ${describeObserved(o)}`;
    case 'violation':
      if (o.status !== 'violation') return `expected ${describeExpectation(e)}, but saw ${describeObserved(o)}`;
      if (o.violation.invariant !== e.invariant) return `expected "${e.invariant}" to be violated, but "${o.violation.invariant}" was first`;
      return inWindow(o.violation.timeMs, e.betweenMs) ?? mentions(o.violation.message, e.message);
    case 'finding':
      if (o.status !== 'finding' || o.finding.kind !== e.kind) return `expected ${describeExpectation(e)}, but saw ${describeObserved(o)}`;
      return inWindow(o.finding.timeMs, e.betweenMs) ?? mentions(o.finding.message, e.message);
  }
}

/**
 * Run a scenario file and judge the outcome against its expectation.
 *
 * @example
 * ```ts
 * const r = await replay(await loadScenarioFile('scenarios/npl-multi-port-cleanup.yaml'), { controllers: registry });
 * if (!r.met) console.log(r.mismatch, '\n' + r.story.join('\n'));
 * ```
 */
export async function replay(file: ScenarioFile, opts: ReplayOptions): Promise<ReplayResult> {
  const scenario = opts.seed === undefined ? file.scenario : { ...file.scenario, seed: opts.seed };
  const report = await runScenario(scenario, {
    controllers: opts.controllers,
    invariants: file.invariants.map((s) => buildInvariant(s, opts.invariants ?? {})),
    trace: opts.trace ?? true,
    ...(opts.world !== undefined ? { world: opts.world } : {}),
  });
  const lines = story(report.events, opts.renderers !== undefined ? { renderers: opts.renderers } : {});
  const mismatch = checkExpectation(file.expect, report.outcome, lines);
  return {
    file,
    seed: scenario.seed,
    outcome: report.outcome,
    events: report.events,
    met: mismatch === undefined,
    expected: describeExpectation(file.expect),
    observed: describeObserved(report.outcome),
    ...(mismatch !== undefined ? { mismatch } : {}),
    story: lines,
  };
}
