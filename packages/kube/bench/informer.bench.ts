/**
 * Events per second through API server → watch → informer queue → handler, on the
 * ManualScheduler (every delivery, pop and handler call is its own scheduled step).
 * Run with `pnpm bench kube`. Measures only; nothing here asserts a speed.
 */
import { produce } from 'immer';
import { ApiServer, Informer, WorkQueue, manualRuntime, type QueueMode } from '../src/index.ts';

function informerRun(mode: QueueMode, pods: number, updatesPerPod: number, handlers: number): { events: number; calls: number; steps: number; ms: number } {
  const rt = manualRuntime(1);
  const api = new ApiServer({ runtime: rt });
  const inf = new Informer(api, 'Pod', { queueMode: mode, watchTimeout: 'none' });
  let calls = 0;
  for (let h = 0; h < handlers; h++) inf.addEventHandler({ onAdd: () => void calls++, onUpdate: () => void calls++, onDelete: () => void calls++ });
  inf.run();
  rt.scheduler.runUntilIdle();
  const t0 = performance.now();
  const steps0 = rt.scheduler.stepsRun();
  let events = 0;
  for (let i = 0; i < pods; i++) {
    let p = api.create('Pod', { metadata: { name: `p-${i}` }, spec: { nodeName: 'n1', containers: [{ name: 'c' }] } });
    events++;
    for (let u = 0; u < updatesPerPod; u++) {
      p = api.update(produce(p, (d) => void (d.metadata.annotations['n'] = String(u))));
      events++;
    }
    api.delete('Pod', 'default', `p-${i}`, { gracePeriodSeconds: 0 });
    events++;
    // Let the informer keep up in batches, as a live one would.
    if (i % 50 === 49) rt.scheduler.advance(1);
  }
  rt.scheduler.runUntilIdle({ maxSteps: 100_000_000 });
  const ms = performance.now() - t0;
  const steps = rt.scheduler.stepsRun() - steps0;
  return { events, calls, steps, ms };
}

function workqueueRun(n: number): { ops: number; ms: number } {
  const rt = manualRuntime(1);
  const q = new WorkQueue<string>({ scheduler: rt.scheduler });
  const t0 = performance.now();
  let ops = 0;
  for (let i = 0; i < n; i++) {
    q.add(`k${i % 1000}`);
    ops++;
    if (i % 3 === 0) {
      const k = q.get();
      if (k !== undefined) {
        if (i % 7 === 0) q.addRateLimited(k);
        else q.forget(k);
        q.done(k);
        ops += 2;
      }
    }
  }
  rt.scheduler.runUntilIdle();
  return { ops, ms: performance.now() - t0 };
}

const fmt = (x: number): string => Math.round(x).toLocaleString('en-US');

for (const mode of ['DeltaFIFO', 'RealFIFO'] as const) {
  informerRun(mode, 2000, 3, 1); // warm-up
  for (const handlers of [1, 4]) {
    const r = informerRun(mode, 20_000, 3, handlers);
    console.log(
      `informer ${mode.padEnd(9)} handlers=${handlers}: ${fmt(r.events)} API events, ${fmt(r.calls)} handler calls, ${fmt(r.steps)} steps in ${r.ms.toFixed(0)} ms → ${fmt((r.events / r.ms) * 1000)} events/s, ${fmt((r.steps / r.ms) * 1000)} steps/s`,
    );
  }
}
workqueueRun(50_000);
const w = workqueueRun(500_000);
console.log(`workqueue: ${fmt(w.ops)} ops in ${w.ms.toFixed(0)} ms → ${fmt((w.ops / w.ms) * 1000)} ops/s`);
