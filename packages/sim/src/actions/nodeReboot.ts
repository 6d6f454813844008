/**
 * `node.reboot`: a node reboots. Its kernel state is lost at once (every rule back to the empty
 * tables of a fresh boot, the conntrack table flushed), its agents die with it and start again
 * `downMs` later, as their DaemonSet Pods come back. Pods keep their sandboxes and addresses (see
 * docs/fidelity.md).
 */
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const nodeReboot = defineAction({
  kind: 'node.reboot',
  summary: 'a node reboots: rules and conntrack lost, its agents restart downMs later',
  check(c) {
    c.node('node');
    c.ms('downMs');
  },
  apply(a, w) {
    w.emit('fault.node.reboot', { node: a.node, downMs: a.downMs });
    const until = w.engine.now() + a.downMs;
    for (const agent of w.agents(a.node)) {
      const win = w.disruptedUntil(a.node, until, `node.reboot ${agent.name}`);
      if (agent.state !== 'down') w.injectedDown(agent, win);
      agent.crash({ restart: true, restartDelayMs: a.downMs, reason: 'node rebooted' });
    }
    w.resetKernel(a.node);
    w.disruptedUntil(a.node, until, 'node.reboot');
  },
  story: {
    'fault.node.reboot': (e) => storyLine(`fault: ${str(e['node'])} reboots (rules and conntrack lost; its agents start again ${str(e['downMs'])}ms later)`),
  },
});
