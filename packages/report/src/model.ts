/**
 * The data a report is drawn from. Everything here is computed from a trace alone (see
 * `buildReport`), so a saved `--trace` is all a report needs; the HTML renderer only lays it out.
 * Every item keeps `e`, the index of the trace event it came from, so the page can open that
 * event's story line, ruleset diff and packet trace.
 */

/** A stretch of time on a lane. `from`/`to` are simulated milliseconds, `to` exclusive. */
export interface Span<K extends string = string> {
  readonly kind: K;
  readonly from: number;
  readonly to: number;
  /** Text shown on the span and read by screen readers. */
  readonly label: string;
  /** The event that started the span. */
  readonly e: number;
}

/** One instant on a lane. */
export interface Tick<K extends string = string> {
  readonly kind: K;
  readonly t: number;
  readonly label: string;
  readonly e: number;
}

/**
 * What an agent process is doing: `running`; `terminating` between SIGTERM and exit; `crashed`
 * while down after a crash (or a kill, or a failure); `restarting` while down after a graceful
 * exit with a later start; `stopped` once down for good.
 */
export type AgentStateKind = 'running' | 'terminating' | 'crashed' | 'restarting' | 'stopped';

/** An iptables process: `read` changed nothing, `write` changed rules, `failed` exited non-zero, `lock-wait` waited for the xtables lock. */
export type CommandKind = 'read' | 'write' | 'failed' | 'lock-wait';

/** A point of a step series: from `t` on, the chain holds `rules` rules (`null`: the chain is gone). */
export interface StepPoint {
  readonly t: number;
  readonly rules: number | null;
  readonly e: number;
}

/** The rule count of one chain on one node over time, from `ruleset.change` events. */
export interface ChainSeries {
  readonly node: string;
  readonly table: string;
  readonly chain: string;
  /** Agents whose commands changed the chain, in order of first change. */
  readonly agents: readonly string[];
  readonly points: readonly StepPoint[];
  /** The most rules it ever held. */
  readonly max: number;
  /** The fewest rules it held after first holding some (`null` when it never held any). */
  readonly minAfterFilled: number | null;
  /** Stretches during which the chain existed but held no rules after it had held some. */
  readonly empty: readonly Span<'empty'>[];
}

export interface AgentLane {
  /** `node-1/flanneld` */
  readonly agent: string;
  readonly states: readonly Span<AgentStateKind>[];
  readonly commands: readonly Tick<CommandKind>[];
  /** The chains this agent's commands changed. */
  readonly chains: readonly ChainSeries[];
}

export interface NodeLane {
  readonly node: string;
  readonly agents: readonly AgentLane[];
}

/** API objects: `create`, `update` (a Pod's IP change says old → new), `delete`. */
export type ObjectEventKind = 'create' | 'update' | 'delete';
/** Informer handler calls as the controller saw them; `tombstone` is an onDelete with DeletedFinalStateUnknown. */
export type HandlerKind = 'add' | 'update' | 'delete' | 'tombstone';
/** `gap`: a watch loses events; `relist`: from a watch breaking to its informer's relist. */
export type WatchSpanKind = 'gap' | 'relist';

export interface ApiLane {
  readonly objects: readonly Tick<ObjectEventKind>[];
  readonly handlers: readonly Tick<HandlerKind>[];
  readonly watches: readonly Span<WatchSpanKind>[];
  /** Injected faults: a span when the fault lasts, a tick when it is instant. */
  readonly faults: readonly (Span<'fault'> | Tick<'fault'>)[];
}

/** A probe target's result over time: `ok` or `failed`, the reason in the label. */
export interface ProbeLane {
  readonly probe: string;
  readonly bands: readonly Span<'ok' | 'failed'>[];
}

/** A violated invariant or a finding, marked across the whole time axis. */
export interface Marker {
  readonly kind: 'violation' | 'finding';
  readonly t: number;
  readonly name: string;
  readonly message: string;
  readonly e: number;
}

/** One numbered story line and the event it tells. */
export interface StoryLine {
  readonly n: number;
  readonly t: number;
  readonly text: string;
  readonly e: number;
}

/** What a `ruleset.change` event changed, for the diff at an instant. */
export interface RulesetChangeRecord {
  readonly e: number;
  readonly step: number;
  readonly t: number;
  readonly node: string;
  readonly agent: string;
  /** `netsim ruleset diff` text. */
  readonly diff: string;
}

/** What clicking an item shows: its event, as one line, with its story line and packet trace. */
export interface EventDetail {
  readonly e: number;
  readonly step: number;
  readonly t: number;
  readonly text: string;
  /** The story line that tells this event, or the last one before it. */
  readonly story: number | null;
  /** A failed probe's packets hop by hop. */
  readonly hops?: string;
}

export interface ReportModel {
  readonly title: string;
  /** One line under the title: seed, controller, outcome. */
  readonly summary: string;
  readonly seed: number | null;
  /** The time axis: `from` to `to` simulated milliseconds. */
  readonly from: number;
  readonly to: number;
  readonly events: number;
  readonly nodes: readonly NodeLane[];
  readonly api: ApiLane;
  readonly probes: readonly ProbeLane[];
  readonly markers: readonly Marker[];
  readonly story: readonly StoryLine[];
  readonly changes: readonly RulesetChangeRecord[];
  /** The details of every event an item or story line points at, by event index order. */
  readonly details: readonly EventDetail[];
}
