import { produce } from 'immer';
import { describe, expect, it } from 'vitest';
import { Kubelet, TraceRecorder, isPodReady, type IpamPolicy, type KubeletOptions } from '../src/index.ts';
import { podInput, setup } from './helpers.ts';

function cluster(policy: IpamPolicy = 'round-robin', opts: Partial<KubeletOptions> = {}, podCIDR = '198.18.1.0/24') {
  const trace = new TraceRecorder();
  const s = setup(1, { trace: trace.sink });
  s.api.create('Node', { metadata: { name: 'node-a' }, spec: { podCIDR }, status: { addresses: [{ type: 'InternalIP', address: '192.0.2.10' }] } });
  const kubelet = new Kubelet(s.api, { nodeName: 'node-a', ipamPolicy: policy, trace: trace.sink, ...opts });
  kubelet.start();
  return { ...s, kubelet, trace };
}

describe('kubelet: Pod lifecycle', () => {
  it('should assign an IP from the podCIDR, report Running, then Ready', () => {
    const { api, sched } = cluster();
    api.create('Pod', podInput('web-0', { nodeName: 'node-a' }));
    sched.advance(500);
    const running = api.get('Pod', 'default', 'web-0');
    expect(running.status).toMatchObject({ phase: 'Running', podIP: '198.18.1.2', podIPs: [{ ip: '198.18.1.2' }], hostIP: '192.0.2.10' });
    expect(isPodReady(running)).toBe(false);
    sched.advance(500);
    expect(isPodReady(api.get('Pod', 'default', 'web-0'))).toBe(true);
  });

  it('should terminate a gracefully deleted Pod: not ready and IP released, then removed', () => {
    const { api, sched, kubelet } = cluster();
    api.create('Pod', podInput('web-0', { nodeName: 'node-a' }));
    sched.advance(10_000);
    api.delete('Pod', 'default', 'web-0');
    expect(api.get('Pod', 'default', 'web-0').metadata.deletionTimestamp).toBe(40_000);
    sched.advance(1000);
    const stopped = api.get('Pod', 'default', 'web-0');
    expect(stopped.status.phase).toBe('Succeeded');
    expect(isPodReady(stopped)).toBe(false);
    expect(stopped.status.podIP).toBe('198.18.1.2'); // the status keeps the last IP
    expect(kubelet.ipam()?.allocated()).toEqual([]);
    sched.advance(100);
    expect(api.find('Pod', 'default', 'web-0')).toBeUndefined();
  });

  it('should finish termination within the grace period when that is shorter', () => {
    const { api, sched } = cluster('round-robin', { terminationDelayMs: 60_000 });
    api.create('Pod', podInput('web-0', { nodeName: 'node-a', grace: 2 }));
    sched.advance(5000);
    api.delete('Pod', 'default', 'web-0');
    sched.advance(2100);
    expect(api.find('Pod', 'default', 'web-0')).toBeUndefined();
  });

  it('should keep a Pod running and Ready through its preStop sleep, then stop it (within the grace period)', () => {
    const { api, sched } = cluster();
    const sleeping = (name: string, seconds: number, grace: number) => {
      const base = podInput(name, { nodeName: 'node-a', grace });
      return { ...base, spec: { ...base.spec, containers: [{ name: 'main', lifecycle: { preStop: { sleep: { seconds } } } }] } };
    };
    api.create('Pod', sleeping('web-0', 5, 30));
    api.create('Pod', sleeping('web-1', 3, 3));
    sched.advance(5000);
    api.delete('Pod', 'default', 'web-0');
    api.delete('Pod', 'default', 'web-1');
    sched.advance(4900);
    const draining = api.get('Pod', 'default', 'web-0');
    expect(draining.metadata.deletionTimestamp).toBeDefined();
    expect(draining.status.phase).toBe('Running');
    expect(isPodReady(draining)).toBe(true);
    // web-1's sleep and stop do not fit its grace period: it is killed at 3 s.
    expect(api.find('Pod', 'default', 'web-1')).toBeUndefined();
    sched.advance(1000); // 5 s of sleep, then the 1 s the containers take to stop
    expect(api.get('Pod', 'default', 'web-0').status.phase).toBe('Running');
    sched.advance(200);
    expect(api.find('Pod', 'default', 'web-0')).toBeUndefined();
  });

  it('should reject a preStop sleep longer than the grace period, as the API server does', () => {
    const { api } = cluster();
    const base = podInput('web-0', { nodeName: 'node-a', grace: 5 });
    expect(() => api.create('Pod', { ...base, spec: { ...base.spec, containers: [{ name: 'main', lifecycle: { preStop: { sleep: { seconds: 6 } } } }] } })).toThrow(
      'Pod "web-0" is invalid: spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: 6: must be non-negative and less than terminationGracePeriodSeconds (5)',
    );
  });

  it.each([
    ['round-robin', '198.18.1.3'],
    ['lowest-free', '198.18.1.2'],
  ] as const)('should give a Pod recreated with the same name a new IP or the old one by IPAM policy (%s)', (policy, ip) => {
    const { api, sched } = cluster(policy);
    api.create('Pod', podInput('web-0', { nodeName: 'node-a' }));
    sched.advance(10_000);
    api.delete('Pod', 'default', 'web-0');
    sched.advance(1100);
    const again = api.create('Pod', podInput('web-0', { nodeName: 'node-a' }));
    sched.advance(1000);
    const p = api.get('Pod', 'default', 'web-0');
    expect(p.metadata.uid).toBe(again.metadata.uid);
    expect(p.status.podIP).toBe(ip);
  });

  it('should tear down the sandbox of a force-deleted running Pod later', () => {
    const { api, sched, kubelet } = cluster();
    api.create('Pod', podInput('web-0', { nodeName: 'node-a' }));
    sched.advance(5000);
    api.delete('Pod', 'default', 'web-0', { gracePeriodSeconds: 0 });
    expect(kubelet.ipam()?.allocated()).toHaveLength(1);
    sched.advance(1000);
    expect(kubelet.ipam()?.allocated()).toEqual([]);
  });

  it('should keep a Pod Pending while the range is exhausted and start it once an address is freed', () => {
    const { api, sched, trace } = cluster('lowest-free', {}, '198.18.1.0/29');
    for (let i = 0; i < 6; i++) api.create('Pod', podInput(`p${i}`, { nodeName: 'node-a' }));
    sched.advance(2000);
    expect(api.get('Pod', 'default', 'p5').status.phase).toBe('Pending');
    expect(trace.events.some((e) => e.type === 'kube.ipam' && e.fields['result'] === 'range exhausted')).toBe(true);
    api.delete('Pod', 'default', 'p0');
    sched.advance(2000);
    expect(api.get('Pod', 'default', 'p5').status.podIP).toBe('198.18.1.2');
  });

  it('should wait for the node podCIDR before starting Pods', () => {
    const s = setup();
    const node = s.api.create('Node', { metadata: { name: 'node-b' }, spec: { podCIDR: '198.18.9.0/24' } });
    const kubelet = new Kubelet(s.api, { nodeName: 'node-x' });
    kubelet.start();
    s.api.create('Pod', podInput('p', { nodeName: 'node-x' }));
    s.sched.advance(2000);
    expect(s.api.get('Pod', 'default', 'p').status.phase).toBe('Pending');
    s.api.create('Node', { metadata: { name: 'node-x' }, spec: { podCIDR: '198.18.2.0/24' } });
    s.sched.advance(2000);
    expect(s.api.get('Pod', 'default', 'p').status.podIP).toBe('198.18.2.2');
    expect(node.spec.podCIDR).toBe('198.18.9.0/24');
  });

  it('should leave Pods of a stopped kubelet Terminating until force-deleted', () => {
    const { api, sched, kubelet } = cluster();
    api.create('Pod', podInput('web-0', { nodeName: 'node-a' }));
    sched.advance(2000);
    kubelet.stop();
    api.delete('Pod', 'default', 'web-0');
    sched.advance(60_000);
    expect(api.get('Pod', 'default', 'web-0').metadata.deletionTimestamp).toBeDefined();
  });

  it('should pick up Pods bound before it started and ignore Pods of other nodes', () => {
    const s = setup();
    s.api.create('Node', { metadata: { name: 'node-a' }, spec: { podCIDR: '198.18.1.0/24' } });
    s.api.create('Pod', podInput('early', { nodeName: 'node-a' }));
    s.api.create('Pod', podInput('other', { nodeName: 'node-b' }));
    new Kubelet(s.api, { nodeName: 'node-a', readyDelayMs: 0 }).start();
    s.sched.advance(1000);
    expect(isPodReady(s.api.get('Pod', 'default', 'early'))).toBe(true);
    expect(s.api.get('Pod', 'default', 'other').status.phase).toBe('Pending');
  });

  it("should give a hostNetwork Pod the node's InternalIP without touching IPAM", () => {
    const { api, sched, kubelet } = cluster();
    api.create('Pod', { metadata: { name: 'agent' }, spec: { nodeName: 'node-a', hostNetwork: true, containers: [{ name: 'c' }] } });
    api.create('Pod', podInput('web-0', { nodeName: 'node-a' }));
    sched.advance(1000);
    expect(api.get('Pod', 'default', 'agent').status.podIP).toBe('192.0.2.10');
    expect(kubelet.ipam()?.allocated().map((a) => a.ip)).toEqual(['198.18.1.2']);
    api.delete('Pod', 'default', 'agent');
    sched.advance(2000);
    expect(api.find('Pod', 'default', 'agent')).toBeUndefined();
    expect(kubelet.ipam()?.allocated().map((a) => a.ip)).toEqual(['198.18.1.2']);
  });

  it('should not let a status update race a user update of labels', () => {
    const { api, sched } = cluster();
    const p = api.create('Pod', podInput('web-0', { nodeName: 'node-a' }));
    api.update(produce(p, (d) => void (d.metadata.labels['app'] = 'web')));
    sched.advance(2000);
    const now = api.get('Pod', 'default', 'web-0');
    expect(now.metadata.labels).toEqual({ app: 'web' });
    expect(isPodReady(now)).toBe(true);
  });
});
