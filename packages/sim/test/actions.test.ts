import { formatSave } from '@netsim/netfilter';
import { describe, expect, it } from 'vitest';
import { ACTIONS, ACTION_KINDS, World, isSimError, renderEvent, story, validateScenario, SIM_SCENARIO_FORMAT, type Action, type Controller, type ControllerContext, type SimScenario } from '../src/index.ts';
import { annotator } from './fixtures/annotator.ts';

const pod = (name: string, node = 'node-1'): Action => ({ kind: 'pod.create', pod: { name, node, labels: { app: 'web' }, ports: [{ port: 8080, protocol: 'TCP' }] } });

/** Appends one masquerade rule at every start, retrying a failed command every 200 ms. */
const masq: Controller<ControllerContext> = {
  name: 'masq',
  create: (ctx) => ({
    start: async () => {
      for (;;) {
        try {
          await ctx.iptables.append('nat', 'POSTROUTING', '-s', '198.18.0.0/15', '!', '-d', '198.18.0.0/15', '-j', 'MASQUERADE');
          ctx.log.info('programmed');
          return;
        } catch {
          ctx.log.warn('iptables failed, retrying');
          await ctx.sleep(200);
        }
      }
    },
  }),
};

function errorOf(fn: () => void): string {
  try {
    fn();
  } catch (e) {
    expect(isSimError(e)).toBe(true);
    return (e as Error).message;
  }
  throw new Error('expected a SimError');
}

describe('action registry', () => {
  it('should have one module per action kind, each with story lines for the events it emits', () => {
    expect(ACTION_KINDS.length).toBe(Object.keys(ACTIONS).length);
    for (const kind of ACTION_KINDS) {
      const m = ACTIONS[kind];
      expect(m.kind).toBe(kind);
      expect(m.summary.length).toBeGreaterThan(5);
      expect(Object.keys(m.story).length, kind).toBeGreaterThan(0);
    }
    const line = renderEvent({ step: 1, t: 5, type: 'fault.node.reboot', node: 'node-1', downMs: 2000 });
    expect(line).toEqual({ level: 'story', text: 'fault: node-1 reboots (rules and conntrack lost; its agents start again 2000ms later)' });
  });
});

describe('World.at checks actions at run time', () => {
  const world = (): World => new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: annotator() });
  it('should name an unknown kind and list the kinds', () => {
    expect(errorOf(() => world().at(10, { kind: 'pod.crate' } as unknown as Action))).toMatch(/^World\.at\(10\): action\.kind: unknown action kind "pod\.crate" \(expected one of: pod\.create, pod\.delete, .*node\.reboot/);
  });
  it('should name a missing field, a mistyped one and an unknown one', () => {
    expect(errorOf(() => world().at(10, { kind: 'agent.crash', node: 'node-1' } as unknown as Action))).toBe('World.at(10): action.restartAfterMs: missing (expected an integer of milliseconds >= 0)');
    expect(errorOf(() => world().at(10, { kind: 'agent.crash', node: 'node-1', restartAfterMs: '5s' } as unknown as Action))).toBe('World.at(10): action.restartAfterMs: must be an integer of milliseconds >= 0, got "5s"');
    expect(errorOf(() => world().at(10, { kind: 'agent.crash', node: 'node-1', restartAfter: 5 } as unknown as Action))).toMatch(/^World\.at\(10\): action\.restartAfterMs: missing/);
    expect(errorOf(() => world().at(10, { kind: 'watch.gap', durationMs: 5, nodes: 'x' } as unknown as Action))).toBe('World.at(10): action.nodes: unknown field (fields: kind, node, durationMs)');
  });
  it('should check nested specs and references to nodes', () => {
    expect(errorOf(() => world().at(10, pod('web-0', 'node-9')))).toBe('World.at(10): action.pod.node: unknown node "node-9" (nodes: node-1)');
    expect(errorOf(() => world().at(10, { kind: 'pod.create', pod: { name: 'web-0', node: 'node-1', ports: [{ port: 70000, protocol: 'TCP' }] } }))).toBe('World.at(10): action.pod.ports[0].port: must be a whole number from 1 to 65535, got 70000');
    expect(errorOf(() => world().at(10, { kind: 'service.create', service: { name: 'web', selector: {}, ports: [{ port: 80, targetPort: 'HTTP!', protocol: 'TCP' }] } }))).toMatch(/action\.service\.ports\[0\]\.targetPort: must be a port number or a container port name/);
    expect(errorOf(() => world().at(-1, pod('web-0')))).toMatch(/^World\.at: the time must be an integer of milliseconds >= 0, got -1/);
    expect(errorOf(() => world().at(10, null as unknown as Action))).toMatch(/^World\.at\(10\): action: must be an action/);
  });
  it('should give validateScenario the same checks, with the scenario path', () => {
    const s: SimScenario = { format: SIM_SCENARIO_FORMAT, seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: { name: 'x' }, timeline: [{ atMs: 5, action: { kind: 'iptables.fail', node: 'node-1' } }], horizonMs: 100, settleMs: 0 };
    expect(errorOf(() => validateScenario(s))).toBe('scenario timeline[0].action.count: missing (give count, durationMs or both)');
  });
});

