/** `service.delete`: a Service is deleted (its EndpointSlices go with it). */
import { namespaceOr as ns } from './objects.ts';
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const serviceDelete = defineAction({
  kind: 'service.delete',
  summary: 'a Service is deleted',
  check(c) {
    c.name('name');
    c.name('namespace', { optional: true });
  },
  scope: () => '*',
  apply(a, w) {
    w.emit('world.service.delete', { service: `${ns(a.namespace)}/${a.name}` });
    w.tolerate('service.delete', () => w.api.delete('Service', ns(a.namespace), a.name));
  },
  story: {
    'world.service.delete': (e) => storyLine(`service ${str(e['service'])} deleted`),
  },
});
