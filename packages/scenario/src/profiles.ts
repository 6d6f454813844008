/**
 * Fuzz profiles: for a controller family, which histories to generate and which invariants to
 * check. `netsim fuzz --controller npl:faulty` looks up the profile of `npl` and writes any
 * counterexample as a scenario file with these invariants.
 */
import { POD_CHURN, RESTARTS, WATCH_FAULTS, controllerProperty, scenarioArbitrary, type ScenarioArbitraryOptions, type SimulationProperty } from '@netsim/check';
import type { ControllerRegistry, SimScenario } from '@netsim/sim';
import { buildInvariant } from './invariants.ts';
import type { InvariantSpec } from './model.ts';

/** What to generate and check for one controller family. */
export interface FuzzProfile {
  /** Options of `@netsim/check`'s `scenarioArbitrary`, without the controller (filled in by name). */
  readonly scenarios: Omit<ScenarioArbitraryOptions, 'controller'>;
  readonly invariants: readonly InvariantSpec[];
}

const NPL_ANNOTATION = 'nodeportlocal.antrea.io';
const NPL_CHAIN = 'ANTREA-NODE-PORT-LOCAL';

/** Profiles of the reference controllers, by the part of the name before `:`. */
export const FUZZ_PROFILES: { readonly [family: string]: FuzzProfile } = {
  npl: {
    scenarios: {
      cluster: {
        nodes: { min: 1, max: 2 },
        initialPods: 2,
        services: [{ name: 'web', selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080, protocol: 'TCP' }], annotations: { [`${NPL_ANNOTATION}/enabled`]: 'true' } }],
      },
      pods: { poolSize: 3, maxPorts: 3 },
      timeline: { kinds: [...POD_CHURN, ...WATCH_FAULTS, ...RESTARTS], maxActions: 8 },
      horizonMs: 20_000,
      settleMs: 3000,
    },
    invariants: [
      { kind: 'no-stale-dnat', chains: [NPL_CHAIN] },
      { kind: 'annotations-agree', annotation: NPL_ANNOTATION, chain: NPL_CHAIN },
    ],
  },
  flannel: {
    scenarios: {
      cluster: { nodes: { min: 1, max: 2 }, initialPods: 2 },
      pods: { poolSize: 3, maxPorts: 1 },
      timeline: { kinds: [...POD_CHURN, ...RESTARTS], maxActions: 6 },
      horizonMs: 30_000,
      settleMs: 3000,
    },
    invariants: [{ kind: 'chain-never-empty', chain: 'FLANNEL-POSTRTG', requiredTarget: 'MASQUERADE' }],
  },
};

/** The profile for a controller name: an exact entry first, then the family before `:`. */
export function fuzzProfileFor(controller: string, profiles: { readonly [key: string]: FuzzProfile } = FUZZ_PROFILES): FuzzProfile | undefined {
  return profiles[controller] ?? profiles[controller.split(':')[0] ?? controller];
}

/**
 * The property `netsim fuzz` checks: the profile's histories, run with the named controller,
 * keep the profile's invariants.
 *
 * @example
 * ```ts
 * const prop = fuzzProperty('npl:faulty', FUZZ_PROFILES.npl, registry);
 * const result = await checkProperty(prop, { seed: 1, numRuns: 200 });
 * ```
 */
export function fuzzProperty(controller: string, profile: FuzzProfile, controllers: ControllerRegistry): SimulationProperty<SimScenario> {
  return controllerProperty({
    name: `${controller} keeps ${profile.invariants.length === 1 ? 'its invariant' : 'its invariants'}`,
    scenarios: scenarioArbitrary({ ...profile.scenarios, controller: { name: controller } }),
    controllers,
    invariants: profile.invariants.map(buildInvariant),
  });
}
