import { describe, expect, it } from 'vitest';
import { World, agentsStayLive, builtinInvariants, noDuplicateRulesAnywhere, ownedChainsStayProgrammed, publishedMappingsServed, reachableChains, staleDnatAnywhere, type Action, type Controller, type ControllerContext, type RunOutcome } from '../src/index.ts';
import { freshRuleset, parseSave } from '@netsim/netfilter';
import { portmap } from './fixtures/portmap.ts';
import { toyProxy } from './fixtures/toyProxy.ts';

const pod = (name: string, port = 8080): Action => ({ kind: 'pod.create', pod: { name, node: 'node-1', labels: { app: 'web' }, ports: [{ port, protocol: 'TCP' }] } });

function violated(o: RunOutcome): string {
  return o.status === 'violation' ? `${o.violation.invariant}: ${o.violation.message}` : o.status;
}

async function run(controller: Controller<ControllerContext>, timeline: readonly [number, Action][], horizonMs = 15_000, extra: Partial<ConstructorParameters<typeof World>[0]> = {}): Promise<{ readonly world: World; readonly outcome: RunOutcome }> {
  const world = new World({ seed: 3, cluster: { nodes: [{ name: 'node-1' }], ipamPolicy: 'lowest-free' }, controller, invariants: builtinInvariants(), settleMs: 2000, trace: false, ...extra });
  for (const [t, a] of timeline) world.at(t, a);
  return { world, outcome: await world.run(horizonMs) };
}

