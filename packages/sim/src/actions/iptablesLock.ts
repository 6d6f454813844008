/** `iptables.lock`: another program holds the xtables lock on `node` for `durationMs`. */
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const iptablesLock = defineAction({
  kind: 'iptables.lock',
  summary: 'another program holds the xtables lock for durationMs',
  check(c) {
    c.node('node');
    c.ms('durationMs');
  },
  apply(a, w) {
    w.emit('fault.iptables.lock', { node: a.node, durationMs: a.durationMs });
    const f = w.faults(a.node);
    f.lockHeldUntilMs = Math.max(f.lockHeldUntilMs, w.engine.now() + a.durationMs);
    w.disruptedUntil(a.node, f.lockHeldUntilMs, 'iptables.lock');
  },
  story: {
    'fault.iptables.lock': (e) => storyLine(`fault: another program holds the xtables lock on ${str(e['node'])} for ${str(e['durationMs'])}ms`),
  },
});
