/** `watch.gap`: the watches of the agents' informers (on `node`, or everywhere) lose every event for `durationMs`, then relist. */
import { onNode, str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const watchGap = defineAction({
  kind: 'watch.gap',
  summary: 'watches lose every event for durationMs, then break (410) and relist',
  check(c) {
    c.node('node', { optional: true });
    c.ms('durationMs');
  },
  apply(a, w) {
    w.emit('fault.watch.gap', { ...(a.node !== undefined ? { node: a.node } : {}), durationMs: a.durationMs });
    for (const inf of w.informers(a.node)) inf.watchGap(a.durationMs);
    w.disruptedUntil(a.node ?? '*', w.engine.now() + a.durationMs, 'watch.gap');
  },
  story: {
    'fault.watch.gap': (e) => storyLine(`fault: watches ${onNode(e['node'])}lose every event for ${str(e['durationMs'])}ms, then break (410)`),
  },
});
