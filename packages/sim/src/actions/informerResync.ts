/**
 * `informer.resync`: the informers of the agents on `node` (or everywhere) resync now, as
 * client-go's periodic resync does: every cached object reaches every handler again as an update
 * whose old and new objects are the same. Nothing in the cluster changed, so it disturbs no node:
 * a controller at its fixpoint leaves its rules as they are, and one that changes them was not
 * at its fixpoint (the built-in "a resync changes nothing" oracle judges that).
 */
import { onNode, storyLine } from './story.ts';
import { NO_SCOPE, defineAction } from './types.ts';

export const informerResync = defineAction({
  kind: 'informer.resync',
  summary: 'the agents\' informers resync now (every cached object again, unchanged)',
  check(c) {
    c.node('node', { optional: true });
  },
  scope: () => NO_SCOPE,
  apply(a, w) {
    w.emit('world.informer.resync', { ...(a.node !== undefined ? { node: a.node } : {}) });
    for (const node of a.node !== undefined ? [a.node] : w.nodeNames) {
      w.resynced(node);
      for (const inf of w.informers(node)) inf.resync();
    }
  },
  story: {
    'world.informer.resync': (e) => storyLine(`informers ${onNode(e['node'])}resync (every object again, unchanged)`),
  },
});
