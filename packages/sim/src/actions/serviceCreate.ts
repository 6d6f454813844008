/** `service.create`: a Service is created (the API server allocates its cluster IP and node ports). */
import { checkServiceSpec } from './check.ts';
import { namespaceOr as ns, serviceInput } from './objects.ts';
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const serviceCreate = defineAction({
  kind: 'service.create',
  summary: 'a Service is created',
  check(c) {
    c.object('service', checkServiceSpec);
  },
  scope: () => '*',
  apply(a, w) {
    w.emit('world.service.create', { service: `${ns(a.service.namespace)}/${a.service.name}` });
    w.tolerate('service.create', () => w.api.create('Service', serviceInput(a.service)));
  },
  story: {
    'world.service.create': (e) => storyLine(`service ${str(e['service'])} created`),
  },
});
