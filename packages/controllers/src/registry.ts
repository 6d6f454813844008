/**
 * The reference controllers by name, as scenarios and the CLI name them: `<controller>:<variant>`.
 */
import type { ControllerRegistry } from '@netsim/sim';
import { flannel } from './flannel/index.ts';
import { flannelNft } from './flannelnft/index.ts';
import { kubeProxy } from './kubeproxy/index.ts';
import { kubeProxyNft } from './kubeproxynft/index.ts';
import { buildNodePortLocal, nodePortLocal } from './npl/index.ts';

/** Every registered controller name. */
export const CONTROLLER_NAMES = ['npl:faulty', 'npl:fixed', 'npl:faulty-cleanup-only', 'npl:faulty-ip-only', 'flannel:faulty', 'flannel:fixed', 'kube-proxy:faulty', 'kube-proxy:fixed', 'kube-proxy-nft:faulty', 'kube-proxy-nft:fixed', 'flannel-nft:faulty', 'flannel-nft:fixed'] as const;

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
  // The faulty release's two flaws one at a time, each on the fixed agent: the incident scenarios
  // show that either alone breaks the datapath.
  'npl:faulty-cleanup-only': (options) => buildNodePortLocal('fixed', options, 'cleanup-stops-early', 'npl:faulty-cleanup-only'),
  'npl:faulty-ip-only': (options) => buildNodePortLocal('fixed', options, 'cached-ip-reused', 'npl:faulty-ip-only'),
  'flannel:faulty': (options) => flannel('faulty', options),
  'flannel:fixed': (options) => flannel('fixed', options),
  'kube-proxy:faulty': (options) => kubeProxy('faulty', options),
  'kube-proxy:fixed': (options) => kubeProxy('fixed', options),
  'kube-proxy-nft:faulty': (options) => kubeProxyNft('faulty', options),
  'kube-proxy-nft:fixed': (options) => kubeProxyNft('fixed', options),
  'flannel-nft:faulty': (options) => flannelNft('faulty', options),
  'flannel-nft:fixed': (options) => flannelNft('fixed', options),
};

/** True when `name` is a registered controller. */
export function isControllerName(name: string): name is ControllerName {
  return (CONTROLLER_NAMES as readonly string[]).includes(name);
}
