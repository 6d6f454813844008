/**
 * Scale: 100 nodes × 50 Pods with a NodePortLocal-like controller on every node, and 5,000
 * agent restarts (crashes) spread over the run. Reports wall time, steps (events) per second
 * and peak memory. `pnpm bench scale`. Numbers go to docs/performance.md.
 */
import { World, type Action, type PodSpec } from '@netsim/sim';
import { toyNpl } from '../test/fixtures/toys.ts';

const NODES = 100;
const PODS_PER_NODE = 50;
const RESTARTS = 5000;
const HORIZON_MS = 600_000;

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

gc();
const baseRss = process.memoryUsage().rss;
let peakRss = baseRss;
let peakHeap = 0;
const sample = (): void => {
  const m = process.memoryUsage();
  if (m.rss > peakRss) peakRss = m.rss;
  if (m.heapUsed > peakHeap) peakHeap = m.heapUsed;
};

const nodes = Array.from({ length: NODES }, (_, i) => ({ name: `node-${i + 1}` }));
const pods: PodSpec[] = [];
for (const n of nodes) for (let k = 0; k < PODS_PER_NODE; k++) pods.push({ name: `${n.name}-web-${k}`, node: n.name, labels: { app: 'web' }, ports: [{ port: 8080, protocol: 'TCP' }, { port: 9090, protocol: 'TCP' }] });

const t0 = process.hrtime.bigint();
const cpu0 = process.cpuUsage();
const world = new World({ seed: 1, trace: false, cluster: { nodes, pods, nodeCidrMaskSize: 24 }, controller: toyNpl('correct'), bounds: { maxSteps: 50_000_000 } });
// Restarts: round-robin over nodes, evenly spread after the initial programming.
for (let i = 0; i < RESTARTS; i++) {
  const action: Action = { kind: 'agent.crash', node: `node-${(i % NODES) + 1}`, restartAfterMs: 500 };
  world.at(10_000 + Math.floor((i * (HORIZON_MS - 20_000)) / RESTARTS), action);
}
const built = process.hrtime.bigint();
let steps = 0;
for (let t = 10_000; t <= HORIZON_MS; t += 10_000) {
  const o = await world.run(t);
  if (o.status !== 'ok') throw new Error(`scale run ended ${o.status}`);
  steps = o.steps;
  sample();
}
const end = process.hrtime.bigint();
const cpu = process.cpuUsage(cpu0);
gc();
const retainedHeap = process.memoryUsage().heapUsed;
const seconds = Number(end - t0) / 1e9;
const rules = nodes.reduce((n, node) => n + (world.ruleset(node.name).tables.nat.chains['TOY-NPL']?.rules.length ?? 0), 0);
console.log(`${NODES} nodes × ${PODS_PER_NODE} Pods, ${RESTARTS} restarts, ${HORIZON_MS / 1000} s simulated`);
console.log(`  wall time            ${seconds.toFixed(2)} s (world built in ${(Number(built - t0) / 1e9).toFixed(2)} s), CPU time ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s`);
console.log(`  steps                ${steps.toLocaleString('en-US')} (${Math.round(steps / seconds).toLocaleString('en-US')} steps/s)`);
console.log(`  DNAT rules at end    ${rules.toLocaleString('en-US')} (expected ${(NODES * PODS_PER_NODE * 2).toLocaleString('en-US')})`);
console.log(`  peak RSS             ${Math.round(peakRss / 2 ** 20)} MiB (peak heap ${Math.round(peakHeap / 2 ** 20)} MiB, garbage included)`);
console.log(`  heap after GC        ${Math.round(retainedHeap / 2 ** 20)} MiB (what the world retains at the end)`);
