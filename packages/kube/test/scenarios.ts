/**
 * The gap cases drawn in docs/kube.md, as runnable scenarios. docs.test.ts checks that the
 * timelines pasted in the page are exactly what these produce.
 */
import { ApiServer, Informer, Kubelet, ManualScheduler, SeededRandom, TraceRecorder, type QueueMode } from '../src/index.ts';
import { podInput } from './helpers.ts';

export interface Scenario {
  readonly lines: string[];
}

function cluster(seed: number) {
  let n = 0;
  // Short uids keep the timelines readable.
  const rt = { scheduler: new ManualScheduler(), random: new SeededRandom(seed), ids: { next: () => `uid-${++n}` } };
  const trace = new TraceRecorder();
  const api = new ApiServer({ runtime: rt, trace: trace.sink });
  api.create('Node', { metadata: { name: 'node-a' }, spec: { podCIDR: '198.18.1.0/24' }, status: { addresses: [{ type: 'InternalIP', address: '192.0.2.10' }] } });
  const kubelet = new Kubelet(api, { nodeName: 'node-a', ipamPolicy: 'round-robin', trace: trace.sink });
  kubelet.start();
  return { rt, trace, api, kubelet };
}

/** Keeps the lines that tell the story (writes, drops, relists, pops, handler calls). */
function story(trace: TraceRecorder, fromMs: number): string[] {
  return trace.lines((e) => e.at >= fromMs && e.type !== 'kube.watch.open' && e.type !== 'kube.kubelet' && e.type !== 'kube.ipam');
}

/**
 * A StatefulSet-style restart inside a watch gap: web-0 is deleted and recreated with the same
 * name while the informer's watch is stalled.
 */
export function recreateInGap(mode: QueueMode): Scenario {
  const { rt, trace, api } = cluster(7);
  const inf = new Informer(api, 'Pod', { queueMode: mode, name: 'npl', watchTimeout: 'none', trace: trace.sink, selector: { nodeName: 'node-a' } });
  inf.addEventHandler({}, { name: 'npl-handler' });
  api.create('Pod', podInput('web-0', { nodeName: 'node-a', ports: [{ name: 'http', containerPort: 8080 }] }));
  inf.run();
  rt.scheduler.advance(5000);
  const from = rt.scheduler.now();
  inf.watchGap(4000);
  api.delete('Pod', 'default', 'web-0', { gracePeriodSeconds: 1 });
  rt.scheduler.advance(1200);
  api.create('Pod', podInput('web-0', { nodeName: 'node-a', ports: [{ name: 'http', containerPort: 8080 }] }));
  rt.scheduler.advance(20_000);
  return { lines: story(trace, from) };
}

/** web-0 is deleted inside a watch gap and not recreated. */
export function deleteInGap(mode: QueueMode): Scenario {
  const { rt, trace, api } = cluster(7);
  const inf = new Informer(api, 'Pod', { queueMode: mode, name: 'npl', watchTimeout: 'none', trace: trace.sink, listOrder: 'sorted' });
  inf.addEventHandler({}, { name: 'npl-handler' });
  api.create('Pod', podInput('web-0', { nodeName: 'node-a' }));
  api.create('Pod', podInput('web-1', { nodeName: 'node-a' }));
  inf.run();
  rt.scheduler.advance(5000);
  const from = rt.scheduler.now();
  inf.watchGap(3000);
  api.delete('Pod', 'default', 'web-0', { gracePeriodSeconds: 0 });
  rt.scheduler.advance(20_000);
  return { lines: story(trace, from) };
}

/** Without a gap, a fast delete and recreate is seen in full: delete, then add. */
export function recreateNoGap(mode: QueueMode): Scenario {
  const { rt, trace, api } = cluster(7);
  const inf = new Informer(api, 'Pod', { queueMode: mode, name: 'npl', watchTimeout: 'none', trace: trace.sink });
  inf.addEventHandler({}, { name: 'npl-handler' });
  api.create('Pod', podInput('web-0', { nodeName: 'node-a' }));
  inf.run();
  rt.scheduler.advance(5000);
  const from = rt.scheduler.now();
  api.delete('Pod', 'default', 'web-0', { gracePeriodSeconds: 0 });
  api.create('Pod', podInput('web-0', { nodeName: 'node-a' }));
  rt.scheduler.advance(3000);
  return { lines: story(trace, from).filter((l) => l.includes('kube.handler')) };
}

export const SCENARIOS: Readonly<Record<string, () => Scenario>> = {
  'recreate-in-gap:DeltaFIFO': () => recreateInGap('DeltaFIFO'),
  'recreate-in-gap:RealFIFO': () => recreateInGap('RealFIFO'),
  'delete-in-gap:DeltaFIFO': () => deleteInGap('DeltaFIFO'),
  'delete-in-gap:RealFIFO': () => deleteInGap('RealFIFO'),
  'delete-in-gap:AtomicFIFO': () => deleteInGap('AtomicFIFO'),
  'recreate-no-gap:DeltaFIFO': () => recreateNoGap('DeltaFIFO'),
};
