import { describe, expect, it } from 'vitest';
import { CONTROLLERS } from '../../src/index.ts';
import { isSimError, runScenario, story, toJsonLines, type SimScenario, type TimedAction } from '@netsim/sim';

// Several agents on one node: the controller under test and others alongside it (kube-proxy
// next to flannel), each its own process, sharing the node's rules.
function scenario(timeline: readonly TimedAction[], alongside: SimScenario['alongside'] = [{ name: 'kube-proxy:fixed' }]): SimScenario {
  return {
    format: 'netsim.sim-scenario/v1',
    seed: 1,
    cluster: {
      nodes: [{ name: 'node-1' }],
      services: [{ name: 'web', type: 'NodePort', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30080 }] }],
      pods: [{ name: 'web-0', node: 'node-1', labels: { app: 'web' }, ports: [{ port: 8080, protocol: 'TCP' }] }],
    },
    controller: { name: 'flannel:fixed' },
    alongside,
    timeline,
    probes: [{ kind: 'nodeport-health', service: 'web', everyMs: 500 }],
    horizonMs: 8000,
    settleMs: 3000,
  };
}

describe('agents alongside the controller under test', () => {
  it('should run each as its own agent on the node, both programming the same rules', async () => {
    const { outcome, events, world } = await runScenario(scenario([]), { controllers: CONTROLLERS });
    expect(outcome.status).toBe('ok');
    expect(world.agents('node-1').map((a) => a.name)).toEqual(['node-1/flanneld', 'node-1/kube-proxy']);
    const started = events.filter((e) => e.type === 'agent.start').map((e) => e['agent']);
    // Both start at t=0, in the order the seeded scheduler breaks the tie.
    expect([...started].sort()).toEqual(['node-1/flanneld', 'node-1/kube-proxy']);
    const nat = world.ruleset('node-1').tables.nat.chains;
    expect(nat['FLANNEL-POSTRTG']?.rules.length).toBeGreaterThan(0);
    expect(nat['KUBE-NODEPORTS']?.rules.length).toBeGreaterThan(0);
    expect(events.find((e) => e.type === 'sim.start')?.['alongside']).toEqual(['kube-proxy']);
  });

  it('should restart only the agent a timeline action names, and the controller under test by default', async () => {
    const { outcome, events } = await runScenario(
      scenario([
        { atMs: 2000, action: { kind: 'agent.restart', node: 'node-1', agent: 'kube-proxy', downMs: 500 } },
        { atMs: 5000, action: { kind: 'agent.crash', node: 'node-1', restartAfterMs: 100 } },
      ]),
      { controllers: CONTROLLERS },
    );
    expect(outcome.status).toBe('ok');
    const starts = events.filter((e) => e.type === 'agent.start').map((e) => `${JSON.stringify(e['agent'])}#${JSON.stringify(e['incarnation'])}`.replaceAll('"', ''));
    expect([...starts.slice(0, 2)].sort()).toEqual(['node-1/flanneld#1', 'node-1/kube-proxy#1']);
    expect(starts.slice(2)).toEqual(['node-1/kube-proxy#2', 'node-1/flanneld#2']);
    const lines = story(events).join('\n');
    expect(lines).toMatch(/fault: node-1\/kube-proxy is restarted gracefully \(down 500ms after it exits\)/);
    expect(lines).toMatch(/fault: the agent on node-1 is killed \(restarts 100ms later\)/);
  });

  it('should give byte-identical traces for the same seed with two agents per node', async () => {
    const s = scenario([{ atMs: 2000, action: { kind: 'agent.crash', node: 'node-1', agent: 'kube-proxy', restartAfterMs: 300 } }]);
    const a = await runScenario(s, { controllers: CONTROLLERS });
    const b = await runScenario(s, { controllers: CONTROLLERS });
    expect(toJsonLines(a.events)).toBe(toJsonLines(b.events));
    const other = await runScenario({ ...s, seed: 2 }, { controllers: CONTROLLERS });
    expect(toJsonLines(other.events)).not.toBe(toJsonLines(a.events));
  });

  it('should let a node say its own list (none, here), and refuse restarting an agent it does not run', async () => {
    const base = scenario([]);
    const twoNodes: SimScenario = { ...base, cluster: { ...base.cluster, nodes: [{ name: 'node-1' }, { name: 'node-2', alongside: [] }] } };
    const { outcome, world } = await runScenario(twoNodes, { controllers: CONTROLLERS });
    expect(outcome.status).toBe('ok');
    expect(world.agents('node-1').map((a) => a.name)).toEqual(['node-1/flanneld', 'node-1/kube-proxy']);
    expect(world.agents('node-2').map((a) => a.name)).toEqual(['node-2/flanneld']);
    expect(world.ruleset('node-2').tables.nat.chains['KUBE-NODEPORTS']).toBeUndefined();
    const wrong = runScenario({ ...twoNodes, timeline: [{ atMs: 1000, action: { kind: 'agent.restart', node: 'node-2', agent: 'kube-proxy', downMs: 0 } }] }, { controllers: CONTROLLERS });
    await expect(wrong).rejects.toSatisfy((e: unknown) => isSimError(e) && e.message.includes('(agents on node-2: node-2/flanneld)'));
  });

  it('should refuse an action naming an agent that does not run there, and two agents of one name', async () => {
    const wrong = runScenario(scenario([{ atMs: 1000, action: { kind: 'agent.restart', node: 'node-1', agent: 'antrea-agent', downMs: 0 } }]), { controllers: CONTROLLERS });
    await expect(wrong).rejects.toSatisfy((e: unknown) => isSimError(e) && e.message.includes('no agent "node-1/antrea-agent" (agents on node-1: node-1/flanneld, node-1/kube-proxy)') && JSON.stringify(e.path) === '["timeline",0,"action","agent"]');
    const twice = runScenario(scenario([], [{ name: 'flannel:faulty' }]), { controllers: CONTROLLERS });
    await expect(twice).rejects.toSatisfy((e: unknown) => isSimError(e) && e.message.includes('two agents would be named "node-1/flanneld"'));
    const unknown = runScenario(scenario([], [{ name: 'nope:fixed' }]), { controllers: CONTROLLERS });
    await expect(unknown).rejects.toSatisfy((e: unknown) => isSimError(e) && JSON.stringify(e.path) === '["alongside",0,"name"]');
  });
});

describe('alongside in scenario files', () => {
  it('should read alongside and an action naming an agent, and write them back the same', async () => {
    const { loadScenario, loadScenarioFile, serializeScenario } = await import('@netsim/scenario');
    const file = await loadScenarioFile(new URL('../../../../scenarios/kube-proxy-beside-flannel.yaml', import.meta.url).pathname);
    expect(file.scenario.alongside).toEqual([{ name: 'kube-proxy:fixed' }]);
    expect(file.scenario.timeline.map((t) => t.action)).toEqual([
      { kind: 'agent.restart', node: 'node-1', agent: 'kube-proxy', downMs: 1000 },
      { kind: 'agent.restart', node: 'node-1', agent: 'flanneld', downMs: 1000 },
    ]);
    const again = loadScenario(serializeScenario(file), { file: 'again.yaml' });
    expect(again.scenario).toEqual(file.scenario);
  });
});
