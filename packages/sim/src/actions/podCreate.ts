/** `pod.create`: a Pod is created, bound to a node (the kubelet starts it and assigns its IP). */
import { alreadyExistsMessage } from '@netsim/kube';
import { checkPodSpec } from './check.ts';
import { namespaceOr as ns, podInput, portsText } from './objects.ts';
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const podCreate = defineAction({
  kind: 'pod.create',
  summary: 'a Pod is created on a node',
  check(c) {
    c.object('pod', checkPodSpec);
  },
  scope: () => '*',
  apply(a, w) {
    w.emit('world.pod.create', { pod: `${ns(a.pod.namespace)}/${a.pod.name}`, node: a.pod.node, ports: portsText(a.pod.ports) });
    // Generated timelines often create a Pod that exists: say so without raising (and
    // capturing the stack of) the API server's error. Its name was valid when it was created,
    // so AlreadyExists is exactly what the server would answer.
    if (w.api.find('Pod', ns(a.pod.namespace), a.pod.name) !== undefined) w.emit('world.action-skipped', { action: 'pod.create', reason: alreadyExistsMessage('Pod', a.pod.name) });
    else w.tolerate('pod.create', () => w.api.create('Pod', podInput(a.pod)));
  },
  story: {
    'world.pod.create': (e) => storyLine(`pod ${str(e['pod'])} created on ${str(e['node'])} (ports ${str(e['ports'])})`),
  },
});
