/**
 * `handlers.slow`: the agents' informers (on `node`, or everywhere) take `delayMs` per queued
 * change for `durationMs`: a controller whose event handlers are slow (a busy process, a slow
 * API call inside a handler) falls behind, and changes pile up and coalesce in its queue.
 */
import { onNode, str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const handlersSlow = defineAction({
  kind: 'handlers.slow',
  summary: 'informers take delayMs per queued change for durationMs (slow event handlers)',
  check(c) {
    c.node('node', { optional: true });
    c.ms('delayMs', { min: 1 });
    c.ms('durationMs', { min: 1 });
  },
  apply(a, w) {
    w.emit('fault.handlers.slow', { ...(a.node !== undefined ? { node: a.node } : {}), delayMs: a.delayMs, durationMs: a.durationMs });
    const affected = w.informers(a.node).map((inf) => ({ inf, before: inf.processDelay() }));
    for (const { inf } of affected) inf.setProcessDelay(a.delayMs);
    w.disruptedUntil(a.node ?? '*', w.engine.now() + a.durationMs + a.delayMs, 'handlers.slow');
    w.engine.after(a.durationMs, { kind: 'fault', label: 'slow handlers end' }, () => {
      for (const { inf, before } of affected) inf.setProcessDelay(before);
    });
  },
  story: {
    'fault.handlers.slow': (e) => storyLine(`fault: event handlers ${onNode(e['node'])}take ${str(e['delayMs'])}ms per change for ${str(e['durationMs'])}ms`),
  },
});
