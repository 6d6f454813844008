/**
 * `pod.complete`: a running Pod's containers exit on their own (a Job's Pod, `restartPolicy:
 * Never`) with phase `Succeeded` or `Failed`. The kubelet tears the sandbox down and the CNI
 * releases the IP, but the Pod object lingers in the API with its old `status.podIP` until it is
 * deleted: with lowest-free IPAM the next Pod on the node gets that IP while the completed one still
 * shows it.
 */
import { namespaceOr as ns } from './objects.ts';
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const podComplete = defineAction({
  kind: 'pod.complete',
  summary: 'a running Pod completes (Succeeded or Failed) and lingers while its IP is recycled',
  check(c) {
    c.name('name');
    c.name('namespace', { optional: true });
    c.oneOf('phase', ['Succeeded', 'Failed']);
  },
  scope: () => '*',
  apply(a, w) {
    const key = `${ns(a.namespace)}/${a.name}`;
    w.emit('world.pod.complete', { pod: key, phase: a.phase });
    const pod = w.api.find('Pod', ns(a.namespace), a.name);
    const node = pod?.spec.nodeName;
    const done = pod !== undefined && node !== undefined && w.nodeNames.includes(node) && w.kubelet(node).complete(ns(a.namespace), a.name, a.phase);
    if (!done) w.emit('world.action-skipped', { action: 'pod.complete', reason: pod === undefined ? `pods "${a.name}" not found` : `pod ${key} is not running` });
  },
  story: {
    'world.pod.complete': (e) => storyLine(`pod ${str(e['pod'])} completes (${str(e['phase'])}); it stays in the API while its IP is released`),
  },
});
