/**
 * `node.drain`: a node is drained, as `kubectl drain` does it: every Pod bound to it that is not
 * already terminating is evicted, each gracefully with its own grace period (or `graceSeconds`
 * for all, as `--grace-period`). A Pod whose preStop hook sleeps keeps serving, its endpoints
 * terminating, until its containers stop; the node's other Pods go at once. (The cordon that comes
 * first does not matter here: scenario Pods are bound to their node by name, not scheduled.)
 */
import { namespaceOr as ns } from './objects.ts';
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const nodeDrain = defineAction({
  kind: 'node.drain',
  summary: "a node is drained: each of its Pods is evicted with its grace period (or graceSeconds)",
  check(c) {
    c.node('node');
    c.int('graceSeconds', 0, 86_400, { optional: true });
  },
  // Pods come and go: every node's agents may serve them.
  scope: () => '*',
  apply(a, w) {
    const pods = w.api
      .list('Pod')
      .items.filter((p) => p.spec.nodeName === a.node && p.metadata.deletionTimestamp === undefined)
      .map((p) => ({ namespace: p.metadata.namespace, name: p.metadata.name }));
    w.emit('world.node.drain', { node: a.node, pods: pods.length, ...(a.graceSeconds !== undefined ? { graceSeconds: a.graceSeconds } : {}) });
    for (const p of pods) {
      w.emit('world.pod.delete', { pod: `${ns(p.namespace)}/${p.name}`, ...(a.graceSeconds !== undefined ? { graceSeconds: a.graceSeconds } : {}) });
      w.tolerate('node.drain', () => w.api.delete('Pod', p.namespace, p.name, a.graceSeconds !== undefined ? { gracePeriodSeconds: a.graceSeconds } : {}));
    }
  },
  story: {
    'world.node.drain': (e) => storyLine(`node ${str(e['node'])} drained: ${str(e['pods'])} Pods evicted${e['graceSeconds'] !== undefined ? ` (grace ${str(e['graceSeconds'])}s)` : ''}`),
  },
});
