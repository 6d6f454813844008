import { describe, expect, it } from 'vitest';
import { Engine, isSimError, toJsonLines, type RunOutcome } from '../src/index.ts';

function labelsOf(engine: Engine, type = 'sim.step'): string[] {
  return engine.events.filter((e) => e.type === type).map((e) => JSON.stringify(e['label']));
}

async function tieOrder(seed: number, opts: { path?: number[]; whenPathExhausted?: 'prng' | 'fifo' } = {}): Promise<{ order: string[]; outcome: RunOutcome }> {
  const engine = new Engine({ seed, ...opts });
  const order: string[] = [];
  for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) engine.after(10, { kind: 'test', label: name }, () => order.push(name));
  const outcome = await engine.run();
  return { order, outcome };
}

describe('Engine: clock and queue', () => {
  it('should run steps in time order and advance the clock to each step', async () => {
    const engine = new Engine({ seed: 1 });
    const seen: string[] = [];
    engine.after(30, { kind: 'test', label: 'late' }, () => seen.push(`late@${engine.now()}`));
    engine.after(5, { kind: 'test', label: 'early' }, () => {
      seen.push(`early@${engine.now()}`);
      engine.after(10, { kind: 'test', label: 'child' }, () => seen.push(`child@${engine.now()}`));
    });
    const outcome = await engine.run();
    expect(seen).toEqual(['early@5', 'child@15', 'late@30']);
    expect(outcome).toMatchObject({ status: 'ok', reason: 'idle', steps: 3, timeMs: 30 });
  });

  it('should stop at the horizon with the clock there, and continue on the next run', async () => {
    const engine = new Engine({ seed: 1 });
    const seen: number[] = [];
    for (const t of [10, 20, 30]) engine.after(t, { kind: 'test', label: `t${t}` }, () => seen.push(t));
    expect(await engine.run({ untilMs: 20 })).toMatchObject({ status: 'ok', reason: 'horizon', timeMs: 20 });
    expect(seen).toEqual([10, 20]);
    expect(engine.now()).toBe(20);
    await engine.run({ untilMs: 100 });
    expect(seen).toEqual([10, 20, 30]);
    expect(engine.now()).toBe(100);
  });

  it('should break ties with the seed: same seed same order, other seeds other orders', async () => {
    const first = await tieOrder(11);
    expect((await tieOrder(11)).order).toEqual(first.order);
    const orders = new Set<string>();
    for (let seed = 0; seed < 20; seed++) orders.add((await tieOrder(seed)).order.join(''));
    expect(orders.size).toBeGreaterThan(10);
  });

  it('should replay a run from its recorded choices under any seed', async () => {
    const original = await tieOrder(11);
    expect(original.outcome.choices.length).toBe(5);
    const replay = await tieOrder(999, { path: [...original.outcome.choices] });
    expect(replay.order).toEqual(original.order);
  });

  it('should fall back to FIFO once a path is used up when asked to', async () => {
    expect((await tieOrder(5, { path: [], whenPathExhausted: 'fifo' })).order).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect((await tieOrder(5, { path: [2], whenPathExhausted: 'fifo' })).order).toEqual(['c', 'a', 'b', 'd', 'e', 'f']);
  });

  it('should reject negative or fractional delays and past times with a typed error', () => {
    const engine = new Engine({ seed: 1 });
    for (const bad of [
      () => engine.after(-1, { kind: 'x', label: 'neg' }, () => undefined),
      () => engine.after(1.5, { kind: 'x', label: 'frac' }, () => undefined),
      () => engine.at(-3, { kind: 'x', label: 'past' }, () => undefined),
    ]) {
      expect(bad).toThrow(/non-negative integer|not before now/);
    }
  });

  it('should cancel a step so it never runs', async () => {
    const engine = new Engine({ seed: 1 });
    let ran = false;
    const h = engine.after(10, { kind: 'x', label: 'cancel-me' }, () => {
      ran = true;
    });
    engine.cancel(h);
    await engine.run();
    expect(ran).toBe(false);
  });
});

