/** `iptables.restore-fail`: the next iptables-restore on `node` fails at input line `line` and changes nothing. */
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const iptablesRestoreFail = defineAction({
  kind: 'iptables.restore-fail',
  summary: 'the next iptables-restore fails at an input line and changes nothing',
  check(c) {
    c.node('node');
    c.int('line', 1, 1_000_000);
  },
  apply(a, w) {
    w.emit('fault.iptables.restore-fail', { node: a.node, line: a.line });
    w.faults(a.node).restoreFailAtLine = a.line;
    // The restore that meets the failure disturbs the node for the agents' retry delay (the world follows injected failures as they are met).
    w.disrupted(a.node, 'iptables.restore-fail');
  },
  story: {
    'fault.iptables.restore-fail': (e) => storyLine(`fault: the next iptables-restore on ${str(e['node'])} fails at line ${str(e['line'])}`),
  },
});
