import { ApiServer, Informer, Kubelet, WorkQueue, isTombstone, manualRuntime, objectKey } from '../../src/index.ts';

export function quickstart(): string[] {
  const out: string[] = [];
  // One seeded runtime: a manual clock, a PRNG and a uid counter.
  const rt = manualRuntime(42);
  const api = new ApiServer({ runtime: rt });
  api.create('Node', { metadata: { name: 'node-a' }, spec: { podCIDR: '198.18.1.0/24' } });
  new Kubelet(api, { nodeName: 'node-a' }).start();

  // A controller: an informer feeding a workqueue, as client-go controllers are built.
  const queue = new WorkQueue<string>({ scheduler: rt.scheduler });
  const pods = new Informer(api, 'Pod', { queueMode: 'DeltaFIFO', name: 'pods', selector: { nodeName: 'node-a' } });
  pods.addEventHandler({
    onAdd: (p) => queue.add(objectKey(p)),
    onUpdate: (_old, p) => queue.add(objectKey(p)),
    onDelete: (d) => queue.add(isTombstone(d) ? d.key : objectKey(d)),
  });
  pods.run();

  api.create('Pod', { metadata: { name: 'web-0' }, spec: { nodeName: 'node-a', containers: [{ name: 'c' }] } });
  rt.scheduler.advance(2000);

  // A worker: take keys until none is ready.
  for (let key = queue.get(); key !== undefined; key = queue.get()) {
    const pod = pods.lister.getByKey(key);
    out.push(`${key}: ${pod?.status.phase} ${pod?.status.podIP}`);
    queue.forget(key);
    queue.done(key);
  }
  return out;
}
