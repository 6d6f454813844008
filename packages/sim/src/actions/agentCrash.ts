/**
 * `agent.crash`: the agent on `node` (the controller under test's, or with `agent` the one of that
 * controller name) dies at once (SIGKILL, OOM) and starts again `restartAfterMs` later.
 */
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const agentCrash = defineAction({
  kind: 'agent.crash',
  summary: 'an agent is killed and restarts restartAfterMs later',
  check(c) {
    c.node('node');
    c.str('agent', { optional: true });
    c.ms('restartAfterMs');
  },
  apply(a, w) {
    w.emit('fault.agent.crash', { node: a.node, ...(a.agent !== undefined ? { agent: `${a.node}/${a.agent}` } : {}), restartAfterMs: a.restartAfterMs });
    const agent = w.agent(a.node, a.agent);
    // Forgiven until the new process starts (and its settle time after): a bounded window.
    const win = w.disruptedUntil(a.node, w.engine.now() + a.restartAfterMs, `agent.crash ${agent.name}`);
    if (agent.state !== 'down') w.injectedDown(agent, win);
    agent.crash({ restart: true, restartDelayMs: a.restartAfterMs, reason: 'fault injected' });
  },
  story: {
    'fault.agent.crash': (e) => storyLine(`fault: ${e['agent'] !== undefined ? str(e['agent']) : `the agent on ${str(e['node'])}`} is killed (restarts ${str(e['restartAfterMs'])}ms later)`),
  },
});