describe('pod.complete', () => {
  it('should release the IP of a completed Pod that lingers in the API, so the next Pod gets it (lowest-free)', async () => {
    const world = new World({ seed: 2, cluster: { nodes: [{ name: 'node-1' }], ipamPolicy: 'lowest-free' }, controller: annotator() });
    world.at(100, pod('job-0'));
    world.at(2000, { kind: 'pod.complete', name: 'job-0', phase: 'Succeeded' });
    world.at(4000, pod('web-0'));
    world.at(4100, { kind: 'pod.complete', name: 'gone', phase: 'Failed' });
    expect((await world.run(8000)).status).toBe('ok');
    const job = world.api.get('Pod', 'default', 'job-0');
    const web = world.api.get('Pod', 'default', 'web-0');
    expect(job.status.phase).toBe('Succeeded');
    expect(job.status.podIP).toBeDefined();
    expect(web.status.podIP).toBe(job.status.podIP);
    expect(world.view.ipOwner(web.status.podIP ?? '')?.pod).toBe('default/web-0');
    const lines = story(world.events).join('\n');
    expect(lines).toMatch(/pod default\/job-0 completes \(Succeeded\); it stays in the API while its IP is released/);
    expect(lines).toMatch(/kubelet node-1: default\/job-0 \(uid \w+\) succeeded/);
    expect(lines).toMatch(/pod\.complete skipped: pods "gone" not found/);
  });
});

