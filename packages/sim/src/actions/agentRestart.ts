/** `agent.restart`: the agent gets SIGTERM (its shutdown code runs), exits, and starts again `downMs` after exiting. */
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const agentRestart = defineAction({
  kind: 'agent.restart',
  summary: 'an agent is stopped gracefully and starts again downMs after it exits',
  check(c) {
    c.node('node');
    c.str('agent', { optional: true });
    c.ms('graceMs', { optional: true });
    c.ms('downMs');
  },
  apply(a, w) {
    w.emit('fault.agent.restart', { node: a.node, ...(a.agent !== undefined ? { agent: `${a.node}/${a.agent}` } : {}), downMs: a.downMs, ...(a.graceMs !== undefined ? { graceMs: a.graceMs } : {}) });
    const agent = w.agent(a.node, a.agent);
    // Until the new process starts, at most the grace period and the time down.
    const win = w.disruptedUntil(a.node, w.engine.now() + (a.graceMs ?? agent.graceMs) + a.downMs, `agent.restart ${agent.name}`);
    if (agent.state === 'running') w.injectedDown(agent, win);
    agent.sigterm({ restart: true, restartDelayMs: a.downMs, ...(a.graceMs !== undefined ? { graceMs: a.graceMs } : {}) });
  },
  story: {
    'fault.agent.restart': (e) => storyLine(`fault: ${e['agent'] !== undefined ? str(e['agent']) : `the agent on ${str(e['node'])}`} is restarted gracefully (down ${str(e['downMs'])}ms after it exits)`),
  },
});
