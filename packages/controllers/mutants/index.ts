/**
 * The mutation suite: one-bug variants of the fixed reference controllers, each drawn from a bug
 * class in a public tracker. Not part of `@netsim/controllers`' exports; a `--controllers`
 * module for `netsim fuzz`:
 *
 * ```sh
 * pnpm netsim fuzz --controllers packages/controllers/mutants/index.ts --controller npl:cached-ip-reused
 * ```
 */
import type { ControllerRegistry } from '@netsim/sim';
import { FLANNEL_MUTANTS } from './flannel.ts';
import { KUBE_PROXY_MUTANTS } from './kubeproxy.ts';
import type { Mutant } from './mutant.ts';
import { NPL_MUTANTS } from './npl.ts';

export type { Mutant, MutantFamily } from './mutant.ts';

/** Every variant, NodePortLocal first, then flannel, then kube-proxy. */
export const MUTANTS: readonly Mutant[] = [...NPL_MUTANTS, ...FLANNEL_MUTANTS, ...KUBE_PROXY_MUTANTS];

/** The variants by name, as `netsim fuzz --controllers` loads them. */
export const controllers: ControllerRegistry = Object.fromEntries(MUTANTS.map((m) => [m.name, m.create]));
