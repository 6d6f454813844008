// Type-checked by strict tsc with moduleResolution NodeNext, Node16 and Bundler; no other flags.
import { World, noStaleDnat, story, type Controller, type ControllerContext, type Invariant, type RunOutcome } from '@netsim/sim';
import { CONTROLLERS } from '@netsim/controllers';
import { assertHoldsInvariants, checkProperty, controllerProperty, scenarioArbitrary, POD_CHURN, type CheckResult } from '@netsim/check';
import '@netsim/check/vitest';
import { parseSave, type Ruleset } from '@netsim/netfilter';
import { kubeProxyDump } from '@netsim/netfilter/testing';
import { loadScenarioFile, replay, type ReplayResult } from '@netsim/scenario';
import type { Pod } from '@netsim/kube';
import type { Host } from '@netsim/kernel';

const mine: Controller<ControllerContext> = {
  name: 'mine',
  create: () => ({ start: () => undefined }),
};
const fewRules: Invariant = {
  name: 'at most 100 rules in MINE',
  check: (view) => (view.nodes.some((n) => (view.ruleset(n.name).tables.nat.chains['MINE']?.rules.length ?? 0) > 100) ? 'too many rules' : undefined),
};

export async function all(): Promise<readonly unknown[]> {
  const world = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: mine, invariants: [fewRules, noStaleDnat({ chains: ['MINE'] })] });
  const outcome: RunOutcome = await world.run(1000);
  assertHoldsInvariants({ outcome, events: world.events });
  const property = controllerProperty({ name: 'p', scenarios: scenarioArbitrary({ controller: { name: 'npl:fixed' }, timeline: { kinds: [...POD_CHURN] } }), controllers: CONTROLLERS, invariants: [fewRules] });
  const result: CheckResult<unknown> = await checkProperty(property, { seed: 1, numRuns: 1 });
  const rules: Ruleset = parseSave(kubeProxyDump({ services: 1 }));
  const replayed: ReplayResult = await replay(await loadScenarioFile('x.yaml'), { controllers: CONTROLLERS });
  const pod: Pod | undefined = undefined;
  const host: Host | undefined = undefined;
  return [story(world.events), result, rules, replayed, pod, host];
}