describe('node.reboot', () => {
  it('should lose the node\'s rules and restart its agents, which program them again', async () => {
    const world = new World({ seed: 3, cluster: { nodes: [{ name: 'node-1' }, { name: 'node-2' }] }, controller: masq });
    world.at(3000, { kind: 'node.reboot', node: 'node-1', downMs: 1000 });
    const rules = (n: string): number => formatSave(world.ruleset(n)).split('\n').filter((l) => l.startsWith('-A POSTROUTING')).length;
    await world.run(3001);
    expect(rules('node-1')).toBe(0);
    expect(rules('node-2')).toBe(1);
    expect(world.view.boots?.('node-1')).toBe(1);
    expect((await world.run(6000)).status).toBe('ok');
    expect(rules('node-1')).toBe(1);
    expect(world.agent('node-1').incarnation).toBe(2);
    expect(world.agent('node-2').incarnation).toBe(1);
    expect(story(world.events).join('\n')).toMatch(/fault: node-1 reboots \(rules and conntrack lost; its agents start again 1000ms later\)[\s\S]*node-1\/masq crashes: node rebooted[\s\S]*node-1\/masq starts \(process #2\)/);
  });
});

describe('node.drain', () => {
  it("should evict every Pod of the node, each with its grace period: one whose preStop hook sleeps keeps serving meanwhile, its endpoints serving and terminating", async () => {
    const world = new World({ seed: 5, cluster: { nodes: [{ name: 'node-1' }, { name: 'node-2' }], services: [{ name: 'web', selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080, protocol: 'TCP' }] }] }, controller: annotator() });
    world.at(0, pod('web-0'));
    world.at(0, pod('web-1', 'node-2'));
    world.at(0, { kind: 'pod.create', pod: { name: 'web-2', node: 'node-1', labels: { app: 'web' }, ports: [{ port: 8080, protocol: 'TCP' }], terminationGracePeriodSeconds: 30, preStopSleepSeconds: 6 } });
    world.at(2000, { kind: 'node.drain', node: 'node-1' });
    await world.run(5000);
    // web-0 (grace 0) is gone, web-1 on the other node untouched, web-2 still running through its hook.
    expect(world.api.find('Pod', 'default', 'web-0')).toBeUndefined();
    expect(world.api.get('Pod', 'default', 'web-1').metadata.deletionTimestamp).toBeUndefined();
    const draining = world.api.get('Pod', 'default', 'web-2');
    expect(draining.metadata.deletionTimestamp).toBeDefined();
    expect(draining.status.phase).toBe('Running');
    const eps = world.api.list('EndpointSlice').items.flatMap((sl) => sl.endpoints);
    expect(eps.find((e) => e.targetRef?.name === 'web-2')?.conditions).toEqual({ ready: false, serving: true, terminating: true });
    // 6 s of sleep from t=2000, then 1 s to stop.
    await world.run(9200);
    expect(world.api.find('Pod', 'default', 'web-2')).toBeUndefined();
    expect(story(world.events).join('\n')).toMatch(/node node-1 drained: 2 Pods evicted/);
  });
});

describe('iptables.fail', () => {
  it('should fail every command for durationMs (persistent), then let the retry through', async () => {
    const world = new World({ seed: 4, cluster: { nodes: [{ name: 'node-1' }] }, controller: masq });
    world.at(0, { kind: 'iptables.fail', node: 'node-1', durationMs: 1000 });
    expect((await world.run(3000)).status).toBe('ok');
    const failed = world.events.filter((e) => e.type === 'iptables.exec' && e['exit'] !== 0);
    expect(failed.length).toBeGreaterThanOrEqual(4);
    expect(failed.every((e) => e.t < 1000)).toBe(true);
    expect(world.events.some((e) => e.type === 'agent.log' && e['msg'] === 'programmed' && e.t >= 1000)).toBe(true);
    expect(story(world.events)).toContain('1. t=0ms simulation starts: seed 4');
    expect(story(world.events).join('\n')).toMatch(/fault: every iptables command on node-1 fails for 1000ms \(Resource temporarily unavailable\)/);
  });
});

describe('watch.reset storms and slow handlers', () => {
  it('should break the watches count times, everyMs apart, each followed by a relist', async () => {
    const world = new World({ seed: 5, cluster: { nodes: [{ name: 'node-1' }] }, controller: annotator() });
    world.at(1000, { kind: 'watch.reset', node: 'node-1', count: 3, everyMs: 2000 });
    expect((await world.run(9000)).status).toBe('ok');
    expect(world.events.filter((e) => e.type === 'fault.watch.reset').map((e) => e.t)).toEqual([1000, 3000, 5000]);
    // Repeated 410s back the reflector off (client-go's backoff grows), so relists trail the resets.
    expect(world.events.filter((e) => e.type === 'kube.reflector.list' && Number(e['list']) > 1).length).toBeGreaterThanOrEqual(2);
    expect(story(world.events).join('\n')).toMatch(/fault: watches on node-1 break now \(410 Gone\) \[3 of 3\]/);
  });

  it('should slow the informers\' handlers for a while, then restore their pace', async () => {
    const world = new World({ seed: 6, cluster: { nodes: [{ name: 'node-1' }] }, controller: annotator() });
    world.at(1000, { kind: 'handlers.slow', node: 'node-1', delayMs: 700, durationMs: 3000 });
    world.at(1100, pod('web-0'));
    world.at(1150, pod('web-1'));
    world.at(6000, pod('web-2'));
    expect((await world.run(9000)).status).toBe('ok');
    const handled = (name: string): number => world.events.find((e) => e.type === 'kube.handler' && e['call'] === 'onAdd' && e['key'] === `default/${name}`)?.t ?? -1;
    expect(handled('web-1') - 1150).toBeGreaterThanOrEqual(700);
    expect(handled('web-2') - 6000).toBeLessThan(100);
    expect(story(world.events).join('\n')).toMatch(/fault: event handlers on node-1 take 700ms per change for 3000ms/);
  });
});

