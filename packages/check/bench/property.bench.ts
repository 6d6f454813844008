/**
 * Property throughput: scenarios checked per second by `checkProperty` (generation, run, every
 * built-in invariant after every step, trace off as in a campaign) for small controllers:
 * 3 Pods on one node, at most 20 timeline actions. `pnpm bench property`.
 * Numbers go to docs/performance.md.
 *
 * Per property, three campaigns in a row on the same property object (as a long campaign runs):
 * the first 500 runs (cold: V8 has not optimised the simulator's code for this controller yet),
 * 2,000 runs of warm-up, then 1,000 runs measured warm. CPU time is the process's (user + system,
 * V8's GC threads included), the fair figure on a shared machine; wall time is printed too.
 */
import fc from 'fast-check';
import { loadavg } from 'node:os';
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

async function campaign(prop: (typeof cases)[number]['prop'], seed: number, numRuns: number): Promise<{ readonly wall: number; readonly cpu: number }> {
  const t0 = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  const r = await checkProperty(prop, { seed, numRuns });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  if (!r.ok) throw new Error(r.report);
  return { wall: numRuns / seconds, cpu: numRuns / ((cpu.user + cpu.system) / 1e6) };
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US').padStart(6);
console.log(`load average at start: ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log(`${'property'.padEnd(58)} ${'steps/run'.padStart(9)}  ${'first 500 runs: wall, per CPU-s'.padEnd(33)}  runs 2,501–3,500: wall, per CPU-s`);
for (const c of cases) {
  const cold = await campaign(c.prop, 1, 500);
  await campaign(c.prop, 2, 2000);
  const warm = await campaign(c.prop, 3, 1000);
  // Steps per run, over a separate sample of the same scenarios (after, and outside, the timing).
  let steps = 0;
  const sample = fc.sample(c.prop.scenarios, { seed: 99, numRuns: 100 });
  for (const s of sample) steps += (await c.prop.run(s, { trace: false })).outcome.steps;
  console.log(`${c.label.padEnd(58)} ${(steps / sample.length).toFixed(0).padStart(9)}  ${fmt(cold.wall)} runs/s, ${fmt(cold.cpu)} runs/CPU-s    ${fmt(warm.wall)} runs/s, ${fmt(warm.cpu)} runs/CPU-s`);
}
