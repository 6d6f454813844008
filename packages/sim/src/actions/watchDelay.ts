/** `watch.delay`: watch events reach the informers `delayMs` late for `durationMs`. */
import { onNode, str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const watchDelay = defineAction({
  kind: 'watch.delay',
  summary: 'watch events arrive delayMs late for durationMs',
  check(c) {
    c.node('node', { optional: true });
    c.ms('delayMs');
    c.ms('durationMs');
  },
  apply(a, w) {
    w.emit('fault.watch.delay', { ...(a.node !== undefined ? { node: a.node } : {}), delayMs: a.delayMs, durationMs: a.durationMs });
    const affected = w.informers(a.node);
    for (const inf of affected) inf.setWatchDelay(a.delayMs);
    w.disruptedUntil(a.node ?? '*', w.engine.now() + a.durationMs + a.delayMs, 'watch.delay');
    w.engine.after(a.durationMs, { kind: 'fault', label: 'watch delay ends' }, () => {
      for (const inf of affected) inf.setWatchDelay(0);
    });
  },
  story: {
    'fault.watch.delay': (e) => storyLine(`fault: watch events ${onNode(e['node'])}arrive ${str(e['delayMs'])}ms late for ${str(e['durationMs'])}ms`),
  },
});
