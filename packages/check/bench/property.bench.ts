/**
 * Property throughput: scenarios checked per second by `checkProperty` (generation, run, every
 * built-in invariant after every step, trace off as in a campaign) for small controllers:
 * 3 Pods on one node, at most 20 timeline actions. `pnpm bench property`.
 * Numbers go to docs/performance.md.
 */
import type { ActionKind } from '@netsim/sim';
import { POD_CHURN, RESTARTS, WATCH_FAULTS, checkProperty, controllerProperty, scenarioArbitrary } from '../src/index.ts';
import { masqInvariants, nplInvariants, toyMasq, toyNpl } from '../test/fixtures/toys.ts';

const controllers = { 'npl-correct': () => toyNpl('correct'), 'masq-correct': () => toyMasq('correct') };
const invariants = [...nplInvariants, ...masqInvariants];

function property(name: string, kinds: readonly ActionKind[], horizonMs: number) {
  return controllerProperty({
    name,
    scenarios: scenarioArbitrary({
      controller: { name },
      cluster: { nodes: { min: 1, max: 1 }, initialPods: 3 },
      pods: { poolSize: 3, maxPorts: 2 },
      timeline: { kinds, maxActions: 20 },
      horizonMs,
      settleMs: 2000,
    }),
    controllers,
    invariants,
  });
}

const cases = [
  { label: 'masq toy, ≤20 churn/restart actions, 5 s horizon', prop: property('masq-correct', [...POD_CHURN, ...RESTARTS], 5000) },
  { label: 'npl toy, ≤20 churn actions, 5 s horizon', prop: property('npl-correct', POD_CHURN, 5000) },
  { label: 'npl toy, ≤20 churn/watch/restart actions, 5 s horizon', prop: property('npl-correct', [...POD_CHURN, ...WATCH_FAULTS, ...RESTARTS], 5000) },
];
const numRuns = 500;
for (let round = 0; round < 2; round++) {
  for (const c of cases) {
    const t0 = process.hrtime.bigint();
    const cpu0 = process.cpuUsage();
    const r = await checkProperty(c.prop, { seed: round + 1, numRuns });
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    if (!r.ok) throw new Error(r.report);
    // Round 0 warms the JIT; round 1 is reported. CPU time tells the work done on a shared machine.
    if (round === 1) console.log(`${c.label.padEnd(58)} ${Math.round(numRuns / seconds).toLocaleString('en-US').padStart(6)} runs/s wall, ${Math.round(numRuns / cpuSeconds).toLocaleString('en-US').padStart(6)} runs per CPU-second`);
  }
}