describe('service.update', () => {
  it('should replace ports, targetPorts (named too), type and policy, keep node ports by port number, and say what changed', async () => {
    const world = new World({ seed: 7, cluster: { nodes: [{ name: 'node-1' }], services: [{ name: 'web', type: 'NodePort', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] }] } });
    const before = world.api.get('Service', 'default', 'web');
    world.at(100, {
      kind: 'service.update',
      service: { name: 'web', type: 'NodePort', externalTrafficPolicy: 'Local', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }, { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP' }] },
    });
    world.at(200, { kind: 'service.update', service: { name: 'web', selector: { app: 'db' }, ports: [{ port: 80, targetPort: 8080, protocol: 'TCP' }], annotations: { 'nodeportlocal.antrea.io/enabled': 'true' } } });
    await world.run(150);
    const mid = world.api.get('Service', 'default', 'web');
    expect(mid.spec.externalTrafficPolicy).toBe('Local');
    expect(mid.spec.ports.map((p) => `${p.port}/${p.protocol}→${String(p.targetPort)}`)).toEqual(['80/TCP→http', '53/UDP→5353']);
    expect(mid.spec.ports[0]?.nodePort).toBe(before.spec.ports[0]?.nodePort);
    expect(mid.spec.clusterIP).toBe(before.spec.clusterIP);
    await world.run(300);
    const after = world.api.get('Service', 'default', 'web');
    expect(after.spec.type).toBe('ClusterIP');
    expect(after.spec.ports[0]?.nodePort).toBeUndefined();
    const lines = story(world.events).join('\n');
    expect(lines).toMatch(/service default\/web updated: ports http:80→8080\/TCP ⇒ http:80→http\/TCP,dns:53→5353\/UDP; externalTrafficPolicy Cluster ⇒ Local/);
    expect(lines).toMatch(/service default\/web updated: .*selector app=web ⇒ app=db; type NodePort ⇒ ClusterIP; externalTrafficPolicy Local ⇒ none; annotations \{\} ⇒ nodeportlocal\.antrea\.io\/enabled=true/);
  });
});

describe('errors caused by injected iptables failures', () => {
  /** Programs one rule at start and lets an iptables error escape, as an agent that exits on it. */
  const fragile: Controller<ControllerContext> = {
    name: 'fragile',
    create: (ctx) => ({
      start: async () => {
        await ctx.iptables.append('nat', 'POSTROUTING', '-j', 'MASQUERADE');
      },
    }),
  };

  it('should restart an agent whose start failed on an injected failure, not report a finding', async () => {
    const world = new World({ seed: 8, cluster: { nodes: [{ name: 'node-1' }] }, controller: fragile });
    world.at(0, { kind: 'iptables.fail', node: 'node-1', count: 1 });
    const outcome = await world.run(5000);
    expect(outcome.status).toBe('ok');
    expect(world.agent('node-1').incarnation).toBe(2);
    expect(formatSave(world.ruleset('node-1'))).toContain('-A POSTROUTING -j MASQUERADE');
  });

  it('should still report an error the world did not cause', async () => {
    const broken: Controller<ControllerContext> = { name: 'broken', create: (ctx) => ({ start: async () => void (await ctx.iptables.append('nat', 'NO-SUCH-CHAIN', '-j', 'ACCEPT')) }) };
    const world = new World({ seed: 8, cluster: { nodes: [{ name: 'node-1' }] }, controller: broken });
    const outcome = await world.run(5000);
    expect(outcome.status).toBe('finding');
  });
});
