/**
 * `pod.recreate`: a Pod is deleted at once and created again under the same name and spec `gapMs`
 * later (a StatefulSet restart): a new uid, and usually a new IP.
 */
import { alreadyExistsMessage } from '@netsim/kube';
import { namespaceOr as ns, podInput, portsText, specOfPod } from './objects.ts';
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const podRecreate = defineAction({
  kind: 'pod.recreate',
  summary: 'a Pod is deleted and created again under the same name gapMs later',
  check(c) {
    c.name('name');
    c.name('namespace', { optional: true });
    c.ms('gapMs');
  },
  scope: () => '*',
  apply(a, w) {
    const api = w.api;
    const cur = api.find('Pod', ns(a.namespace), a.name);
    w.emit('world.pod.recreate', { pod: `${ns(a.namespace)}/${a.name}`, gapMs: a.gapMs });
    if (cur === undefined) {
      w.emit('world.action-skipped', { action: 'pod.recreate', reason: `pods "${a.name}" not found` });
      return;
    }
    const spec = specOfPod(cur);
    w.tolerate('pod.recreate', () => api.delete('Pod', cur.metadata.namespace, cur.metadata.name, { gracePeriodSeconds: 0 }));
    w.engine.after(a.gapMs, { kind: 'action', label: `recreate ${spec.name}` }, () => {
      w.disrupted('*', 'pod.recreate');
      w.emit('world.pod.create', { pod: `${ns(spec.namespace)}/${spec.name}`, node: spec.node, ports: portsText(spec.ports) });
      // Another create may have taken the name during the gap (see pod.create).
      if (api.find('Pod', ns(spec.namespace), spec.name) !== undefined) w.emit('world.action-skipped', { action: 'pod.create', reason: alreadyExistsMessage('Pod', spec.name) });
      else w.tolerate('pod.create', () => api.create('Pod', podInput(spec)));
    });
  },
  story: {
    'world.pod.recreate': (e) => storyLine(`pod ${str(e['pod'])} deleted, to be recreated with the same name in ${str(e['gapMs'])}ms`),
  },
});
