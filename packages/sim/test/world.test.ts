import { describe, expect, it } from 'vitest';
import { World, renderTrace, story, toJsonLines, type Action, type Controller, type ControllerContext } from '../src/index.ts';
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

  it('should tolerate actions on objects that do not exist, saying so in the trace', async () => {
    const world = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: annotator() });
    world.at(10, { kind: 'pod.delete', name: 'ghost' });
    expect((await world.run(100)).status).toBe('ok');
    expect(story(world.events)).toContain('4. t=10ms (pod.delete skipped: pods "ghost" not found)');
  });
});
