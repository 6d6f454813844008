/**
 * Agent lanes: each controller process's life (running, terminating, crashed, restarting,
 * stopped) as spans, and the iptables processes it ran as ticks.
 */
import { renderEvent, type TraceEvent } from '@netsim/sim';
import { num, str } from './fields.ts';
import type { AgentStateKind, CommandKind, Span, Tick } from './model.ts';

interface Open {
  kind: 'running' | 'terminating' | 'down';
  from: number;
  e: number;
  label: string;
  /** For `down`: the process exited on its own terms (`stopped`), so a later start is a restart, not a crash. */
  graceful: boolean;
}

export interface AgentActivity {
  readonly agent: string;
  readonly states: Span<AgentStateKind>[];
  readonly commands: Tick<CommandKind>[];
}

const COMMANDS: ReadonlySet<string> = new Set(['iptables.exec', 'iptables.restore', 'iptables.save', 'iptables.lock-wait']);

/** Every agent named by a lifecycle or iptables event, in order of first appearance. */
export function agentActivity(events: readonly TraceEvent[], end: number): AgentActivity[] {
  const byAgent = new Map<string, { activity: AgentActivity; open: Open | undefined }>();
  const of = (agent: string): { activity: AgentActivity; open: Open | undefined } => {
    let a = byAgent.get(agent);
    if (a === undefined) {
      a = { activity: { agent, states: [], commands: [] }, open: undefined };
      byAgent.set(agent, a);
    }
    return a;
  };
  const close = (a: { activity: AgentActivity; open: Open | undefined }, t: number, restarting: boolean): void => {
    const o = a.open;
    if (o === undefined) return;
    const kind: AgentStateKind = o.kind === 'down' ? (!o.graceful ? 'crashed' : restarting ? 'restarting' : 'stopped') : o.kind;
    const label = o.kind === 'down' ? `${kind} (${o.label})` : o.label;
    a.activity.states.push({ kind, from: o.from, to: t, label, e: o.e });
    a.open = undefined;
  };
  events.forEach((e, i) => {
    if (e.type.startsWith('agent.') && e.type !== 'agent.log') {
      const a = of(str(e, 'agent'));
      switch (e.type) {
        case 'agent.start':
          close(a, e.t, true);
          a.open = { kind: 'running', from: e.t, e: i, label: `running (process #${str(e, 'incarnation')})`, graceful: false };
          break;
        case 'agent.sigterm':
          close(a, e.t, false);
          a.open = { kind: 'terminating', from: e.t, e: i, label: `terminating: SIGTERM, grace ${str(e, 'graceMs')}ms`, graceful: false };
          break;
        case 'agent.exit': {
          close(a, e.t, false);
          const reason = str(e, 'reason');
          a.open = { kind: 'down', from: e.t, e: i, label: `exited: ${reason}`, graceful: reason === 'stopped' };
          break;
        }
        default:
          break; // agent.crash: its agent.exit (reason crashed) follows at once
      }
      return;
    }
    if (!COMMANDS.has(e.type)) return;
    const a = of(str(e, 'agent'));
    const next = events[i + 1];
    const kind: CommandKind =
      e.type === 'iptables.lock-wait'
        ? 'lock-wait'
        : num(e, 'exit') !== 0
          ? 'failed'
          : next !== undefined && next.type === 'ruleset.change' && next.step === e.step && next['agent'] === e['agent']
            ? 'write'
            : 'read';
    a.activity.commands.push({ kind, t: e.t, label: renderEvent(e)?.text ?? str(e, 'argv'), e: i });
  });
  for (const a of byAgent.values()) close(a, end, false);
  return [...byAgent.values()].map((a) => a.activity);
}
