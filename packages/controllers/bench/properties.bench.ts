/**
 * Property throughput of the reference controllers: generated histories checked per second by
 * `checkProperty` for each fixed variant (generation, run on the data plane with its probes, the
 * built-in invariants after every step, trace off as in a campaign), with the properties of
 * test/properties.ts. `pnpm bench controllers`. Numbers go to docs/performance.md.
 */
import { checkProperty, type SimulationProperty } from '@netsim/check';
import type { SimScenario } from '@netsim/sim';
import { IPTABLES_FAULTS, POD_CHURN, RESTARTS, WATCH_FAULTS, flannelProperty, kubeProxyProperty, nplProperty } from '../test/properties.ts';

const cases: { readonly label: string; readonly prop: SimulationProperty<SimScenario> }[] = [
  { label: 'npl:fixed, ≤8 churn/watch/restart actions, 20 s', prop: nplProperty('npl:fixed', [...POD_CHURN, ...WATCH_FAULTS, ...RESTARTS]) },
  { label: 'flannel:fixed, ≤6 churn/restart/fault actions, 30 s', prop: flannelProperty('flannel:fixed', [...POD_CHURN, ...RESTARTS, ...WATCH_FAULTS, ...IPTABLES_FAULTS]) },
  { label: 'kube-proxy:fixed, ≤6 churn/restart/watch actions, 20 s', prop: kubeProxyProperty('kube-proxy:fixed', [...POD_CHURN, ...RESTARTS, ...WATCH_FAULTS]) },
];
const numRuns = 200;
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
    if (round === 1) console.log(`${c.label.padEnd(56)} ${Math.round(numRuns / seconds).toLocaleString('en-US').padStart(5)} runs/s wall, ${Math.round(numRuns / cpuSeconds).toLocaleString('en-US').padStart(5)} runs per CPU-second`);
  }
}
