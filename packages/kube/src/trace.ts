/**
 * Structured trace events. Kube reports what it does (API writes, watch deliveries and drops,
 * relists, queue pops, handler calls) to an optional sink; the engine folds them into its trace,
 * and `formatTraceEvent` prints them as the timelines shown in docs/kube.md.
 */

export type KubeTraceType =
  | 'kube.api.write'
  | 'kube.watch.open'
  | 'kube.watch.deliver'
  | 'kube.watch.drop'
  | 'kube.watch.gap'
  | 'kube.reflector.list'
  | 'kube.reflector.backoff'
  | 'kube.informer.pop'
  | 'kube.informer.resync'
  | 'kube.handler'
  | 'kube.kubelet'
  | 'kube.ipam';

export type TraceValue = string | number | boolean;

/** One trace record: a namespaced type, the simulated time, and flat fields. */
export interface KubeTraceEvent {
  readonly type: KubeTraceType;
  readonly at: number;
  readonly fields: Readonly<Record<string, TraceValue>>;
}

/**
 * Where kube sends its trace events. A sink may list the types it wants in `only`: producers then
 * skip building the others (a simulation with its trace off still wants a few, such as relists).
 */
export interface KubeTraceSink {
  (event: KubeTraceEvent): void;
  readonly only?: ReadonlySet<KubeTraceType>;
}

/** Whether `sink` takes events of `type` (a producer asks before building one). */
export function wantsTrace(sink: KubeTraceSink | undefined, type: KubeTraceType): sink is KubeTraceSink {
  return sink !== undefined && (sink.only === undefined || sink.only.has(type));
}

/** One line per event: `   1200 ms  kube.handler  informer=pods handler=npl call=onUpdate …`. */
export function formatTraceEvent(e: KubeTraceEvent): string {
  const fields = Object.entries(e.fields)
    .map(([k, v]) => `${k}=${typeof v === 'string' && /[\s"]/.test(v) ? JSON.stringify(v) : String(v)}`)
    .join(' ');
  return `${String(e.at).padStart(7)} ms  ${e.type.padEnd(20)} ${fields}`;
}

/** A sink that keeps every event (for tests and docs). */
export class TraceRecorder {
  readonly events: KubeTraceEvent[] = [];
  readonly sink: KubeTraceSink = (e) => {
    this.events.push(e);
  };

  lines(filter?: (e: KubeTraceEvent) => boolean): string[] {
    return (filter === undefined ? this.events : this.events.filter(filter)).map(formatTraceEvent);
  }
}
