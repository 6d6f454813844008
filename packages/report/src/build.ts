/**
 * `buildReport`: the whole report model from one run's trace events. Pure: the same events give
 * the same model, and nothing but the events is read.
 */
import { renderEvent, type TraceEvent } from '@netsim/sim';
import { agentActivity } from './agents.ts';
import { apiLane } from './api.ts';
import { chainSeries } from './chains.ts';
import { nodeOf, num, str } from './fields.ts';
import type { AgentLane, EventDetail, Marker, NodeLane, ReportModel, RulesetChangeRecord } from './model.ts';
import { probeLanes } from './probes.ts';
import { storyAt, storyLines } from './story.ts';

export interface BuildOptions {
  /** The page title (default: the scenario name a `replay.scenario` event gives, else "netsim run"). */
  readonly title?: string;
}

/** The report model of one run. `events` is one run's trace (see `splitRuns` for a file of several). */
export function buildReport(events: readonly TraceEvent[], opts: BuildOptions = {}): ReportModel {
  const start = events.find((e) => e.type === 'sim.start');
  const end = events.find((e) => e.type === 'sim.end');
  const scenario = events.find((e) => e.type === 'replay.scenario');
  let to = 0;
  for (const e of events) if (e.t > to) to = e.t;
  if (to === 0) to = 1;
  const from = 0;

  const activity = agentActivity(events, to);
  const series = chainSeries(events, to);
  const startNodes = start !== undefined && Array.isArray(start['nodes']) ? start['nodes'].filter((n): n is string => typeof n === 'string') : [];
  const nodeNames = [...startNodes];
  for (const a of activity) if (!nodeNames.includes(nodeOf(a.agent))) nodeNames.push(nodeOf(a.agent));
  for (const s of series) if (!nodeNames.includes(s.node)) nodeNames.push(s.node);
  const nodes: NodeLane[] = nodeNames.map((node) => {
    const agents: AgentLane[] = activity
      .filter((a) => nodeOf(a.agent) === node)
      .map((a) => ({ agent: a.agent, states: a.states, commands: a.commands, chains: series.filter((s) => s.node === node && s.agents.includes(a.agent)) }));
    return { node, agents };
  });

  const markers: Marker[] = [];
  const changes: RulesetChangeRecord[] = [];
  events.forEach((e, i) => {
    if (e.type === 'sim.violation') markers.push({ kind: 'violation', t: e.t, name: str(e, 'invariant'), message: str(e, 'message'), e: i });
    else if (e.type === 'sim.finding') markers.push({ kind: 'finding', t: e.t, name: str(e, 'kind'), message: str(e, 'message'), e: i });
    else if (e.type === 'ruleset.change') changes.push({ e: i, step: e.step, t: e.t, node: str(e, 'node'), agent: str(e, 'agent'), diff: str(e, 'diff') });
  });

  const api = apiLane(events, to);
  const probes = probeLanes(events, to);
  const story = storyLines(events);

  // Details of every event something on the page points at.
  const wanted = new Set<number>();
  for (const n of nodes) for (const a of n.agents) {
    for (const s of a.states) wanted.add(s.e);
    for (const c of a.commands) wanted.add(c.e);
    for (const ch of a.chains) for (const p of ch.points) wanted.add(p.e);
  }
  for (const x of [...api.objects, ...api.handlers, ...api.watches, ...api.faults]) wanted.add(x.e);
  for (const p of probes) for (const b of p.bands) wanted.add(b.e);
  for (const m of markers) wanted.add(m.e);
  for (const s of story) wanted.add(s.e);
  const details: EventDetail[] = [...wanted]
    .sort((a, b) => a - b)
    .map((i) => {
      const e = events[i] as TraceEvent;
      const hops = e.type === 'probe.result' ? str(e, 'hops') : '';
      return { e: i, step: e.step, t: e.t, text: renderEvent(e)?.text ?? e.type, story: storyAt(story, i), ...(hops !== '' ? { hops } : {}) };
    });

  const seed = start !== undefined ? (num(start, 'seed') ?? null) : null;
  const name = opts.title ?? (scenario !== undefined ? str(scenario, 'name') : 'netsim run');
  const controller = start !== undefined ? str(start, 'controller') : '';
  const alongside = start !== undefined && Array.isArray(start['alongside']) ? ` + ${start['alongside'].join(' + ')}` : '';
  const outcome = end !== undefined ? `${str(end, 'status')} after ${str(end, 'steps')} steps` : 'no end recorded';
  const violation = markers.find((m) => m.kind === 'violation');
  const summary = [
    seed !== null ? `seed ${seed}` : undefined,
    controller !== '' ? `controller ${controller}${alongside}` : undefined,
    `${nodeNames.length} node${nodeNames.length === 1 ? '' : 's'}`,
    outcome,
    violation !== undefined ? `violation of "${violation.name}" at t=${violation.t}ms` : undefined,
    `${events.length} events`,
  ]
    .filter((s) => s !== undefined)
    .join(' · ');
  return { title: name, summary, seed, from, to, events: events.length, nodes, api, probes, markers, story, changes, details };
}

/** A trace file of several runs (`netsim replay --trace` of many scenarios) split into one per run. */
export function splitRuns(events: readonly TraceEvent[]): { readonly name: string | undefined; readonly events: TraceEvent[] }[] {
  const out: { name: string | undefined; events: TraceEvent[] }[] = [];
  let current: { name: string | undefined; events: TraceEvent[] } | undefined;
  for (const e of events) {
    const prev = current?.events[current.events.length - 1];
    const startsRun = e.type === 'replay.scenario' || (e.type === 'sim.start' && prev?.type !== 'replay.scenario');
    if (startsRun || current === undefined) {
      current = { name: e.type === 'replay.scenario' ? str(e, 'name') : undefined, events: [] };
      out.push(current);
    }
    current.events.push(e);
  }
  return out;
}
