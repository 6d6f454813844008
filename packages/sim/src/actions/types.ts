/**
 * What one scenario action kind is made of: how its fields are checked (at load time and when
 * `World.at` schedules it), what it does to the world, and how its trace events read in a story.
 * Each kind is one module of this directory, registered in `index.ts`; the fast-check generator
 * of each kind lives beside the other generators in `@netsim/check` (which may depend on
 * fast-check; this package does not).
 */
import type { ApiServer, Informer, Kind, Kubelet } from '@netsim/kube';
import type { Agent } from '../agent.ts';
import type { ControllerContext } from '../context.ts';
import type { ClusterDatapath } from '../datapath.ts';
import type { Engine } from '../engine.ts';
import type { IptablesFaultState } from '../iptables.ts';
import type { JsonObject } from '../json.ts';
import type { EventRenderer } from '../render.ts';
import type { Action } from '../scenario.ts';
import type { FieldChecker } from './check.ts';

/** The scope of an action that disturbs no node (it changes nothing a controller must follow). */
export const NO_SCOPE = '';

/** The world as an action's effect sees it: the parts actions change, and the disruption bookkeeping. */
export interface ActionWorld {
  readonly engine: Engine;
  readonly api: ApiServer;
  /** The data plane, when built. */
  readonly datapath: ClusterDatapath | undefined;
  /** Records a world or fault event in the trace. */
  emit(type: string, fields: JsonObject): void;
  /** Runs `fn`; a Kubernetes API error becomes a `world.action-skipped` event (the history goes on). */
  tolerate(what: string, fn: () => void): void;
  /** A disruption of `scope` (a node, or `*`) happens now. */
  disrupted(scope: string, cause: string): void;
  /** A disruption of `scope` from now until `untilMs`; returns the window's index. */
  disruptedUntil(scope: string, untilMs: number, cause: string): number;
  /** The iptables fault state of a node. */
  faults(node: string): IptablesFaultState;
  /** The informers of the agents on `node` (every node when undefined). */
  informers(node: string | undefined): Informer<Kind>[];
  /** The agent on `node`: the controller under test's, or the one of controller `name`. */
  agent(node: string, name?: string): Agent<ControllerContext>;
  /** Every agent on `node`. */
  agents(node: string): readonly Agent<ControllerContext>[];
  /** An injected fault ended this agent's process; its next start closes `window` (see `DisruptionTracker.endEarly`). */
  injectedDown(agent: Agent<ControllerContext>, window: number): void;
  /** The longest retry backoff the agents on `node` declare (0 when none does). */
  maxBackoffOn(node: string): number;
  /** The kubelet of a node. */
  kubelet(node: string): Kubelet;
  /** The agents on `node` were asked to resync now (the "a resync changes nothing" oracle reads when). */
  resynced(node: string): void;
  /** The node's kernel loses its state (rules, conntrack) as at boot. */
  resetKernel(node: string): void;
  /** Node names, in cluster order. */
  readonly nodeNames: readonly string[];
}

/** One action kind. */
export interface ActionModule<K extends Action['kind'] = Action['kind']> {
  readonly kind: K;
  /** One line for docs and errors: what the action does. */
  readonly summary: string;
  /**
   * Checks the action's fields (types, ranges, references to nodes and hosts). `c` fails with a
   * `SimError` naming the field; unknown fields are rejected after this returns.
   */
  check(c: FieldChecker): void;
  /** The nodes the action disturbs (a node name, `*` for every node, or {@link NO_SCOPE}). Default: its `node` field, else every node. */
  scope?(a: Extract<Action, { readonly kind: K }>, nodes: ReadonlySet<string>): string;
  /** Applies the action now, inside a step. */
  apply(a: Extract<Action, { readonly kind: K }>, w: ActionWorld): void;
  /** Story lines of the trace events this action emits, by event type. */
  readonly story: { readonly [eventType: string]: EventRenderer };
}

/** Defines an action module with its kind's type (a helper for inference). */
export function defineAction<K extends Action['kind']>(m: ActionModule<K>): ActionModule<K> {
  return m;
}
