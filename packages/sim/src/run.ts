/**
 * Running a {@link SimScenario}: build the world it describes, play its timeline, stop at its
 * horizon or at the first violation, and hand back the outcome and the trace.
 */
import type { Controller } from './agent.ts';
import type { ControllerContext } from './context.ts';
import type { RunOutcome } from './engine.ts';
import { SimError } from './errors.ts';
import type { InvariantSource } from './invariants.ts';
import type { JsonObject } from './json.ts';
import { isHostAction, validateScenario, type SimScenario } from './scenario.ts';
import type { TraceEvent } from './trace.ts';
import { hostCommandOf } from './actions/hostCommand.ts';
import { World, type WorldOptions } from './world.ts';

/** Controllers by the name scenarios use; each factory gets the scenario's controller options. */
export type ControllerRegistry = { readonly [name: string]: (options: JsonObject) => Controller<ControllerContext> };

export interface RunScenarioOptions {
  readonly controllers: ControllerRegistry;
  readonly invariants?: readonly InvariantSource[];
  /** Record the trace (default true). */
  readonly trace?: boolean;
  /** Everything else the world takes (iptables backend, kubelet timings, latencies, bounds). */
  readonly world?: Omit<WorldOptions, 'seed' | 'schedule' | 'cluster' | 'controller' | 'invariants' | 'probes' | 'settleMs' | 'trace'>;
}

export interface ScenarioReport {
  readonly outcome: RunOutcome;
  readonly events: readonly TraceEvent[];
  readonly world: World;
}

/**
 * Run a scenario to its horizon (or its first violation).
 *
 * @example
 * ```ts
 * const { outcome, events } = await runScenario(scenario, { controllers: { npl: () => nplController }, invariants: [noStaleDnat({ chains: ['ANTREA-NODE-PORT-LOCAL'] })] });
 * console.log(story(events).join('\n'));
 * ```
 */
export async function runScenario(scenario: SimScenario, opts: RunScenarioOptions): Promise<ScenarioReport> {
  validateScenario(scenario);
  // A controller by registry name; `where` starts the message when it is not registered.
  const instantiate = (ref: { readonly name: string; readonly options?: JsonObject }, where: string, path?: readonly (string | number)[]): Controller<ControllerContext> => {
    const f = opts.controllers[ref.name];
    if (f === undefined) {
      throw new SimError('unknown-name', `${where}controller "${ref.name}" is not registered (registered: ${Object.keys(opts.controllers).sort().join(', ') || 'none'})`, path !== undefined ? { path } : {});
    }
    return f(ref.options ?? {});
  };
  const main = instantiate(scenario.controller, 'scenario ');
  const perNode: { [node: string]: Controller<ControllerContext> } = {};
  const alongsideByNode: { [node: string]: Controller<ControllerContext>[] } = {};
  scenario.cluster.nodes.forEach((n, k) => {
    if (n.controller !== undefined) perNode[n.name] = instantiate(n.controller, `scenario node ${n.name}: `);
    if (n.alongside !== undefined) alongsideByNode[n.name] = n.alongside.map((c, i) => instantiate(c, `scenario cluster.nodes[${k}].alongside[${i}]: `, ['cluster', 'nodes', k, 'alongside', i, 'name']));
  });
  const alongside = (scenario.alongside ?? []).map((c, i) => instantiate(c, `scenario alongside[${i}]: `, ['alongside', i, 'name']));
  // An action naming an agent must name one that runs on its node.
  scenario.timeline.forEach((t, i) => {
    const a = t.action;
    if ((a.kind !== 'agent.crash' && a.kind !== 'agent.restart') || a.agent === undefined) return;
    const names = [(perNode[a.node] ?? main).name, ...(alongsideByNode[a.node] ?? alongside).map((c) => c.name)];
    if (!names.includes(a.agent)) throw new SimError('unknown-name', `scenario timeline[${i}].action.agent: no agent "${a.node}/${a.agent}" (agents on ${a.node}: ${names.map((n) => `${a.node}/${n}`).join(', ')})`, { path: ['timeline', i, 'action', 'agent'] });
  });
  const world = new World({
    ...(opts.world ?? {}),
    seed: scenario.seed,
    ...(scenario.schedule !== undefined ? { schedule: { path: scenario.schedule.path, whenPathExhausted: scenario.schedule.whenPathExhausted ?? 'prng' } } : {}),
    cluster: scenario.cluster,
    controller: main,
    ...(Object.keys(perNode).length > 0 ? { controllers: perNode } : {}),
    ...(alongside.length > 0 ? { alongside } : {}),
    ...(Object.keys(alongsideByNode).length > 0 ? { alongsideByNode } : {}),
    invariants: opts.invariants ?? [],
    probes: scenario.probes ?? [],
    settleMs: scenario.settleMs,
    trace: opts.trace ?? true,
    // Network actions change the data plane: it exists when the timeline has some.
    ...(scenario.timeline.some((t) => isHostAction(t.action)) ? { datapath: true } : {}),
  });
  if (scenario.swarm !== undefined) world.engine.emit('sim.swarm', { features: { ...scenario.swarm.features } });
  for (const t of scenario.timeline) world.at(t.atMs, t.action);
  const outcome = await world.run(scenario.horizonMs);
  world.engine.emit('sim.end', { status: outcome.status, steps: outcome.steps });
  return { outcome, events: world.events, world };
}

/**
 * Build the data plane a scenario describes, and play its network actions in time order on it,
 * without running anything: every node, host and link line the kernel refuses, and every timeline
 * command that would fail, is reported as a {@link SimError} whose `path` names the field
 * (`['cluster', 'nodes', 0, 'network', 2]`, `['timeline', 3, 'action']`). File formats call this
 * to point at the line of the file.
 *
 * @example
 * ```ts
 * try { checkScenarioNetwork(scenario); } catch (e) { if (isSimError(e)) console.log(e.path, e.message); }
 * ```
 */
export function checkScenarioNetwork(scenario: SimScenario): void {
  validateScenario(scenario);
  const world = new World({ seed: scenario.seed, cluster: scenario.cluster, probes: scenario.probes ?? [], trace: false, datapath: true });
  const dp = world.datapath;
  if (dp === undefined) return;
  const ordered = scenario.timeline.map((t, i) => ({ t, i })).sort((a, b) => a.t.atMs - b.t.atMs || a.i - b.i);
  for (const { t, i } of ordered) {
    const a = t.action;
    if (isHostAction(a)) dp.runCommand(a.host, hostCommandOf(a), ['timeline', i, 'action']);
  }
}
