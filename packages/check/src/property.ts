/**
 * Properties over controllers: "for every generated scenario, running this controller keeps
 * these invariants", and the export of a counterexample as plain data.
 */
import type fc from 'fast-check';
import { netfilterBackend, runScenario, type ControllerRegistry, type InvariantSource, type JsonObject, type RendererTable, type RunScenarioOptions, type SimScenario } from '@netsim/sim';
import { describeOutcome, failureSignature, type CheckFailure, type SimulationProperty } from './runner.ts';

export interface ControllerPropertyOptions {
  readonly name: string;
  readonly scenarios: fc.Arbitrary<SimScenario>;
  readonly controllers: ControllerRegistry;
  readonly invariants: readonly InvariantSource[];
  /** World settings shared by every run (iptables backend, kubelet timings, bounds). */
  readonly world?: RunScenarioOptions['world'];
  readonly renderers?: RendererTable;
}

/**
 * A property: every scenario the arbitrary generates runs without violating the invariants.
 *
 * @example
 * ```ts
 * const prop = controllerProperty({
 *   name: 'npl: no stale DNAT under churn',
 *   scenarios: scenarioArbitrary({ controller: { name: 'npl' }, cluster: { services: [nplService] } }),
 *   controllers: { npl: () => npl },
 *   invariants: [noStaleDnat({ chains: ['ANTREA-NODE-PORT-LOCAL'] })],
 *   world: { iptablesBackend },
 * });
 * const result = await checkProperty(prop, { seed: 1, numRuns: 100 });
 * ```
 */
export function controllerProperty(opts: ControllerPropertyOptions): SimulationProperty<SimScenario> {
  // One backend for every run of the property: its memo of iptables results carries over.
  const world = { ...(opts.world ?? {}), iptablesBackend: opts.world?.iptablesBackend ?? netfilterBackend() };
  return {
    name: opts.name,
    scenarios: opts.scenarios,
    ...(opts.renderers !== undefined ? { renderers: opts.renderers } : {}),
    run: async (scenario, { trace }) => {
      const r = await runScenario(scenario, {
        controllers: opts.controllers,
        invariants: opts.invariants,
        trace,
        world,
      });
      return { outcome: r.outcome, events: r.events, coverage: r.world.coverage() };
    },
  };
}

/** The version tag of an exported counterexample. */
export const COUNTEREXAMPLE_FORMAT = 'netsim.counterexample/v1';

/**
 * A counterexample as plain JSON-able data: the scenario that fails, how it fails, and how to
 * regenerate it. `@netsim/scenario` serialises this to its YAML scenario format; replaying
 * `scenario` with `runScenario` fails the same way (same signature, same step).
 */
export interface Counterexample {
  readonly format: typeof COUNTEREXAMPLE_FORMAT;
  readonly property: string;
  /** fast-check's seed and path that regenerate `scenario` from the property. */
  readonly seed: number;
  readonly path: string;
  readonly scenario: SimScenario;
  readonly expected: {
    readonly signature: string;
    readonly status: string;
    readonly message: string;
    readonly step: number;
    readonly timeMs: number;
  };
  /** The story of the failing run, for humans. */
  readonly story: readonly string[];
}

/** Export a failure found by `checkProperty` on a controller property. */
export function exportCounterexample(failure: CheckFailure<SimScenario>): Counterexample {
  const o = failure.outcome;
  return {
    format: COUNTEREXAMPLE_FORMAT,
    property: failure.property,
    seed: failure.seed,
    path: failure.path,
    scenario: failure.scenario,
    expected: { signature: failureSignature(o), status: o.status, message: describeOutcome(o), step: o.steps, timeMs: o.timeMs },
    story: [...failure.story],
  };
}

/** A counterexample as JSON (the data `exportCounterexample` returns), for saving next to a test. */
export function counterexampleJson(c: Counterexample): JsonObject {
  return JSON.parse(JSON.stringify(c)) as JsonObject;
}
