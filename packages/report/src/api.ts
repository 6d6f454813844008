/**
 * The API lane: Pod and Service writes (with a Pod's IP change as old → new), the informer
 * handler calls controllers saw (tombstones marked), watch gaps and relists as spans, and the
 * faults a scenario injected.
 */
import { renderEvent, shortUid, type TraceEvent } from '@netsim/sim';
import { num, str } from './fields.ts';
import type { ApiLane, HandlerKind, ObjectEventKind, Span, Tick, WatchSpanKind } from './model.ts';

const OBJECT_EVENTS: { readonly [event: string]: ObjectEventKind } = { ADDED: 'create', MODIFIED: 'update', DELETED: 'delete' };
const WORDS: { readonly [k in ObjectEventKind]: string } = { create: 'created', update: 'updated', delete: 'deleted' };

/** The informer a watch feeds: `node-1/npl/pods#3` → `node-1/npl/pods`. */
function informerOf(watch: string): string {
  const i = watch.lastIndexOf('#');
  return i < 0 ? watch : watch.slice(0, i);
}

export function apiLane(events: readonly TraceEvent[], end: number): ApiLane {
  const objects: Tick<ObjectEventKind>[] = [];
  const handlers: Tick<HandlerKind>[] = [];
  const watches: Span<WatchSpanKind>[] = [];
  const faults: (Span<'fault'> | Tick<'fault'>)[] = [];
  /** The last IP each Pod name had, across incarnations: a recreated Pod's new IP shows as old → new. */
  const podIps = new Map<string, string>();
  /** Informers whose watch broke, waiting for their relist: since when, and which event. */
  const broken = new Map<string, { t: number; e: number }>();
  let lastPodWrite: { readonly index: number; readonly step: number; readonly key: string } | undefined;

  events.forEach((e, i) => {
    const text = (): string => renderEvent(e)?.text ?? e.type;
    switch (e.type) {
      case 'kube.api.write': {
        const kind = str(e, 'kind');
        const k = OBJECT_EVENTS[str(e, 'event')];
        if ((kind !== 'Pod' && kind !== 'Service') || k === undefined) return;
        const key = str(e, 'key');
        objects.push({ kind: k, t: e.t, label: `${kind.toLowerCase()} ${key} ${WORDS[k]} (uid ${shortUid(e['uid'])}, ${str(e, 'verb')})`, e: i });
        lastPodWrite = kind === 'Pod' ? { index: objects.length - 1, step: e.step, key } : undefined;
        return;
      }
      case 'kube.kubelet': {
        const ip = str(e, 'ip');
        const pod = str(e, 'pod');
        if (ip === '') return;
        const old = podIps.get(pod);
        podIps.set(pod, ip);
        // The kubelet's status write is the object update that carried the new IP.
        if (lastPodWrite !== undefined && lastPodWrite.step === e.step && lastPodWrite.key === pod) {
          const w = objects[lastPodWrite.index] as Tick<ObjectEventKind>;
          objects[lastPodWrite.index] = { ...w, label: `pod ${pod} updated: IP ${old ?? 'none'} → ${ip} (uid ${shortUid(e['uid'])}, ${str(e, 'transition')})` };
        }
        return;
      }
      case 'kube.handler': {
        const call = str(e, 'call');
        const kind: HandlerKind = call === 'onAdd' ? 'add' : call === 'onUpdate' ? 'update' : e['tombstone'] === true ? 'tombstone' : 'delete';
        const oldIp = str(e, 'oldIp');
        const ip = str(e, 'ip');
        const ipChange = kind === 'update' && oldIp !== '' && ip !== '' && oldIp !== ip ? `: IP ${oldIp} → ${ip}` : '';
        handlers.push({ kind, t: e.t, label: `${text()}${ipChange}`, e: i });
        return;
      }
      case 'kube.watch.gap': {
        const until = num(e, 'untilMs') ?? e.t;
        watches.push({ kind: 'gap', from: e.t, to: until, label: `watch ${str(e, 'watch')} loses events until t=${until}ms`, e: i });
        return;
      }
      case 'kube.watch.deliver':
        if (str(e, 'event') === 'ERROR') {
          const inf = informerOf(str(e, 'watch'));
          if (!broken.has(inf)) broken.set(inf, { t: e.t, e: i });
        }
        return;
      case 'kube.reflector.list': {
        if ((num(e, 'list') ?? 1) <= 1) return;
        const inf = str(e, 'informer');
        const from = broken.get(inf) ?? { t: e.t, e: i };
        broken.delete(inf);
        watches.push({ kind: 'relist', from: from.t, to: e.t, label: `${inf}: watch broken, relisted at t=${e.t}ms (${str(e, 'items')} items at rv ${str(e, 'rv')})`, e: from.e });
        return;
      }
      default:
        if (!e.type.startsWith('fault.')) return;
        {
          const d = num(e, 'durationMs') ?? num(e, 'restartAfterMs');
          if (d !== undefined && d > 0) faults.push({ kind: 'fault', from: e.t, to: e.t + d, label: text(), e: i });
          else faults.push({ kind: 'fault', t: e.t, label: text(), e: i });
        }
    }
  });
  // A watch still broken when the run ended never relisted.
  for (const [inf, b] of broken) watches.push({ kind: 'relist', from: b.t, to: end, label: `${inf}: watch broken, not relisted before the end`, e: b.e });
  return { objects, handlers, watches, faults };
}
