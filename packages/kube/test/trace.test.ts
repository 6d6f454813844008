import { describe, expect, it } from 'vitest';
import { Informer, Kubelet, TraceRecorder, wantsTrace, type KubeTraceEvent, type KubeTraceSink, type KubeTraceType } from '../src/index.ts';
import { podInput, recorder, setup } from './helpers.ts';
import type { Pod } from '../src/index.ts';

/** A node with a kubelet and an informer through creates, deletes, a watch gap and resyncs; returns what the sink and the handler saw. */
function scenario(sink: KubeTraceSink): { readonly events: readonly string[]; readonly handler: readonly string[] } {
  const events: string[] = [];
  const wrapped: KubeTraceSink = Object.assign((e: KubeTraceEvent) => {
    events.push(`${e.at} ${e.type} ${JSON.stringify(e.fields)}`);
    sink(e);
  }, sink.only !== undefined ? { only: sink.only } : {});
  const { api, sched } = setup(3, { trace: wrapped });
  api.create('Node', { metadata: { name: 'n1' }, spec: { podCIDR: '198.18.1.0/24' } });
  new Kubelet(api, { nodeName: 'n1', trace: wrapped }).start();
  const inf = new Informer(api, 'Pod', { queueMode: 'DeltaFIFO', name: 'pods', resyncPeriodMs: 700, trace: wrapped });
  const rec = recorder<Pod>();
  inf.addEventHandler(rec.handler, { name: 'h' });
  inf.run();
  for (let i = 0; i < 4; i++) api.create('Pod', podInput(`web-${i}`, { nodeName: 'n1', grace: 1 }));
  sched.advance(1200);
  inf.watchGap(800);
  api.delete('Pod', 'default', 'web-1');
  api.create('Pod', podInput('web-9', { nodeName: 'n1' }));
  sched.advance(5000);
  return { events, handler: rec.log };
}

describe('trace sinks that take only some types', () => {
  const TYPES: readonly KubeTraceType[] = ['kube.api.write', 'kube.watch.open', 'kube.watch.deliver', 'kube.watch.drop', 'kube.watch.gap', 'kube.reflector.list', 'kube.reflector.backoff', 'kube.informer.pop', 'kube.informer.resync', 'kube.handler', 'kube.kubelet', 'kube.ipam'];

  it('should get exactly the events of its types that a full sink gets, with the same behaviour', () => {
    const full = new TraceRecorder();
    const all = scenario(full.sink);
    // The scenario produces every type, so each filter below is tested against real events.
    expect(new Set(full.events.map((e) => e.type))).toEqual(new Set(TYPES));
    for (const only of [new Set<KubeTraceType>(['kube.reflector.list', 'kube.reflector.backoff']), new Set<KubeTraceType>(['kube.kubelet', 'kube.ipam', 'kube.handler']), new Set<KubeTraceType>()]) {
      const some = new TraceRecorder();
      const got = scenario(Object.assign(some.sink, { only }));
      expect(got.handler).toEqual(all.handler);
      expect(got.events).toEqual(all.events.filter((l) => only.has(l.split(' ')[1] as KubeTraceType)));
    }
  });

  it('should say whether a sink wants a type', () => {
    const sink: KubeTraceSink = () => undefined;
    expect(wantsTrace(undefined, 'kube.handler')).toBe(false);
    expect(wantsTrace(sink, 'kube.handler')).toBe(true);
    expect(wantsTrace(Object.assign(sink, { only: new Set<KubeTraceType>(['kube.ipam']) }), 'kube.handler')).toBe(false);
    expect(wantsTrace(sink, 'kube.ipam')).toBe(true);
  });
});
