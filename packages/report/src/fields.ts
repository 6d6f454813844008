/** Typed reads of a trace event's fields (a trace is JSON: any field may be missing or odd). */
import type { JsonValue, TraceEvent } from '@netsim/sim';

export function str(e: TraceEvent, k: string): string {
  const v: JsonValue | undefined = e[k];
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v);
}

export function num(e: TraceEvent, k: string): number | undefined {
  const v = e[k];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** The node of an agent name (`node-1/flanneld` → `node-1`). */
export function nodeOf(agent: string): string {
  const i = agent.indexOf('/');
  return i < 0 ? agent : agent.slice(0, i);
}
