/**
 * The reference controllers by name, as scenarios and the CLI name them: `<controller>:<variant>`.
 */
import type { ControllerRegistry } from '@netsim/sim';
import { nodePortLocal } from './npl/index.ts';

/** Every registered controller name. */
export const CONTROLLER_NAMES = ['npl:faulty', 'npl:fixed'] as const;

export type ControllerName = (typeof CONTROLLER_NAMES)[number];

/**
 * The registry `runScenario` and `controllerProperty` take: each factory receives the scenario's
 * `controller.options` (validated; unknown options are refused with a `ControllerOptionsError`).
 *
 * @example
 * ```ts
 * const report = await runScenario(scenario, { controllers: CONTROLLERS, invariants });
 * ```
 */
export const CONTROLLERS: ControllerRegistry & { readonly [K in ControllerName]: ControllerRegistry[string] } = {
  'npl:faulty': (options) => nodePortLocal('faulty', options),
  'npl:fixed': (options) => nodePortLocal('fixed', options),
};

/** True when `name` is a registered controller. */
export function isControllerName(name: string): name is ControllerName {
  return (CONTROLLER_NAMES as readonly string[]).includes(name);
}
