// Plain JavaScript under node:test, as a user's project runs it: no TypeScript, no vitest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { World, noStaleDnat } from '@netsim/sim';
import { CONTROLLERS } from '@netsim/controllers';
import { assertBreaksInvariant, assertHoldsInvariants } from '@netsim/check';
import { formatSave, parseSave } from '@netsim/netfilter';
import { kubeProxyDump } from '@netsim/netfilter/testing';
import { loadScenarioFile, replay } from '@netsim/scenario';

const shipped = (name) => new URL(`./node_modules/@netsim/cli/dist/scenarios/${name}.yaml`, import.meta.url);

test('a World runs a reference controller and the run holds its invariants', async () => {
  const world = new World({ seed: 7, cluster: { nodes: [{ name: 'node-1' }] }, controller: CONTROLLERS['npl:fixed']({}), invariants: [noStaleDnat({ chains: ['ANTREA-NODE-PORT-LOCAL'] })] });
  world.at(1000, { kind: 'pod.create', pod: { name: 'web-0', node: 'node-1', ports: [{ port: 8080, protocol: 'TCP' }] } });
  const outcome = await world.run(5000);
  assertHoldsInvariants({ outcome, events: world.events, world });
  assert.equal(outcome.status, 'ok');
});

test('a shipped incident scenario breaks its invariant, and the assertion says so with the story', async () => {
  const file = await loadScenarioFile(shipped('npl-recreate-in-watch-gap-faulty').pathname);
  const result = await replay(file, { controllers: CONTROLLERS, trace: true });
  assert.equal(result.met, true);
  assertBreaksInvariant(result, 'no stale DNAT');
  assert.throws(() => assertHoldsInvariants(result), /expected the run to hold its invariants, but: invariant "no stale DNAT" violated[^]*\(seed 1\)[^]*\n1\. t=0ms simulation starts: seed 1/);
});

test('iptables-save text round-trips', () => {
  const dump = kubeProxyDump({ services: 3 });
  assert.equal(formatSave(parseSave(formatSave(parseSave(dump)))), formatSave(parseSave(dump)));
});
