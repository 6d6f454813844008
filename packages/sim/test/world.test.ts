import { describe, expect, it } from 'vitest';
import { SIM_SCENARIO_FORMAT, World, isSimError, renderTrace, runScenario, story, toJsonLines, type Action, type Controller, type ControllerContext, type SimScenario } from '../src/index.ts';
import { SEEN_IP, annotator } from './fixtures/annotator.ts';

const pod = (name: string, node = 'node-1'): Action => ({ kind: 'pod.create', pod: { name, node, labels: { app: 'web' }, ports: [{ port: 8080, protocol: 'TCP' }] } });

function annotations(world: World): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const p of world.api.list('Pod').items) out[p.metadata.name] = p.metadata.annotations[SEEN_IP] === p.status.podIP ? 'ok' : `stale:${p.metadata.annotations[SEEN_IP] ?? 'none'}`;
  return out;
}

describe('World', () => {
  it('should run a controller with informers, a workqueue and a kube client to convergence', async () => {
    const world = new World({ seed: 3, cluster: { nodes: [{ name: 'node-1' }, { name: 'node-2' }] }, controller: annotator() });
    world.at(100, pod('web-0'));
    world.at(150, pod('web-1', 'node-2'));
    world.at(200, pod('web-2'));
    const outcome = await world.run(5000);
    expect(outcome.status).toBe('ok');
    expect(annotations(world)).toEqual({ 'web-0': 'ok', 'web-1': 'ok', 'web-2': 'ok' });
    expect(world.node('node-1')).toEqual({ name: 'node-1', ip: '192.0.2.11', podCidr: expect.stringMatching(/^198\.18\.\d+\.0\/24$/) as unknown });
  });

  it('should produce the same trace bytes for the same seed and a different one for another seed', async () => {
    const run = async (seed: number): Promise<string> => {
      const world = new World({ seed, cluster: { nodes: [{ name: 'node-1' }] }, controller: annotator() });
      for (let i = 0; i < 4; i++) world.at(100 + i * 10, pod(`web-${i}`));
      world.at(400, { kind: 'agent.crash', node: 'node-1', restartAfterMs: 200 });
      await world.run(3000);
      return toJsonLines(world.events);
    };
    const a = await run(9);
    expect(await run(9)).toBe(a);
    expect(await run(10)).not.toBe(a);
  });

  it('should deliver a same-name recreate during a watch gap as one update with a new uid', async () => {
    const world = new World({ seed: 5, cluster: { nodes: [{ name: 'node-1' }] }, controller: annotator() });
    world.at(100, pod('web-0'));
    world.at(2000, { kind: 'watch.gap', node: 'node-1', durationMs: 3000 });
    world.at(2100, { kind: 'pod.recreate', name: 'web-0', gapMs: 500 });
    const outcome = await world.run(15_000);
    expect(outcome.status).toBe('ok');
    const logs = world.events.filter((e) => e.type === 'agent.log').map((e) => e['msg']);
    expect(logs).toContain('uid changed under one key');
    expect(logs).not.toContain('delete');
    expect(annotations(world)).toEqual({ 'web-0': 'ok' });
    const lines = story(world.events);
    expect(lines.some((l) => /relists/.test(l))).toBe(true);
    expect(lines.some((l) => /onUpdate default\/web-0 uid [0-9a-f]{4}→[0-9a-f]{4}/.test(l))).toBe(true);
  });

  it('should lose process state on a crash and rebuild it from a fresh list on restart', async () => {
    const world = new World({ seed: 7, cluster: { nodes: [{ name: 'node-1' }] }, controller: annotator() });
    world.at(100, pod('web-0'));
    world.at(1500, { kind: 'agent.crash', node: 'node-1', restartAfterMs: 1000 });
    world.at(1800, pod('web-1'));
    const outcome = await world.run(8000);
    expect(outcome.status).toBe('ok');
    expect(world.agent('node-1').incarnation).toBe(2);
    expect(annotations(world)).toEqual({ 'web-0': 'ok', 'web-1': 'ok' });
    const text = renderTrace(world.events, { level: 'story' });
    expect(text).toMatch(/node-1\/annotator crashes: fault injected/);
    expect(text).toMatch(/node-1\/annotator starts \(process #2\)/);
  });

  it('should run the SIGTERM handler on a graceful restart', async () => {
    const world = new World({ seed: 7, cluster: { nodes: [{ name: 'node-1' }] }, controller: annotator() });
    world.at(1000, { kind: 'agent.restart', node: 'node-1', downMs: 500 });
    await world.run(3000);
    const exits = world.events.filter((e) => e.type === 'agent.exit').map((e) => `${JSON.stringify(e['reason'])}@${e.t}`);
    expect(exits).toEqual(['"stopped"@1000']);
    expect(world.agent('node-1').incarnation).toBe(2);
  });

  it('should skip a create of a Pod that exists (also at the end of a recreate gap) with the API server\'s own message', async () => {
    const world = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] } });
    world.at(10, pod('web-0'));
    world.at(20, pod('web-0'));
    world.at(30, { kind: 'pod.recreate', name: 'web-0', gapMs: 50 });
    world.at(40, pod('web-0'));
    expect((await world.run(200)).status).toBe('ok');
    const skipped = world.events.filter((e) => e.type === 'world.action-skipped').map((e) => `${e.t} ${JSON.stringify(e['action'])}: ${JSON.stringify(e['reason'])}`);
    let apiMessage = '';
    try {
      world.api.create('Pod', { metadata: { name: 'web-0' }, spec: { nodeName: 'node-1', containers: [{ name: 'main' }] } });
    } catch (e) {
      apiMessage = (e as Error).message;
    }
    expect(apiMessage).toBe('pods "web-0" already exists');
    expect(skipped).toEqual([`20 "pod.create": ${JSON.stringify(apiMessage)}`, `80 "pod.create": ${JSON.stringify(apiMessage)}`]);
  });

  it('should keep a context live: stopping turns true at SIGTERM, its functions work detached, and the view follows the clock', async () => {
    const seen: string[] = [];
    const controller: Controller<ControllerContext> = {
      name: 'probe',
      create: (ctx) => {
        // eslint-disable-next-line @typescript-eslint/unbound-method -- what the test checks: they are closures, usable detached
        const { sleep, now } = ctx;
        return {
          start: async () => {
            seen.push(`start#${ctx.incarnation} on ${ctx.nodeInfo.name} stopping=${String(ctx.stopping)}`);
            await sleep(10);
            seen.push(`slept to ${now()}`);
          },
          stop: () => {
            seen.push(`stop#${ctx.incarnation} stopping=${String(ctx.stopping)}`);
          },
        };
      },
    };
    const world = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller });
    world.at(500, { kind: 'agent.restart', node: 'node-1', downMs: 100 });
    await world.run(1000);
    expect(seen).toEqual(['start#1 on node-1 stopping=false', 'slept to 10', 'stop#1 stopping=true', 'start#2 on node-1 stopping=false', 'slept to 610']);
    expect(world.view.nowMs).toBe(1000);
    expect(world.view.lastDisruptionMs).toBe(600);
  });

  it('should report a controller error as a finding by default, and restart the agent under the crash policy', async () => {
    const finding = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: annotator({ failOn: 'web-0' }) });
    finding.at(100, pod('web-0'));
    const o1 = await finding.run(5000);
    expect(o1).toMatchObject({ status: 'finding', finding: { kind: 'controller-threw', agent: 'node-1/annotator#1', task: 'worker' } });
    expect(o1.status === 'finding' && o1.finding.message).toMatch(/cannot handle default\/web-0/);

    const crash = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: annotator({ failOn: 'web-0' }), controllerErrors: 'crash', agent: { restartDelayMs: 1000 } });
    crash.at(100, pod('web-0'));
    const o2 = await crash.run(5000);
    expect(o2.status).toBe('ok');
    expect(crash.agent('node-1').incarnation).toBeGreaterThan(2);
  });

  it('should run the controller given for a node there and the default one elsewhere', async () => {
    const world = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }, { name: 'node-2' }] }, controller: annotator(), controllers: { 'node-2': annotator({ failOn: 'web-1' }) } });
    world.at(100, pod('web-0'));
    world.at(2000, pod('web-1', 'node-2'));
    const o = await world.run(5000);
    // Only node-2's controller refuses web-1; node-1's annotated web-0 meanwhile.
    expect(o).toMatchObject({ status: 'finding', finding: { kind: 'controller-threw', agent: 'node-2/annotator#1' } });
    expect(annotations(world)['web-0']).toBe('ok');
    expect(() => new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: annotator(), controllers: { 'node-9': annotator() } })).toThrow('controllers: no node "node-9" in the cluster');
  });

  it('should resolve the controller of a scenario node by registry name with its options, and refuse an unregistered one', async () => {
    const scenario: SimScenario = {
      format: SIM_SCENARIO_FORMAT,
      seed: 1,
      cluster: { nodes: [{ name: 'node-1' }, { name: 'node-2', controller: { name: 'strict', options: { failOn: 'web-1' } } }] },
      controller: { name: 'lenient' },
      timeline: [
        { atMs: 100, action: pod('web-0') },
        { atMs: 100, action: pod('web-1', 'node-2') },
      ],
      horizonMs: 5000,
      settleMs: 1000,
    };
    const controllers = { lenient: () => annotator(), strict: (o: { readonly [k: string]: unknown }) => annotator({ failOn: String(o['failOn']) }) };
    const r = await runScenario(scenario, { controllers });
    expect(r.outcome).toMatchObject({ status: 'finding', finding: { agent: 'node-2/annotator#1' } });
    const err = await runScenario(scenario, { controllers: { lenient: controllers.lenient } }).catch((e: unknown) => e);
    expect(isSimError(err) && err.message).toBe('scenario node node-2: controller "strict" is not registered (registered: lenient)');
  });

  it('should scale a workload as a Parallel StatefulSet: missing ordinals created on the nodes in turn, the highest deleted first', async () => {
    const world = new World({ seed: 2, cluster: { nodes: [{ name: 'node-1' }, { name: 'node-2' }] }, controller: annotator() });
    const scale = (replicas: number): Action => ({ kind: 'workload.scale', name: 'web', replicas, nodes: ['node-1', 'node-2'], labels: { app: 'web' }, ports: [{ port: 8080, protocol: 'TCP' }] });
    world.at(100, pod('web-1', 'node-2'));
    world.at(200, scale(3));
    world.at(1500, scale(1));
    world.at(1500, pod('webx-9'));
    let atScaleUp: { name: string; node: string | undefined }[] = [];
    world.engine.at(1000, { kind: 'action', label: 'look' }, () => {
      atScaleUp = world.api
        .list('Pod')
        .items.map((p) => ({ name: p.metadata.name, node: p.spec.nodeName }))
        .sort((a, b) => a.name.localeCompare(b.name));
    });
    expect((await world.run(3000)).status).toBe('ok');
    // web-1 existed (on node-2, where the user put it); web-0 and web-2 were made, on nodes[0 % 2] and nodes[2 % 2].
    expect(atScaleUp).toEqual([
      { name: 'web-0', node: 'node-1' },
      { name: 'web-1', node: 'node-2' },
      { name: 'web-2', node: 'node-1' },
    ]);
    // Scaling to 1 keeps web-0 only; webx-9 is another workload's name.
    expect(world.api.list('Pod').items.map((p) => p.metadata.name).sort()).toEqual(['web-0', 'webx-9']);
    const lines = story(world.events);
    expect(lines.filter((l) => /workload|pod default\/web-\d (deleted|created)/.test(l)).map((l) => l.replace(/^\d+\. /, ''))).toEqual([
      't=100ms pod default/web-1 created on node-2 (ports 8080/TCP)',
      't=200ms workload default/web scaled from 1 to 3 Pods',
      't=200ms pod default/web-0 created on node-1 (ports 8080/TCP)',
      't=200ms pod default/web-2 created on node-1 (ports 8080/TCP)',
      't=1500ms workload default/web scaled from 3 to 1 Pods',
      't=1500ms pod default/web-2 deleted',
      't=1500ms pod default/web-1 deleted',
    ]);
  });

  it('should tolerate actions on objects that do not exist, saying so in the trace', async () => {
    const world = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: annotator() });
    world.at(10, { kind: 'pod.delete', name: 'ghost' });
    expect((await world.run(100)).status).toBe('ok');
    expect(story(world.events)).toContain('4. t=10ms (pod.delete skipped: pods "ghost" not found)');
  });
});
