/**
 * `watch.reset`: the watches break with 410 Gone (the resource version is too old), and the
 * informers relist after their backoff. With `count` > 1, a relist storm: the watches break again
 * every `everyMs`, `count` times in all.
 */
import { onNode, str, storyLine } from './story.ts';
import { defineAction, type ActionWorld } from './types.ts';

function reset(w: ActionWorld, node: string | undefined, fields: { readonly [k: string]: string | number }): void {
  w.emit('fault.watch.reset', { ...(node !== undefined ? { node } : {}), ...fields });
  for (const inf of w.informers(node)) inf.forceRelist();
}

export const watchReset = defineAction({
  kind: 'watch.reset',
  summary: 'watches break with 410 Gone and relist (count times, everyMs apart: a relist storm)',
  check(c) {
    c.node('node', { optional: true });
    c.int('count', 1, 1000, { optional: true });
    c.ms('everyMs', { optional: true, min: 1 });
    if (((c.get('count') as number | undefined) ?? 1) > 1 && c.get('everyMs') === undefined) c.fail('everyMs', 'missing (a storm of count > 1 resets needs the time between them)');
  },
  apply(a, w) {
    const count = a.count ?? 1;
    reset(w, a.node, count > 1 ? { reset: 1, of: count } : {});
    for (let i = 2; i <= count; i++) {
      w.engine.after((i - 1) * (a.everyMs ?? 1), { kind: 'fault', label: `watch reset ${i}/${count}` }, () => {
        w.disrupted(a.node ?? '*', 'watch.reset');
        reset(w, a.node, { reset: i, of: count });
      });
    }
  },
  story: {
    'fault.watch.reset': (e) => storyLine(`fault: watches ${onNode(e['node'])}break now (410 Gone)${e['of'] !== undefined ? ` [${str(e['reset'])} of ${str(e['of'])}]` : ''}`),
  },
});
