import fc from 'fast-check';
import { produce } from 'immer';
import { describe, expect, it } from 'vitest';
import { isKubeError, objectKey, type ApiServer, type KubeError, type Pod, type Selector } from '../src/index.ts';
import { podInput, runPod, setup } from './helpers.ts';

function caught(f: () => unknown): KubeError {
  try {
    f();
  } catch (e) {
    if (isKubeError(e)) return e;
    throw e;
  }
  throw new Error('expected a KubeError');
}

describe('api server: create, get, list', () => {
  it('should fill in uid, resourceVersion, creationTimestamp and a Pending status', () => {
    const { api, sched } = setup();
    sched.advance(1500);
    const p = api.create('Pod', podInput('web-0', { nodeName: 'node-a', ports: [{ name: 'http', containerPort: 8080 }] }));
    expect(p.metadata).toMatchObject({ name: 'web-0', namespace: 'default', uid: '00000000-0000-4000-8000-000000000001', resourceVersion: '1', creationTimestamp: 1500 });
    expect(p.status).toEqual({ phase: 'Pending', podIPs: [], conditions: [{ type: 'PodScheduled', status: 'True' }] });
    expect(p.spec.containers[0]?.ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
    expect(api.get('Pod', 'default', 'web-0')).toBe(p);
  });

  it('should hand out deep-frozen objects that a caller cannot mutate', () => {
    const { api } = setup();
    const p = api.create('Pod', podInput('web-0', { labels: { app: 'web' } }));
    expect(() => {
      (p.metadata.labels as Record<string, string>)['app'] = 'evil';
    }).toThrow(TypeError);
    expect(() => {
      (p.status as { phase: string }).phase = 'Running';
    }).toThrow(TypeError);
    expect(api.get('Pod', 'default', 'web-0').metadata.labels['app']).toBe('web');
  });

  it('should issue one global, increasing resourceVersion across kinds', () => {
    const { api } = setup();
    const a = api.create('Pod', podInput('a'));
    const n = api.create('Node', { metadata: { name: 'node-a' } });
    const s = api.create('Service', { metadata: { name: 'svc' }, spec: { ports: [{ port: 80 }] } });
    expect([a, n, s].map((o) => o.metadata.resourceVersion)).toEqual(['1', '2', '3']);
    expect(api.resourceVersion()).toBe('3');
    expect(api.list('Pod').resourceVersion).toBe('3');
  });

  it('should answer AlreadyExists and NotFound with the real messages and HTTP codes', () => {
    const { api } = setup();
    api.create('Pod', podInput('web-0'));
    const dup = caught(() => api.create('Pod', podInput('web-0')));
    expect([dup.code, dup.httpStatus, dup.message]).toEqual(['AlreadyExists', 409, 'pods "web-0" already exists']);
    const nf = caught(() => api.get('Pod', 'default', 'nope'));
    expect([nf.code, nf.httpStatus, nf.message]).toEqual(['NotFound', 404, 'pods "nope" not found']);
    expect(caught(() => api.get('EndpointSlice', 'default', 'x')).message).toBe('endpointslices.discovery.k8s.io "x" not found');
    expect(api.find('Pod', 'default', 'nope')).toBeUndefined();
  });

  it('should reject a resourceVersion on create', () => {
    const { api } = setup();
    const e = caught(() => api.create('Pod', { ...podInput('a'), metadata: { name: 'a', resourceVersion: '5' } }));
    expect([e.code, e.message]).toEqual(['BadRequest', 'resourceVersion should not be set on objects to be created']);
  });

  it('should validate names with the real messages, bracketing several problems', () => {
    const { api } = setup();
    const one = caught(() => api.create('Pod', podInput('Web_0')));
    expect(one.code).toBe('Invalid');
    expect(one.httpStatus).toBe(422);
    expect(one.message).toMatch(/^Pod "Web_0" is invalid: metadata.name: Invalid value: "Web_0": a lowercase RFC 1123 subdomain must consist of/);
    const svc = caught(() => api.create('Service', { metadata: { name: '1svc' }, spec: { ports: [{ port: 80 }, { port: 81 }] } }));
    expect(svc.message).toMatch(/^Service "1svc" is invalid: metadata.name: Invalid value: "1svc": a DNS-1035 label/);
    const many = caught(() => api.create('Service', { metadata: { name: 'svc' }, spec: { ports: [{ port: 80 }, { port: 70000 }] } }));
    expect(many.message).toBe(
      'Service "svc" is invalid: [spec.ports[1].port: Invalid value: 70000: must be between 1 and 65535, inclusive, spec.ports[0].name: Required value, spec.ports[1].name: Required value]',
    );
    expect(caught(() => api.create('Pod', { metadata: { name: 'x' }, spec: { containers: [] } })).message).toBe('Pod "x" is invalid: spec.containers: Required value');
  });

  it('should list sorted by key and honour namespace, label and nodeName selectors', () => {
    const { api } = setup();
    api.create('Pod', podInput('b', { nodeName: 'n1', labels: { app: 'x' } }));
    api.create('Pod', podInput('a', { nodeName: 'n2', labels: { app: 'y' } }));
    api.create('Pod', podInput('c', { namespace: 'kube-system', nodeName: 'n1' }));
    expect(api.list('Pod').items.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).toEqual(['default/a', 'default/b', 'kube-system/c']);
    expect(api.list('Pod', { namespace: 'default' }).items.map((p) => p.metadata.name)).toEqual(['a', 'b']);
    expect(api.list('Pod', { nodeName: 'n1' }).items.map((p) => p.metadata.name)).toEqual(['b', 'c']);
    expect(api.list('Pod', { labels: { app: 'y' } }).items.map((p) => p.metadata.name)).toEqual(['a']);
  });
});

describe('api server: update, status, patch', () => {
  it('should reject an update carrying a stale resourceVersion with Conflict', () => {
    const { api } = setup();
    const p1 = api.create('Pod', podInput('web-0'));
    api.update(produce(p1, (d) => void (d.metadata.annotations['a'] = '1')));
    const e = caught(() => api.update(produce(p1, (d) => void (d.metadata.annotations['a'] = '2'))));
    expect([e.code, e.httpStatus]).toEqual(['Conflict', 409]);
    expect(e.message).toBe('Operation cannot be fulfilled on pods "web-0": the object has been modified; please apply your changes to the latest version and try again');
  });

  it('should accept an unconditional update (empty resourceVersion)', () => {
    const { api } = setup();
    const p1 = api.create('Pod', podInput('web-0'));
    api.update(produce(p1, (d) => void (d.metadata.annotations['a'] = '1')));
    const p3 = api.update(produce(p1, (d) => {
      d.metadata.resourceVersion = '';
      d.metadata.annotations['a'] = '2';
    }));
    expect(p3.metadata.annotations).toEqual({ a: '2' });
    expect(p3.metadata.resourceVersion).toBe('3');
  });

  it('should not write an update that changes nothing: same resourceVersion, no event', () => {
    const { api } = setup();
    const p1 = api.create('Pod', podInput('web-0'));
    const heard: string[] = [];
    api.onChange((c) => heard.push(c.type));
    const same = api.update(produce(p1, (d) => void (d.metadata.labels = {})));
    expect(same).toBe(p1);
    expect(api.resourceVersion()).toBe('1');
    expect(heard).toEqual([]);
  });

  it('should keep status on update and keep metadata and spec on updateStatus', () => {
    const { api } = setup();
    const p1 = api.create('Pod', podInput('web-0', { nodeName: 'n1' }));
    const p2 = api.update(produce(p1, (d) => {
      d.status.phase = 'Running';
      d.metadata.labels['x'] = 'y';
    }));
    expect(p2.status.phase).toBe('Pending');
    expect(p2.metadata.labels).toEqual({ x: 'y' });
    const p3 = api.updateStatus(produce(p2, (d) => {
      d.status.phase = 'Running';
      d.status.podIP = '198.18.0.5';
      d.metadata.labels['x'] = 'ignored';
    }));
    expect(p3.status).toMatchObject({ phase: 'Running', podIP: '198.18.0.5', podIPs: [{ ip: '198.18.0.5' }] });
    expect(p3.metadata.labels).toEqual({ x: 'y' });
  });

  it("should forbid changing a Pod's spec with the real message", () => {
    const { api } = setup();
    const p = api.create('Pod', podInput('web-0', { nodeName: 'n1' }));
    const e = caught(() => api.update(produce(p, (d) => void (d.spec.nodeName = 'n2'))));
    expect(e.message).toMatch(/^Pod "web-0" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers\[\*\].image`/);
  });

  it('should reject an invalid pod IP in status', () => {
    const { api } = setup();
    const p = api.create('Pod', podInput('web-0', { nodeName: 'n1' }));
    const e = caught(() => api.updateStatus(produce(p, (d) => void (d.status.podIP = '300.1.1.1'))));
    expect(e.message).toBe('Pod "web-0" is invalid: status.podIP: Invalid value: "300.1.1.1": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)');
  });

  it('should merge-patch annotations, deleting keys patched to null', () => {
    const { api } = setup();
    const p = api.create('Pod', { ...podInput('web-0'), metadata: { name: 'web-0', annotations: { keep: '1', drop: '2' } } });
    const q = api.patch('Pod', 'default', 'web-0', { metadata: { annotations: { drop: null, add: '3' } } });
    expect(q.metadata.annotations).toEqual({ keep: '1', add: '3' });
    expect(q.metadata.uid).toBe(p.metadata.uid);
    expect(Number(q.metadata.resourceVersion)).toBeGreaterThan(Number(p.metadata.resourceVersion));
  });

  it('should treat a resourceVersion inside a patch as a precondition', () => {
    const { api } = setup();
    api.create('Pod', podInput('web-0'));
    api.patch('Pod', 'default', 'web-0', { metadata: { annotations: { a: '1' } } });
    const e = caught(() => api.patch('Pod', 'default', 'web-0', { metadata: { resourceVersion: '1', annotations: { a: '2' } } }));
    expect(e.code).toBe('Conflict');
  });
});

describe('api server: delete', () => {
  it('should delete a bound, running Pod gracefully: deletionTimestamp first, removal only with grace 0', () => {
    const { api, sched } = setup();
    const p = api.create('Pod', podInput('web-0', { nodeName: 'n1', grace: 30 }));
    sched.advance(1000);
    const d = api.delete('Pod', 'default', 'web-0');
    expect(d.metadata.deletionTimestamp).toBe(31_000);
    expect(d.metadata.deletionGracePeriodSeconds).toBe(30);
    expect(api.find('Pod', 'default', 'web-0')).toBe(d);
    // A later delete with a shorter grace shortens it, measured from the first request.
    sched.advance(1000);
    const d2 = api.delete('Pod', 'default', 'web-0', { gracePeriodSeconds: 10 });
    expect(d2.metadata.deletionTimestamp).toBe(11_000);
    // A longer one changes nothing.
    expect(api.delete('Pod', 'default', 'web-0', { gracePeriodSeconds: 20 })).toBe(d2);
    const gone = api.delete('Pod', 'default', 'web-0', { gracePeriodSeconds: 0 });
    expect(gone.metadata.uid).toBe(p.metadata.uid);
    expect(api.find('Pod', 'default', 'web-0')).toBeUndefined();
  });

  it('should remove an unscheduled Pod at once', () => {
    const { api } = setup();
    api.create('Pod', podInput('web-0'));
    const d = api.delete('Pod', 'default', 'web-0');
    expect(d.metadata.deletionTimestamp).toBeUndefined();
    expect(api.find('Pod', 'default', 'web-0')).toBeUndefined();
  });

  it('should remove a Pod in a terminal phase at once', () => {
    const { api } = setup();
    const p = api.create('Pod', podInput('job-0', { nodeName: 'n1' }));
    api.updateStatus(produce(p, (d) => void (d.status.phase = 'Succeeded')));
    api.delete('Pod', 'default', 'job-0');
    expect(api.find('Pod', 'default', 'job-0')).toBeUndefined();
  });

  it('should fail a delete whose uid precondition no longer holds (the Pod was recreated)', () => {
    const { api } = setup();
    const old = api.create('Pod', podInput('web-0'));
    api.delete('Pod', 'default', 'web-0');
    api.create('Pod', podInput('web-0'));
    const e = caught(() => api.delete('Pod', 'default', 'web-0', { preconditions: { uid: old.metadata.uid } }));
    expect(e.message).toBe(
      'Operation cannot be fulfilled on pods "web-0": Precondition failed: UID in precondition: 00000000-0000-4000-8000-000000000001, UID in object meta: 00000000-0000-4000-8000-000000000002',
    );
  });

  it('should give the deleted object the resourceVersion of the deletion', () => {
    const { api } = setup();
    api.create('Pod', podInput('a'));
    api.create('Pod', podInput('b'));
    const d = api.delete('Pod', 'default', 'a');
    expect(d.metadata.resourceVersion).toBe('3');
  });
});

describe('api server: services, nodes, binding', () => {
  it('should allocate a cluster IP and node ports, reject duplicates, and release them on delete', () => {
    const { api } = setup(5, { serviceCIDR: '198.51.100.0/29', nodePortRange: { min: 30000, max: 30001 } });
    const s = api.create('Service', { metadata: { name: 'web' }, spec: { type: 'NodePort', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] } });
    expect(s.spec.clusterIP).toMatch(/^198\.51\.100\.[1-6]$/);
    expect([30000, 30001]).toContain(s.spec.ports[0]?.nodePort);
    expect(s.spec.externalTrafficPolicy).toBe('Cluster');
    const used = s.spec.ports[0]?.nodePort as number;
    const e = caught(() => api.create('Service', { metadata: { name: 'web2' }, spec: { type: 'NodePort', ports: [{ port: 80, nodePort: used }] } }));
    expect(e.message).toBe(`Service "web2" is invalid: spec.ports[0].nodePort: Invalid value: ${used}: provided port is already allocated`);
    const other = api.create('Service', { metadata: { name: 'web3' }, spec: { type: 'NodePort', ports: [{ port: 80 }] } });
    expect(other.spec.ports[0]?.nodePort).toBe(used === 30000 ? 30001 : 30000);
    const full = caught(() => api.create('Service', { metadata: { name: 'web4' }, spec: { type: 'NodePort', ports: [{ port: 80 }] } }));
    expect([full.code, full.message]).toEqual(['InternalError', 'Internal error occurred: failed to allocate a nodePort: range is full']);
    api.delete('Service', 'default', 'web');
    const again = api.create('Service', { metadata: { name: 'web5' }, spec: { type: 'NodePort', ports: [{ port: 80, nodePort: used }] } });
    expect(again.spec.ports[0]?.nodePort).toBe(used);
  });

  it('should keep allocated cluster IP and node ports on an update that leaves them out', () => {
    const { api } = setup();
    const s = api.create('Service', { metadata: { name: 'web' }, spec: { type: 'NodePort', ports: [{ name: 'a', port: 80 }] } });
    const u = api.update(produce(s, (d) => {
      d.spec.clusterIP = '';
      d.spec.ports = [{ name: 'a', protocol: 'TCP', port: 80, targetPort: 8080 }];
      d.metadata.annotations['nodeportlocal.antrea.io/enabled'] = 'true';
    }));
    expect(u.spec.clusterIP).toBe(s.spec.clusterIP);
    expect(u.spec.ports[0]?.nodePort).toBe(s.spec.ports[0]?.nodePort);
    expect(u.spec.ports[0]?.targetPort).toBe(8080);
    const e = caught(() => api.update(produce(u, (d) => void (d.spec.clusterIP = '198.51.100.99'))));
    expect(e.message).toContain('spec.clusterIPs[0]: Invalid value: "198.51.100.99": may not change once set');
  });

  it('should default ClientIP session affinity to a 10800 s timeout and refuse timeouts outside 1..86400 or a config without ClientIP', () => {
    const { api } = setup();
    const s = api.create('Service', { metadata: { name: 'web' }, spec: { sessionAffinity: 'ClientIP', ports: [{ port: 80 }] } });
    expect(s.spec.sessionAffinity).toBe('ClientIP');
    expect(s.spec.sessionAffinityConfig).toEqual({ clientIP: { timeoutSeconds: 10800 } });
    const t = api.create('Service', { metadata: { name: 'short' }, spec: { sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 30 } }, ports: [{ port: 80 }] } });
    expect(t.spec.sessionAffinityConfig?.clientIP.timeoutSeconds).toBe(30);
    expect(caught(() => api.create('Service', { metadata: { name: 'long' }, spec: { sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 86401 } }, ports: [{ port: 80 }] } })).message).toBe(
      'Service "long" is invalid: spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401: must be greater than 0 and less than 86400',
    );
    expect(caught(() => api.create('Service', { metadata: { name: 'none' }, spec: { sessionAffinityConfig: { clientIP: { timeoutSeconds: 30 } }, ports: [{ port: 80 }] } })).message).toBe(
      'Service "none" is invalid: spec.sessionAffinityConfig: Invalid value: must not be set when session affinity is None',
    );
  });

  it('should refuse externalTrafficPolicy on a ClusterIP Service', () => {
    const { api } = setup();
    const e = caught(() => api.create('Service', { metadata: { name: 'web' }, spec: { externalTrafficPolicy: 'Local', ports: [{ port: 80 }] } }));
    expect(e.message).toBe('Service "web" is invalid: spec.externalTrafficPolicy: Invalid value: "Local": may only be set when `type` is \'NodePort\' or \'LoadBalancer\'');
  });

  it('should give Nodes without a podCIDR the next free subnet of the cluster CIDR, round-robin', () => {
    const { api } = setup(1, { clusterCIDR: '198.18.0.0/22', nodeCIDRMaskSize: 24 });
    const a = api.create('Node', { metadata: { name: 'a' }, status: { addresses: [{ type: 'InternalIP', address: '192.0.2.10' }] } });
    const b = api.create('Node', { metadata: { name: 'b' }, spec: { podCIDR: '198.18.2.0/24' } });
    const c = api.create('Node', { metadata: { name: 'c' } });
    expect([a.spec.podCIDR, b.spec.podCIDR, c.spec.podCIDR]).toEqual(['198.18.0.0/24', '198.18.2.0/24', '198.18.1.0/24']);
    api.delete('Node', '', 'a');
    // Round-robin: the freed first subnet comes back only after the rest of the range.
    expect(api.create('Node', { metadata: { name: 'd' } }).spec.podCIDR).toBe('198.18.3.0/24');
    expect(api.create('Node', { metadata: { name: 'e' } }).spec.podCIDR).toBe('198.18.0.0/24');
    expect(a.status.addresses).toEqual([{ type: 'InternalIP', address: '192.0.2.10' }]);
  });

  it('should bind an unscheduled Pod once and refuse a second binding', () => {
    const { api } = setup();
    api.create('Pod', podInput('web-0'));
    const b = api.bind('default', 'web-0', 'n1');
    expect(b.spec.nodeName).toBe('n1');
    expect(b.status.conditions).toContainEqual({ type: 'PodScheduled', status: 'True' });
    expect(caught(() => api.bind('default', 'web-0', 'n2')).message).toBe('Operation cannot be fulfilled on pods/binding "web-0": pod web-0 is already assigned to node "n1"');
  });

  it('should let a test give a Pod its IP through updateStatus', () => {
    const { api } = setup();
    const p: Pod = runPod(api, api.create('Pod', podInput('web-0', { nodeName: 'n1' })), '198.18.0.7');
    expect(p.status.podIP).toBe('198.18.0.7');
    expect(p.status.conditions).toEqual([{ type: 'Ready', status: 'True' }]);
  });
});

describe('api server: list index', () => {
  const NAMESPACES = ['default', 'other'];
  const NAMES = ['a', 'b', 'c', 'd', 'e'];
  const NODES = ['n1', 'n2', 'n3'];
  type Op =
    | { readonly op: 'create'; readonly ns: string; readonly name: string; readonly node: string | undefined; readonly app: string }
    | { readonly op: 'bind'; readonly ns: string; readonly name: string; readonly node: string }
    | { readonly op: 'delete'; readonly ns: string; readonly name: string; readonly grace: number | undefined }
    | { readonly op: 'relabel'; readonly ns: string; readonly name: string; readonly app: string }
    | { readonly op: 'advance'; readonly ms: number };
  const ns = fc.constantFrom(...NAMESPACES);
  const name = fc.constantFrom(...NAMES);
  const node = fc.constantFrom(...NODES);
  const app = fc.constantFrom('x', 'y');
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    { weight: 5, arbitrary: fc.record({ op: fc.constant('create' as const), ns, name, node: fc.option(node, { nil: undefined }), app }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('bind' as const), ns, name, node }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('delete' as const), ns, name, grace: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }) }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('relabel' as const), ns, name, app }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 3000 }) }) },
  );
  const SELECTORS: readonly Selector[] = [
    {},
    { namespace: 'default' },
    { labels: { app: 'x' } },
    { nodeName: '' },
    { nodeName: 'nowhere' },
    ...NODES.flatMap((n) => [{ nodeName: n }, { nodeName: n, namespace: 'other' }, { nodeName: n, labels: { app: 'y' } }]),
  ];

  /** What a list must return, computed without any index: every Pod looked up by name, sorted, filtered. */
  function fullScan(api: ApiServer, sel: Selector): string[] {
    const all: Pod[] = [];
    for (const n of NAMESPACES) for (const m of NAMES) {
      const p = api.find('Pod', n, m);
      if (p !== undefined) all.push(p);
    }
    return all
      .filter((p) => (sel.namespace === undefined || p.metadata.namespace === sel.namespace) && (sel.nodeName === undefined || p.spec.nodeName === sel.nodeName))
      .filter((p) => Object.entries(sel.labels ?? {}).every(([k, v]) => p.metadata.labels[k] === v))
      .map((p) => `${objectKey(p)}@${p.metadata.resourceVersion}`)
      .sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
  }

  function apply(api: ApiServer, o: Op, advance: (ms: number) => void): void {
    try {
      switch (o.op) {
        case 'create':
          api.create('Pod', podInput(o.name, { namespace: o.ns, labels: { app: o.app }, grace: 1, ...(o.node !== undefined ? { nodeName: o.node } : {}) }));
          return;
        case 'bind':
          api.bind(o.ns, o.name, o.node);
          return;
        case 'delete':
          api.delete('Pod', o.ns, o.name, o.grace !== undefined ? { gracePeriodSeconds: o.grace } : {});
          return;
        case 'relabel':
          api.patch('Pod', o.ns, o.name, { metadata: { labels: { app: o.app } } });
          return;
        case 'advance':
          advance(o.ms);
          return;
      }
    } catch (e) {
      // NotFound, AlreadyExists, Conflict: the operation was refused and changed nothing.
      if (!isKubeError(e)) throw e;
    }
  }

  it('should list exactly what a full scan finds, for every selector, under random writes', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
        const { api, sched } = setup();
        for (const o of ops) {
          apply(api, o, (ms) => sched.advance(ms));
          for (const sel of SELECTORS) {
            const got = api.list('Pod', sel).items.map((p) => `${objectKey(p)}@${p.metadata.resourceVersion}`);
            expect(got).toEqual(fullScan(api, sel));
          }
        }
      }),
      { seed: 20261129, numRuns: 150 },
    );
  });

  it('should start a watch from "0" with exactly the Pods a full scan selects, in key order', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 30 }), node, (ops, n) => {
        const { api, sched } = setup();
        for (const o of ops) apply(api, o, (ms) => sched.advance(ms));
        const seen: string[] = [];
        api.watch('Pod', { resourceVersion: '0', nodeName: n }, (e) => {
          if (e.type === 'ADDED') seen.push(`${objectKey(e.object)}@${e.object.metadata.resourceVersion}`);
        });
        sched.advance(0);
        expect(seen).toEqual(fullScan(api, { nodeName: n }));
      }),
      { seed: 7, numRuns: 100 },
    );
  });

  it('should hand out list results a caller may modify without affecting the next list', () => {
    const { api } = setup();
    api.create('Pod', podInput('a', { nodeName: 'n1' }));
    api.create('Pod', podInput('b', { nodeName: 'n1' }));
    const first = api.list('Pod', { nodeName: 'n1' }).items as Pod[];
    first.reverse();
    expect(api.list('Pod', { nodeName: 'n1' }).items.map((p) => p.metadata.name)).toEqual(['a', 'b']);
  });
});
