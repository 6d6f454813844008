/**
 * `pod.delete`: a Pod is deleted. With `graceSeconds` > 0 it terminates gracefully: the API
 * server sets its deletionTimestamp, its endpoints turn `terminating` (serving, not ready), and the
 * kubelet stops it and releases its IP within the grace period before the Pod is removed.
 */
import { notFoundMessage } from '@netsim/kube';
import { namespaceOr as ns } from './objects.ts';
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const podDelete = defineAction({
  kind: 'pod.delete',
  summary: 'a Pod is deleted (gracefully with graceSeconds > 0)',
  check(c) {
    c.name('name');
    c.name('namespace', { optional: true });
    c.int('graceSeconds', 0, 86_400, { optional: true });
  },
  scope: () => '*',
  apply(a, w) {
    w.emit('world.pod.delete', { pod: `${ns(a.namespace)}/${a.name}`, ...(a.graceSeconds !== undefined ? { graceSeconds: a.graceSeconds } : {}) });
    // Likewise a delete of a Pod that is gone: NotFound is the server's first check.
    if (w.api.find('Pod', ns(a.namespace), a.name) === undefined) w.emit('world.action-skipped', { action: 'pod.delete', reason: notFoundMessage('Pod', a.name) });
    else w.tolerate('pod.delete', () => w.api.delete('Pod', ns(a.namespace), a.name, a.graceSeconds !== undefined ? { gracePeriodSeconds: a.graceSeconds } : {}));
  },
  story: {
    'world.pod.delete': (e) => storyLine(`pod ${str(e['pod'])} deleted${e['graceSeconds'] !== undefined ? ` (grace ${str(e['graceSeconds'])}s)` : ''}`),
  },
});
