/**
 * `iptables.fail`: iptables commands and restores on `node` fail with "Resource temporarily
 * unavailable" (exit 4): the next `count` of them (a transient failure), or with `durationMs` every
 * one for that long (a persistent failure the agent must retry through).
 */
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const iptablesFail = defineAction({
  kind: 'iptables.fail',
  summary: 'the next count iptables commands fail, or every one for durationMs',
  check(c) {
    c.node('node');
    c.int('count', 1, 1000, { optional: true });
    c.ms('durationMs', { optional: true, min: 1 });
    if (c.get('count') === undefined && c.get('durationMs') === undefined) c.fail('count', 'missing (give count, durationMs or both)');
  },
  apply(a, w) {
    w.emit('fault.iptables.fail', { node: a.node, ...(a.count !== undefined ? { count: a.count } : {}), ...(a.durationMs !== undefined ? { durationMs: a.durationMs } : {}) });
    const f = w.faults(a.node);
    if (a.count !== undefined) f.resourceFailures += a.count;
    const now = w.engine.now();
    if (a.durationMs !== undefined) f.failUntilMs = Math.max(f.failUntilMs, now + a.durationMs);
    // Every command that meets a failure disturbs the node for the agents' declared retry delay
    // from then (the world follows injected failures as they are met); the outage itself is a window.
    if (a.durationMs !== undefined) w.disruptedUntil(a.node, Math.max(now, f.failUntilMs), 'iptables.fail');
    else w.disrupted(a.node, 'iptables.fail');
  },
  story: {
    'fault.iptables.fail': (e) =>
      storyLine(
        `fault: ${e['count'] !== undefined ? `the next ${str(e['count'])} iptables commands` : 'every iptables command'} on ${str(e['node'])} ${e['durationMs'] !== undefined ? `${e['count'] !== undefined ? 'and every one ' : ''}fail${e['count'] !== undefined ? '' : 's'} for ${str(e['durationMs'])}ms` : 'fail'} (Resource temporarily unavailable)`,
      ),
  },
});
