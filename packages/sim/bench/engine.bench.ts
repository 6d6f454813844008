/**
 * Engine throughput: plain steps (the scheduler alone) and task steps (async controller code
 * parking on world calls). `pnpm bench engine`. Numbers go to docs/performance.md.
 */
import { Engine } from '../src/index.ts';

/** CPU milliseconds of this process since `t0` (wall time would count other processes on a shared machine). */
function ms(t0: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(t0);
  return (u.user + u.system) / 1000;
}

async function plainSteps(n: number): Promise<number> {
  const engine = new Engine({ seed: 1, trace: false, bounds: { maxSteps: n + 10 } });
  let left = n;
  // Four independent chains so the ready set often holds ties for the PRNG to break.
  for (let c = 0; c < 4; c++) {
    const tick = (): void => {
      if (--left > 0) engine.after(c % 2, { kind: 'x', label: 'tick' }, tick);
    };
    engine.after(0, { kind: 'x', label: 'tick' }, tick);
  }
  const t0 = process.cpuUsage();
  const o = await engine.run();
  const elapsed = ms(t0);
  return o.steps / (elapsed / 1000);
}

async function taskSteps(n: number): Promise<number> {
  const engine = new Engine({ seed: 1, trace: false, bounds: { maxSteps: n * 2 } });
  for (let c = 0; c < 4; c++) {
    engine.spawn(`node-${c}/agent`, 'loop', 0, async () => {
      for (let i = 0; i < n / 4; i++) await engine.call({ kind: 'call', label: 'op', delayMs: i % 2 }, () => i);
    });
  }
  const t0 = process.cpuUsage();
  const o = await engine.run();
  const elapsed = ms(t0);
  return o.steps / (elapsed / 1000);
}

async function tracedSteps(n: number): Promise<number> {
  const engine = new Engine({ seed: 1, trace: true, bounds: { maxSteps: n * 2 } });
  for (let c = 0; c < 4; c++) {
    engine.spawn(`node-${c}/agent`, 'loop', 0, async () => {
      for (let i = 0; i < n / 4; i++) await engine.call({ kind: 'call', label: 'op', delayMs: i % 2 }, () => engine.emit('x.op', { i }));
    });
  }
  const t0 = process.cpuUsage();
  const o = await engine.run();
  const elapsed = ms(t0);
  return o.steps / (elapsed / 1000);
}

const fmt = (x: number): string => `${Math.round(x).toLocaleString('en-US')} steps/s`;
for (let round = 0; round < 2; round++) {
  // Round 0 warms the JIT; round 1 is reported.
  const a = await plainSteps(400_000);
  const b = await taskSteps(200_000);
  const c = await tracedSteps(200_000);
  if (round === 1) {
    console.log('per CPU-second:');
    console.log(`plain steps (scheduler only)        ${fmt(a)}`);
    console.log(`task steps (async world calls)      ${fmt(b)}`);
    console.log(`task steps with trace on            ${fmt(c)}`);
  }
}