describe('built-in oracles', () => {
  it('should find no chain unreachable from a hook reachable, and every jumped-to chain reachable', () => {
    const rs = parseSave(['*nat', ':PREROUTING ACCEPT [0:0]', ':INPUT ACCEPT [0:0]', ':OUTPUT ACCEPT [0:0]', ':POSTROUTING ACCEPT [0:0]', ':A - [0:0]', ':B - [0:0]', ':ORPHAN - [0:0]', '-A PREROUTING -j A', '-A A -g B', 'COMMIT', ''].join('\n'));
    expect(reachableChains(rs, 'nat')).toEqual(['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING', 'A', 'B']);
    expect(reachableChains(freshRuleset(), 'filter')).toEqual(['INPUT', 'FORWARD', 'OUTPUT']);
  });

  it('should pass a correct controller, having examined its rules, chains, mappings and agents', async () => {
    const { world, outcome } = await run(portmap(), [[500, pod('web-0')], [700, pod('web-1')], [4000, { kind: 'pod.delete', name: 'web-0' }], [6000, pod('web-2')]]);
    expect(violated(outcome)).toBe('ok');
    const cov = world.coverage();
    for (const name of ['no stale DNAT anywhere', 'no duplicate rules in any table', 'owned chains stay programmed', 'published mappings are served', 'agents stay live']) expect(cov[name]).toBeGreaterThan(0);
  });

  it('should catch a DNAT rule left behind in a chain of any name, naming the Pod that had the address', async () => {
    const { outcome } = await run(portmap({ keepGone: true }), [[500, pod('web-0')], [4000, { kind: 'pod.delete', name: 'web-0' }]]);
    expect(violated(outcome)).toMatch(/^no stale DNAT anywhere: DNAT tcp --dport 61000 → 198\.18\.\d+\.\d+:8080 in TOY-PORTMAP on node-1 is stale: 198\.18\.\d+\.\d+ was default\/web-0 \(uid [0-9a-f]{4}\) from t=\d+ms, and no Pod holds it now/);
  });

  it('should catch a Service proxy that keeps sending to a Pod port no selecting Service targets any more (targetPort or selector changed)', async () => {
    const web = { name: 'web', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' as const }] };
    const twoPorts = (name: string): Action => ({ kind: 'pod.create', pod: { name, node: 'node-1', labels: { app: 'web', 'statefulset.kubernetes.io/pod-name': name }, ports: [{ port: 8080, protocol: 'TCP' }, { port: 8081, protocol: 'TCP', name: 'alt' }] } });
    const retarget: Action = { kind: 'service.update', service: { ...web, ports: [{ name: 'http', port: 80, targetPort: 'alt', protocol: 'TCP' }] } };
    const narrow: Action = { kind: 'service.update', service: { ...web, selector: { app: 'web', 'statefulset.kubernetes.io/pod-name': 'web-0' } } };
    // The toy proxies node ports only: judged by "no stale DNAT" alone (its ClusterIPs would fail the probes).
    const extra = { cluster: { nodes: [{ name: 'node-1' }], ipamPolicy: 'lowest-free' as const, services: [web] }, invariants: [staleDnatAnywhere()] };
    for (const change of [retarget, narrow]) {
      const timeline: [number, Action][] = [[0, twoPorts('web-0')], [0, twoPorts('web-1')], [3000, change]];
      expect(violated((await run(toyProxy(), timeline, 10_000, extra)).outcome)).toBe('ok');
      const flawed = violated((await run(toyProxy({ firstSpecOnly: true }), timeline, 10_000, extra)).outcome);
      expect(flawed).toMatch(change === retarget ? /^no stale DNAT anywhere: DNAT tcp --dport 31080 → 198\.18\.0\.\d:8080 in TOY-SVC on node-1 is stale: .* belongs to default\/web-\d .*, and no Service selecting it targets port 8080\/TCP \(8081\/TCP\)/ : /^no stale DNAT anywhere: DNAT tcp --dport 31080 → 198\.18\.0\.\d:8080 in TOY-SVC on node-1 is stale: .* belongs to default\/web-1 .*, and no Service selecting it targets port 8080\/TCP \(none selects it\)/);
    }
  });

  it('should catch a DNAT rule to a reused IP: the address belongs to another Pod than the one the port was published for', async () => {
    // lowest-free IPAM hands web-0's address to web-1 at once.
    const { outcome } = await run(portmap({ keepGone: true }), [[500, pod('web-0')], [4000, { kind: 'pod.delete', name: 'web-0' }], [5100, pod('web-1')]], 15_000, { settleMs: 5000 });
    expect(violated(outcome)).toMatch(/^no stale DNAT anywhere: DNAT tcp --dport 61000 → (198\.18\.\d+\.\d+):8080 in TOY-PORTMAP on node-1 is stale: \1 belongs to default\/web-1 \(uid [0-9a-f]{4}\) since t=\d+ms, which publishes no mapping 61000 → 8080\/TCP/);
  });

  it('should catch a jump appended on every sync (duplicate rules in a built-in chain)', async () => {
    const { outcome } = await run(portmap({ blindJump: true }), [[500, pod('web-0')]]);
    expect(violated(outcome)).toMatch(/^no duplicate rules in any table: nat PREROUTING on node-1 holds the same rule at positions 1 and 2/);
  });

  it('should catch an owned chain that loses its hook', async () => {
    const { outcome } = await run(portmap({ dropsHook: true }), [[500, pod('web-0')]]);
    expect(violated(outcome)).toMatch(/^owned chains stay programmed: nat TOY-PORTMAP on node-1 is unhooked: PREROUTING no longer jumps to it/);
  });

  it('should fail a controller that publishes nothing for an eligible Pod', async () => {
    const { outcome } = await run(portmap({ silent: true }), [[500, pod('web-0')]]);
    expect(violated(outcome)).toMatch(/^published mappings are served: default\/web-0 on node-1 is eligible for a example\.com\/portmap mapping of port 8080\/TCP \(node-1\/portmap\), but publishes none/);
  });

  it('should say it examined nothing of a controller that declares nothing', async () => {
    const world = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: portmap({}, null), invariants: [ownedChainsStayProgrammed(), publishedMappingsServed(), staleDnatAnywhere(), noDuplicateRulesAnywhere(), agentsStayLive()], trace: false });
    world.at(500, pod('web-0'));
    await world.run(3000);
    const cov = world.coverage();
    expect(cov['owned chains stay programmed']).toBe(0);
    expect(cov['published mappings are served']).toBe(0);
    // Stale DNAT is defined from the world alone: it looked at the rules all the same.
    expect(cov['no stale DNAT anywhere']).toBeGreaterThan(0);
  });

  it('should fail an agent whose process fails on its own under the crash policy, naming the error', async () => {
    const crashy: Controller<ControllerContext> = { name: 'crashy', create: (ctx) => ({ start: async () => { await ctx.sleep(300); throw new Error('boom'); } }) };
    const { outcome } = await run(crashy, [], 20_000, { controllerErrors: 'crash' });
    expect(violated(outcome)).toMatch(/^agents stay live: node-1\/crashy's process failed on its own at t=300ms \([a-z-]+: .*boom.*\): a controller error, not an injected fault/);
  });
});
