/**
 * `sessionAffinity: ClientIP`: kube-proxy's `-m recent` rules keep every connection of one client
 * on one endpoint while endpoints come and go, and move it (once) when its endpoint goes away.
 * Without affinity the same client is spread over the endpoints.
 */
import { describe, expect, it } from 'vitest';
import { World } from '@netsim/sim';
import { kubeProxy } from '../../src/index.ts';
import { chainLines } from '../helpers.ts';

const port = { port: 8080, protocol: 'TCP' as const };

function world(affinity: 'ClientIP' | 'None'): World {
  const w = new World({
    seed: 1,
    cluster: {
      nodes: [{ name: 'node-1' }, { name: 'node-2' }],
      services: [{ name: 'web', type: 'NodePort', sessionAffinity: affinity, ...(affinity === 'ClientIP' ? { sessionAffinityTimeoutSeconds: 60 } : {}), selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30080 }] }],
    },
    controller: kubeProxy('fixed'),
    probes: [{ kind: 'connect', from: { host: 'lb' }, to: '192.0.2.11', port: 30080, everyMs: 250 }],
  });
  // scenarios/nodeport-session-affinity.yaml: two replicas, then four, then two again.
  w.at(0, { kind: 'workload.scale', name: 'web', replicas: 2, nodes: ['node-1', 'node-2'], labels: { app: 'web' }, ports: [port] });
  w.at(3000, { kind: 'workload.scale', name: 'web', replicas: 4, nodes: ['node-1', 'node-2'], labels: { app: 'web' }, ports: [port] });
  w.at(6000, { kind: 'workload.scale', name: 'web', replicas: 2, nodes: ['node-1', 'node-2'], labels: { app: 'web' }, ports: [port] });
  return w;
}

/** The Pod that answered each successful connection, in order. */
async function answers(w: World, untilMs: number): Promise<string[]> {
  const seen: string[] = [];
  let last = -1;
  w.engine.onAfterStep(() => {
    for (const p of w.view.probes()) {
      if (p.atMs === last || !p.ok) continue;
      last = p.atMs;
      seen.push(/accepted by (\S+)/.exec(p.detail)?.[1] ?? '?');
    }
  });
  expect((await w.run(untilMs)).status).toBe('ok');
  return seen;
}

describe('kube-proxy sessionAffinity: ClientIP', () => {
  it('should write the recent checks before the random choice and the recent set in each endpoint chain, as kube-proxy does', async () => {
    const w = world('ClientIP');
    await w.run(2500);
    const svc = chainLines(w.ruleset('node-1'), 'nat', 'KUBE-SVC-CDGGSHYLG3RE2FKL');
    expect(svc.slice(1, 3).every((l) => / -m recent --rcheck --seconds 60 --reap --name (KUBE-SEP-[A-Z2-7]{16}) --mask 255\.255\.255\.255 --rsource -j \1$/.test(l))).toBe(true);
    expect(svc[3]).toContain('-m statistic --mode random --probability 0.50000000000');
    const sep = /-j (KUBE-SEP-[A-Z2-7]{16})$/.exec(svc[1] ?? '')?.[1] ?? '';
    expect(chainLines(w.ruleset('node-1'), 'nat', sep)[1]).toMatch(new RegExp(`-m recent --set --name ${sep} --mask 255\\.255\\.255\\.255 --rsource -m tcp -j DNAT --to-destination 198\\.18\\.\\d+\\.\\d+:8080$`));
  });

  it('should keep one client on one endpoint across endpoint churn', async () => {
    const seen = await answers(world('ClientIP'), 9000);
    expect(seen.length).toBeGreaterThan(20);
    expect(new Set(seen).size).toBe(1);
  });

  it('should spread the same client over the endpoints without affinity', async () => {
    const seen = await answers(world('None'), 9000);
    expect(new Set(seen).size).toBeGreaterThan(1);
  });
});
