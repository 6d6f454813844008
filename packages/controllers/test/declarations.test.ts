/**
 * Each reference controller's declaration says what it really programs and publishes: after a
 * run, every owned chain exists on every node, is jumped to from the chains it names and holds
 * its required target, and the published annotation reads back as the mappings in the chain.
 */
import { describe, expect, it } from 'vitest';
import type { Ruleset } from '@netsim/netfilter';
import { World, type Controller, type ControllerContext, type ControllerDeclaration } from '@netsim/sim';
import { CONTROLLERS, NPL_ANNOTATION, NPL_CHAIN, nplEligiblePorts, parseNplMappings, type ControllerName } from '../src/index.ts';
import { EIGHT_PORTS, chainLines, nplService } from './helpers.ts';

function jumpsTo(rs: Ruleset, table: keyof Ruleset['tables'], from: string, to: string): boolean {
  return (rs.tables[table].chains[from]?.rules ?? []).some((r) => r.target?.kind === 'jump' && r.target.chain === to);
}

function checkOwnedChains(w: World, decl: ControllerDeclaration, nodes: readonly string[]): void {
  const owned = decl.ownedChains ?? [];
  expect(owned.length).toBeGreaterThan(0);
  for (const node of nodes) {
    const rs = w.ruleset(node);
    for (const c of owned) {
      const chain = rs.tables[c.table].chains[c.chain];
      expect(chain, `${node}: ${c.table} ${c.chain}`).toBeDefined();
      for (const from of c.hookedFrom ?? []) expect(jumpsTo(rs, c.table, from, c.chain), `${node}: ${c.table} ${from} -j ${c.chain}`).toBe(true);
      if (c.requiredTarget !== undefined) expect(chain?.rules.some((r) => r.target?.kind === c.requiredTarget), `${node}: ${c.chain} has ${c.requiredTarget}`).toBe(true);
    }
  }
}

const cluster = {
  nodes: [{ name: 'node-1' }, { name: 'node-2' }],
  services: [nplService, { name: 'np', type: 'NodePort' as const, selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' as const, nodePort: 30080 }] }],
  pods: [{ name: 'web-0', node: 'node-1', labels: { app: 'web' }, ports: EIGHT_PORTS }],
};

async function run(name: ControllerName): Promise<{ readonly w: World; readonly c: Controller<ControllerContext> }> {
  const c = CONTROLLERS[name]({});
  const w = new World({ seed: 1, cluster, controller: c });
  expect(await w.run(8000)).toMatchObject({ status: 'ok' });
  return { w, c };
}

describe('controller declarations', () => {
  for (const name of ['npl:fixed', 'flannel:fixed', 'kube-proxy:fixed', 'flannel:faulty', 'npl:faulty'] as const) {
    it(`${name}: every owned chain is programmed, hooked and holds its required target`, async () => {
      const { w, c } = await run(name);
      expect(c.declares?.maxBackoffMs).toBeGreaterThan(0);
      checkOwnedChains(w, c.declares ?? {}, ['node-1', 'node-2']);
    });
  }

  it('kube-proxy:faulty declares what the fixed one declares', () => {
    expect(CONTROLLERS['kube-proxy:faulty']({}).declares?.ownedChains).toEqual(CONTROLLERS['kube-proxy:fixed']({}).declares?.ownedChains);
    expect(CONTROLLERS['kube-proxy:fixed']({ syncPeriodMs: 7000 }).declares?.maxBackoffMs).toBe(7000);
    expect(CONTROLLERS['flannel:fixed']({ resyncMs: 4000 }).declares?.maxBackoffMs).toBe(4000);
    expect(CONTROLLERS['npl:fixed']({}).declares?.maxBackoffMs).toBe(120_000);
  });

  it('npl:fixed: the declared annotation reads back as exactly the DNAT rules of its chain', async () => {
    const { w, c } = await run('npl:fixed');
    const ann = c.declares?.annotations?.[0];
    expect(ann?.key).toBe(NPL_ANNOTATION);
    const pod = w.api.get('Pod', 'default', 'web-0');
    const mappings = ann?.parse(pod.metadata.annotations[NPL_ANNOTATION] ?? '') ?? [];
    expect(mappings).toHaveLength(8);
    const rules = chainLines(w.ruleset('node-1'), 'nat', NPL_CHAIN).sort();
    expect(rules).toEqual(mappings.map((m) => `-A ${NPL_CHAIN} -p tcp -m tcp --dport ${m.nodePort} -j DNAT --to-destination ${pod.status.podIP ?? ''}:${m.podPort}`).sort());
  });

  it('nplEligiblePorts owes a Pod exactly the ports npl:fixed publishes for it', async () => {
    const { w, c } = await run('npl:fixed');
    const pod = w.api.get('Pod', 'default', 'web-0');
    const services = w.api.list('Service').items;
    const eligible = nplEligiblePorts(pod, services);
    expect(eligible).toEqual([8080, 8081, 8082, 8083, 8084, 8085, 8086, 8087].map((podPort) => ({ podPort, protocol: 'TCP' })));
    const published = c.declares?.annotations?.[0]?.parse(pod.metadata.annotations[NPL_ANNOTATION] ?? '') ?? [];
    expect(published.map((m) => ({ podPort: m.podPort, protocol: m.protocol })).sort((a, b) => a.podPort - b.podPort)).toEqual(eligible);
    // No IP, no mapping owed; a NodePort Service or one without the annotation owes nothing.
    expect(nplEligiblePorts({ ...pod, status: { ...pod.status, podIP: '' } }, services)).toEqual([]);
    expect(nplEligiblePorts(pod, services.filter((s) => s.metadata.name === 'np'))).toEqual([]);
  });

  it('parseNplMappings reads protocols in upper case and refuses what Antrea cannot have written', () => {
    expect(parseNplMappings('[{"podPort":53,"nodeIP":"192.0.2.11","nodePort":61001,"protocol":"udp"}]')).toEqual([{ protocol: 'UDP', nodePort: 61001, podPort: 53 }]);
    expect(parseNplMappings('[]')).toEqual([]);
    expect(parseNplMappings('{"podPort":53}')).toBeUndefined();
    expect(parseNplMappings('not json')).toBeUndefined();
    expect(parseNplMappings('[{"podPort":53,"nodeIP":"192.0.2.11","nodePort":61001,"protocol":"sctp"}]')).toBeUndefined();
    expect(parseNplMappings('[{"podPort":53,"nodeIP":"192.0.2.11","protocol":"tcp"}]')).toBeUndefined();
  });
});
