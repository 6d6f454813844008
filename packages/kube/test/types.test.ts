import { describe, expect, expectTypeOf, it } from 'vitest';
import { ApiServer, Informer, manualRuntime, type DeleteArg, type DeletedFinalStateUnknown, type EndpointSlice, type Node, type Pod, type Service } from '../src/index.ts';

describe('types', () => {
  it('should type objects by kind through get, list, watch and informers', () => {
    const api = new ApiServer({ runtime: manualRuntime() });
    const n = api.create('Node', { metadata: { name: 'n' } });
    expectTypeOf(n).toEqualTypeOf<Node>();
    expectTypeOf(api.list('Service').items).toEqualTypeOf<readonly Service[]>();
    expectTypeOf(api.find('EndpointSlice', 'default', 'x')).toEqualTypeOf<EndpointSlice | undefined>();
    const inf = new Informer(api, 'Pod', { queueMode: 'DeltaFIFO' });
    inf.addEventHandler({
      onDelete: (d) => {
        expectTypeOf(d).toEqualTypeOf<DeleteArg<Pod>>();
        expectTypeOf(d).toEqualTypeOf<Pod | DeletedFinalStateUnknown<Pod>>();
      },
    });
    expectTypeOf(inf.lister.get('default', 'a')).toEqualTypeOf<Pod | undefined>();
    // @ts-expect-error - a Pod input needs containers
    expect(() => api.create('Pod', { metadata: { name: 'p' }, spec: {} })).toThrow(/spec.containers: Required value/);
  });

  it('should make objects read-only at the type level too', () => {
    const api = new ApiServer({ runtime: manualRuntime() });
    const p = api.create('Pod', { metadata: { name: 'p' }, spec: { containers: [{ name: 'c' }] } });
    // @ts-expect-error - objects from the API server are readonly
    expect(() => (p.metadata.name = 'q')).toThrow(TypeError);
  });

  it('should refuse an unknown queue mode and a second run with clear errors', () => {
    const api = new ApiServer({ runtime: manualRuntime() });
    // @ts-expect-error - not a client-go queue
    expect(() => new Informer(api, 'Pod', { queueMode: 'FIFO' })).toThrow(`informer pod-informer: unknown queueMode "FIFO"; use 'DeltaFIFO', 'RealFIFO' or 'AtomicFIFO'`);
    const inf = new Informer(api, 'Pod', { queueMode: 'RealFIFO' });
    inf.run();
    expect(() => inf.run()).toThrow(/run more than once is not allowed/);
  });
});
