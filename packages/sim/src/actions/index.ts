/**
 * The registry of scenario action kinds: one module per kind (its checks, effect and story
 * lines). `World` applies actions through it, `validateScenario` and `World.at` check them
 * through it, and the story renderer reads their events through it.
 */
import type { RendererTable } from '../render.ts';
import type { Action, ActionKind } from '../scenario.ts';
import { FieldChecker, failAt, type CheckPlace } from './check.ts';
import { agentCrash } from './agentCrash.ts';
import { agentRestart } from './agentRestart.ts';
import { handlersSlow } from './handlersSlow.ts';
import { addrAdd, addrDel, hostRun, linkSet, routeAdd, routeDel, sysctlSet } from './hostCommand.ts';
import { informerResync } from './informerResync.ts';
import { iptablesFail } from './iptablesFail.ts';
import { iptablesLock } from './iptablesLock.ts';
import { iptablesRestoreFail } from './iptablesRestoreFail.ts';
import { iptablesSlow } from './iptablesSlow.ts';
import { nodeDrain } from './nodeDrain.ts';
import { nodeReboot } from './nodeReboot.ts';
import { podComplete } from './podComplete.ts';
import { podCreate } from './podCreate.ts';
import { podDelete } from './podDelete.ts';
import { podRecreate } from './podRecreate.ts';
import { serviceCreate } from './serviceCreate.ts';
import { serviceDelete } from './serviceDelete.ts';
import { serviceUpdate } from './serviceUpdate.ts';
import type { ActionModule, ActionWorld } from './types.ts';
import { watchDelay } from './watchDelay.ts';
import { watchGap } from './watchGap.ts';
import { watchReset } from './watchReset.ts';
import { workloadScale } from './workloadScale.ts';

export { NO_SCOPE, type ActionModule, type ActionWorld } from './types.ts';
export { FieldChecker, type CheckPlace } from './check.ts';

/** Every action kind's module, by kind. */
export const ACTIONS: { readonly [K in ActionKind]: ActionModule<K> } = {
  'pod.create': podCreate,
  'pod.delete': podDelete,
  'pod.recreate': podRecreate,
  'pod.complete': podComplete,
  'workload.scale': workloadScale,
  'service.create': serviceCreate,
  'service.update': serviceUpdate,
  'service.delete': serviceDelete,
  'agent.crash': agentCrash,
  'agent.restart': agentRestart,
  'node.reboot': nodeReboot,
  'node.drain': nodeDrain,
  'watch.gap': watchGap,
  'watch.reset': watchReset,
  'watch.delay': watchDelay,
  'handlers.slow': handlersSlow,
  'informer.resync': informerResync,
  'iptables.lock': iptablesLock,
  'iptables.fail': iptablesFail,
  'iptables.restore-fail': iptablesRestoreFail,
  'iptables.slow': iptablesSlow,
  'sysctl.set': sysctlSet,
  'link.set': linkSet,
  'addr.add': addrAdd,
  'addr.del': addrDel,
  'route.add': routeAdd,
  'route.del': routeDel,
  'host.run': hostRun,
};

/** Every action kind, in registry order. */
export const ACTION_KINDS: readonly ActionKind[] = Object.keys(ACTIONS) as ActionKind[];

/** The module of a kind, or undefined for an unknown one. */
export function actionModule(kind: string): ActionModule | undefined {
  return Object.prototype.hasOwnProperty.call(ACTIONS, kind) ? (ACTIONS[kind as ActionKind] as unknown as ActionModule) : undefined;
}

/**
 * Checks an action given as data, at `place`: an object with a known `kind` and that kind's
 * fields, of the right types and ranges, naming known nodes and hosts, and no other field.
 * Throws a `SimError` (`invalid-argument`) that names the field.
 */
export function checkAction(a: unknown, place: CheckPlace): asserts a is Action {
  if (typeof a !== 'object' || a === null || Array.isArray(a)) failAt(place.prefix, place.path, `must be an action (a mapping with a "kind"), got ${JSON.stringify(a) ?? String(a)}`);
  const kind: unknown = (a as { readonly kind?: unknown }).kind;
  if (kind === undefined) failAt(place.prefix, `${place.path}.kind`, `missing (expected one of: ${ACTION_KINDS.join(', ')})`);
  const m = typeof kind === 'string' ? actionModule(kind) : undefined;
  if (m === undefined) failAt(place.prefix, `${place.path}.kind`, `unknown action kind ${JSON.stringify(kind)} (expected one of: ${ACTION_KINDS.join(', ')})`);
  const c = new FieldChecker(a as { readonly [k: string]: unknown }, place);
  c.get('kind');
  m.check(c);
  c.done();
}

/** The nodes an action disturbs: its module's answer, else its `node` (or `host` when that is a node), else every node. */
export function actionScope(a: Action, nodes: ReadonlySet<string>): string {
  const m = ACTIONS[a.kind] as unknown as ActionModule;
  if (m.scope !== undefined) return m.scope(a, nodes);
  if ('host' in a) return nodes.has(a.host) ? a.host : '*';
  return 'node' in a && typeof a.node === 'string' ? a.node : '*';
}

/** Applies an action through its module. */
export function applyAction(a: Action, w: ActionWorld): void {
  (ACTIONS[a.kind] as unknown as ActionModule).apply(a, w);
}

/** The story renderers of every action's events. */
export const ACTION_STORY: RendererTable = Object.assign({}, ...(Object.values(ACTIONS) as unknown as readonly ActionModule[]).map((m) => m.story)) as RendererTable;
