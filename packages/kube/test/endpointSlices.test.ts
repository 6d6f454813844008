import { describe, expect, it } from 'vitest';
import { EndpointSliceController, Kubelet, MANAGED_BY, type EndpointSlice } from '../src/index.ts';
import { podInput, setup } from './helpers.ts';

function cluster() {
  const s = setup();
  s.api.create('Node', { metadata: { name: 'node-a' }, spec: { podCIDR: '198.18.1.0/24' } });
  new Kubelet(s.api, { nodeName: 'node-a', sandboxDelayMs: 100, readyDelayMs: 100 }).start();
  new EndpointSliceController(s.api).start();
  return s;
}

function slices(api: ReturnType<typeof setup>['api'], svc: string): EndpointSlice[] {
  return api.list('EndpointSlice', { labels: { 'kubernetes.io/service-name': svc } }).items.slice();
}

function summary(s: EndpointSlice): string[] {
  return s.endpoints.map((e) => `${e.targetRef?.name} ${e.addresses.join(',')} ready=${e.conditions.ready} serving=${e.conditions.serving} terminating=${e.conditions.terminating}`);
}

describe('EndpointSlice controller', () => {
  it('should list ready Pods of a Service with resolved ports and the managed-by labels', () => {
    const { api, sched } = cluster();
    api.create('Service', { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] } });
    api.create('Pod', podInput('web-0', { nodeName: 'node-a', labels: { app: 'web' }, ports: [{ name: 'http', containerPort: 8080 }] }));
    api.create('Pod', podInput('db-0', { nodeName: 'node-a', labels: { app: 'db' } }));
    sched.advance(1000);
    const [s, more] = slices(api, 'web');
    expect(more).toBeUndefined();
    expect(s?.metadata.name).toMatch(/^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(s?.metadata.labels).toEqual({ 'kubernetes.io/service-name': 'web', 'endpointslice.kubernetes.io/managed-by': MANAGED_BY });
    expect(s?.ports).toEqual([{ name: 'http', protocol: 'TCP', port: 8080 }]);
    expect(summary(s as EndpointSlice)).toEqual(['web-0 198.18.1.2 ready=true serving=true terminating=false']);
    expect(s?.endpoints[0]?.nodeName).toBe('node-a');
  });

  it('should follow a Pod through not ready, ready, terminating and gone', () => {
    const { api, sched } = cluster();
    api.create('Service', { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } });
    sched.advance(10);
    expect(summary(slices(api, 'web')[0] as EndpointSlice)).toEqual([]); // placeholder
    api.create('Pod', podInput('web-0', { nodeName: 'node-a', labels: { app: 'web' } }));
    sched.advance(100);
    expect(summary(slices(api, 'web')[0] as EndpointSlice)).toEqual(['web-0 198.18.1.2 ready=false serving=false terminating=false']);
    sched.advance(100);
    expect(summary(slices(api, 'web')[0] as EndpointSlice)).toEqual(['web-0 198.18.1.2 ready=true serving=true terminating=false']);
    api.delete('Pod', 'default', 'web-0');
    sched.advance(1);
    expect(summary(slices(api, 'web')[0] as EndpointSlice)).toEqual(['web-0 198.18.1.2 ready=false serving=true terminating=true']);
    sched.advance(1000);
    expect(summary(slices(api, 'web')[0] as EndpointSlice)).toEqual([]);
    expect(slices(api, 'web')).toHaveLength(1);
  });

  it('should split Pods that resolve a named port differently into separate slices', () => {
    const { api, sched } = cluster();
    api.create('Service', { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] } });
    api.create('Pod', podInput('a', { nodeName: 'node-a', labels: { app: 'web' }, ports: [{ name: 'http', containerPort: 8080 }] }));
    api.create('Pod', podInput('b', { nodeName: 'node-a', labels: { app: 'web' }, ports: [{ name: 'http', containerPort: 9090 }] }));
    sched.advance(1000);
    const got = slices(api, 'web').map((s) => `${s.ports.map((p) => p.port).join()}: ${s.endpoints.map((e) => e.targetRef?.name).join()}`).sort();
    expect(got).toEqual(['8080: a', '9090: b']);
  });

  it('should delete the slices of a deleted Service and make none for a Service without (or with an empty) selector', () => {
    const { api, sched } = cluster();
    api.create('Service', { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } });
    api.create('Service', { metadata: { name: 'manual' }, spec: { ports: [{ port: 80 }] } });
    const empty = api.create('Service', { metadata: { name: 'empty' }, spec: { selector: {}, ports: [{ port: 80 }] } });
    expect(empty.spec.selector).toBeUndefined();
    sched.advance(10);
    expect(slices(api, 'web')).toHaveLength(1);
    expect(slices(api, 'manual')).toHaveLength(0);
    expect(slices(api, 'empty')).toHaveLength(0);
    api.delete('Service', 'default', 'web');
    sched.advance(10);
    expect(slices(api, 'web')).toHaveLength(0);
  });
});
