import { describe, expect, it } from 'vitest';
import '@netsim/check/vitest';
import { CONTROLLERS } from '@netsim/controllers';
import { World, noStaleDnat } from '@netsim/sim';

describe('netsim matchers in a user project', () => {
  it('should hold the invariants for the fixed agent and break them for the faulty one', async () => {
    const run = async (name: 'npl:fixed' | 'npl:faulty') => {
      const world = new World({ seed: 7, cluster: { nodes: [{ name: 'node-1' }] }, controller: CONTROLLERS[name]({}), invariants: [noStaleDnat({ chains: ['ANTREA-NODE-PORT-LOCAL'] })] });
      world.at(1000, { kind: 'pod.create', pod: { name: 'web-0', node: 'node-1', ports: [{ port: 8080, protocol: 'TCP' }] } });
      return { outcome: await world.run(5000), events: world.events, world };
    };
    expect(await run('npl:fixed')).toHoldInvariants();
    expect(await run('npl:fixed')).not.toBreakInvariant('no stale DNAT');
  });
});