describe('Engine: bounds', () => {
  it('should end a run that exceeds the step bound with a bound outcome naming it', async () => {
    const engine = new Engine({ seed: 1, bounds: { maxSteps: 50 } });
    const tick = (): void => {
      engine.after(1, { kind: 'x', label: 'tick' }, tick);
    };
    tick();
    const outcome = await engine.run();
    expect(outcome).toMatchObject({ status: 'bound', bound: 'steps', steps: 50 });
    expect(outcome.status === 'bound' && outcome.message).toMatch(/reached 50 steps .*raise bounds\.maxSteps/);
  });

  it('should end a run whose queue overflows with a bound outcome', async () => {
    const engine = new Engine({ seed: 1, bounds: { maxPendingSteps: 10 } });
    engine.after(0, { kind: 'x', label: 'spam' }, () => {
      for (let i = 0; i < 20; i++) engine.after(5, { kind: 'x', label: 'spawned' }, () => undefined);
    });
    const outcome = await engine.run();
    expect(outcome).toMatchObject({ status: 'bound', bound: 'pending-steps' });
    expect(outcome.status === 'bound' && outcome.message).toMatch(/event queue is full \(10 pending steps\)/);
  });

  it('should throw a typed error when scheduling over the bound outside a run', () => {
    const engine = new Engine({ seed: 1, bounds: { maxPendingSteps: 2 } });
    engine.after(1, { kind: 'x', label: 'a' }, () => undefined);
    engine.after(1, { kind: 'x', label: 'b' }, () => undefined);
    let caught: unknown;
    try {
      engine.after(1, { kind: 'x', label: 'c' }, () => undefined);
    } catch (e) {
      caught = e;
    }
    expect(isSimError(caught) && caught.code === 'bound-pending-steps').toBe(true);
  });

  it('should end a run whose trace overflows with a bound outcome', async () => {
    const engine = new Engine({ seed: 1, bounds: { maxTraceEvents: 10 } });
    for (let i = 0; i < 20; i++) engine.after(i, { kind: 'x', label: `s${i}` }, () => engine.emit('test.noise'));
    const outcome = await engine.run();
    expect(outcome).toMatchObject({ status: 'bound', bound: 'trace-events' });
    expect(engine.events.length).toBe(10);
  });

  it('should report a livelock when too many steps run at one instant', async () => {
    const engine = new Engine({ seed: 1, bounds: { maxStepsPerInstant: 100 } });
    const spin = (): void => {
      engine.after(0, { kind: 'x', label: 'spin', owner: 'node-1/agent' }, spin);
    };
    spin();
    const outcome = await engine.run();
    expect(outcome.status).toBe('finding');
    if (outcome.status !== 'finding') return;
    expect(outcome.finding.kind).toBe('livelock');
    expect(outcome.finding.message).toMatch(/more than 100 steps ran at t=0 ms without time passing \(101 of them by node-1\/agent\)/);
  });

  it('should reject bounds that are not positive integers', () => {
    expect(() => new Engine({ seed: 1, bounds: { maxSteps: 0 } })).toThrow(/bounds\.maxSteps must be a positive integer/);
  });
});

describe('Engine: invariants', () => {
  it('should stop at the first step that violates an invariant, with step, time and state', async () => {
    const engine = new Engine({ seed: 1 });
    let counter = 0;
    for (const t of [10, 20, 30, 40]) engine.after(t, { kind: 'x', label: `inc@${t}` }, () => counter++);
    engine.addInvariant('counter below 3', () => (counter >= 3 ? { message: `counter is ${counter}`, state: { counter } } : undefined));
    const outcome = await engine.run();
    expect(outcome).toMatchObject({
      status: 'violation',
      violation: { invariant: 'counter below 3', message: 'counter is 3', step: 3, timeMs: 30, state: { counter: 3 } },
    });
    expect(counter).toBe(3);
    const last = engine.events[engine.events.length - 1];
    expect(last).toMatchObject({ type: 'sim.violation', invariant: 'counter below 3', step: 3, t: 30 });
  });

  it('should refuse two invariants with the same name', () => {
    const engine = new Engine({ seed: 1 });
    engine.addInvariant('x', () => undefined);
    expect(() => engine.addInvariant('x', () => undefined)).toThrow(/already registered/);
  });
});

describe('Engine: trace', () => {
  it('should produce the same bytes for the same seed and differ for another seed', async () => {
    const run = async (seed: number): Promise<string> => {
      const engine = new Engine({ seed });
      for (let i = 0; i < 8; i++) engine.after(i % 3, { kind: 'x', label: `s${i}` }, () => engine.emit('test.did', { i, at: engine.now() }));
      await engine.run();
      return toJsonLines(engine.events);
    };
    const a = await run(3);
    expect(await run(3)).toBe(a);
    expect(a.split('\n')[0]).toBe('{"step":1,"t":0,"type":"sim.step","kind":"x","label":"s0","ready":3,"pick":0}');
    const others = new Set<string>();
    for (let s = 0; s < 6; s++) others.add(await run(s));
    expect(others.size).toBeGreaterThan(1);
  });

  it('should record nothing with tracing off yet run identically', async () => {
    const order = async (trace: boolean): Promise<string[]> => {
      const engine = new Engine({ seed: 8, trace });
      const seen: string[] = [];
      for (const n of ['a', 'b', 'c', 'd']) engine.after(1, { kind: 'x', label: n }, () => seen.push(n));
      await engine.run();
      if (!trace) expect(engine.events.length).toBe(0);
      else expect(labelsOf(engine)).toEqual(seen.map((x) => JSON.stringify(x)));
      return seen;
    };
    expect(await order(false)).toEqual(await order(true));
  });
});
