/** `iptables.slow`: iptables commands on `node` take `extraMs` longer for `durationMs`. */
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const iptablesSlow = defineAction({
  kind: 'iptables.slow',
  summary: 'iptables commands take extraMs longer for durationMs',
  check(c) {
    c.node('node');
    c.ms('extraMs');
    c.ms('durationMs');
  },
  apply(a, w) {
    w.emit('fault.iptables.slow', { node: a.node, extraMs: a.extraMs, durationMs: a.durationMs });
    const f = w.faults(a.node);
    f.slowExtraMs = a.extraMs;
    f.slowUntilMs = w.engine.now() + a.durationMs;
    w.disruptedUntil(a.node, f.slowUntilMs, 'iptables.slow');
  },
  story: {
    'fault.iptables.slow': (e) => storyLine(`fault: iptables on ${str(e['node'])} takes ${str(e['extraMs'])}ms longer for ${str(e['durationMs'])}ms`),
  },
});
