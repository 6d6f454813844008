import { describe, expect, it } from 'vitest';
import { Engine, isSimError, type RunOutcome } from '../src/index.ts';

/** A world call that appends to a shared log when its step runs. */
function op(engine: Engine, log: string[], what: string, delayMs = 0): Promise<string> {
  return engine.call({ kind: 'call', label: what, delayMs }, () => {
    log.push(what);
    return `${what}:done`;
  });
}

async function twoWriters(seed: number): Promise<{ log: string[]; perStep: Map<number, Set<string>>; outcome: RunOutcome }> {
  const engine = new Engine({ seed });
  const log: string[] = [];
  // Which tasks ran code during each step: the engine promises exactly one.
  const perStep = new Map<number, Set<string>>();
  const note = (who: string): void => {
    const s = perStep.get(engine.step) ?? new Set<string>();
    s.add(who);
    perStep.set(engine.step, s);
  };
  for (const who of ['A', 'B']) {
    engine.spawn('node-1/agent', who, 0, async () => {
      for (let i = 0; i < 4; i++) {
        note(who);
        await Promise.resolve(); // plain awaits inside a task are harmless
        note(who);
        const r = await op(engine, log, `${who}${i}`);
        expect(r).toBe(`${who}${i}:done`);
      }
      note(who);
    });
  }
  const outcome = await engine.run();
  return { log, perStep, outcome };
}

describe('Engine: deterministic async tasks', () => {
  it('should interleave world calls of concurrent tasks by the seed, the same way every time', async () => {
    const a = await twoWriters(1);
    expect(a.outcome.status).toBe('ok');
    expect(a.log).toHaveLength(8);
    expect((await twoWriters(1)).log).toEqual(a.log);
    const variants = new Set<string>();
    for (let s = 0; s < 30; s++) variants.add((await twoWriters(s)).log.join(' '));
    expect(variants.size).toBeGreaterThan(5);
    for (const v of variants) {
      // Each task's own calls stay in program order whatever the interleaving.
      const w = v.split(' ');
      expect(w.filter((x) => x.startsWith('A'))).toEqual(['A0', 'A1', 'A2', 'A3']);
      expect(w.filter((x) => x.startsWith('B'))).toEqual(['B0', 'B1', 'B2', 'B3']);
    }
  });

  it('should run exactly one task between two picks', async () => {
    for (let s = 0; s < 10; s++) {
      const { perStep } = await twoWriters(s);
      for (const [step, who] of perStep) expect({ step, who: [...who] }).toEqual({ step, who: [...who].slice(0, 1) });
    }
  });

  it('should let other steps run between two world calls of one task', async () => {
    const seen = new Set<string>();
    for (let seed = 0; seed < 40; seed++) {
      const engine = new Engine({ seed });
      const log: string[] = [];
      engine.spawn('n/agent', 'flush-then-fill', 0, async () => {
        await op(engine, log, 'flush');
        await op(engine, log, 'fill');
      });
      engine.after(0, { kind: 'probe', label: 'probe' }, () => log.push('probe'));
      await engine.run();
      seen.add(log.join(','));
    }
    expect(seen).toContain('flush,probe,fill');
    expect(seen).toContain('probe,flush,fill');
  });

  it('should run timers on the simulated clock', async () => {
    const engine = new Engine({ seed: 1 });
    const times: number[] = [];
    engine.spawn('n/agent', 'sleeper', 0, async () => {
      for (let i = 0; i < 3; i++) {
        await engine.call({ kind: 'timer', label: 'sleep 250ms', delayMs: 250 }, () => undefined);
        times.push(engine.now());
      }
    });
    await engine.run();
    expect(times).toEqual([250, 500, 750]);
  });

  it('should accept concurrent world calls awaited together without a false finding', async () => {
    const engine = new Engine({ seed: 4 });
    const log: string[] = [];
    let results: string[] = [];
    engine.spawn('n/agent', 'fanout', 0, async () => {
      results = await Promise.all([op(engine, log, 'x'), op(engine, log, 'y'), op(engine, log, 'z')]);
      await op(engine, log, 'after');
    });
    const outcome = await engine.run();
    expect(outcome.status).toBe('ok');
    expect(results).toEqual(['x:done', 'y:done', 'z:done']);
    expect(log[3]).toBe('after');
  });

  it('should report a task that throws as a finding with step, time and stack', async () => {
    const engine = new Engine({ seed: 1 });
    engine.spawn('node-2/agent', 'worker', 40, async () => {
      await engine.call({ kind: 'call', label: 'noop', delayMs: 2 }, () => undefined);
      throw new Error('cache out of sync');
    });
    const outcome = await engine.run();
    expect(outcome.status).toBe('finding');
    if (outcome.status !== 'finding') return;
    expect(outcome.finding).toMatchObject({ kind: 'controller-threw', agent: 'node-2/agent', task: 'worker', step: 2, timeMs: 42 });
    expect(outcome.finding.message).toMatch(/worker#1 threw: cache out of sync/);
    expect(outcome.finding.stack).toMatch(/tasks\.test\.ts/);
  });

  it('should report a synchronous throw as a finding, not crash the simulator', async () => {
    const engine = new Engine({ seed: 1 });
    engine.spawn('n/agent', 'start', 0, () => {
      throw new TypeError('boom');
    });
    const outcome = await engine.run();
    expect(outcome).toMatchObject({ status: 'finding', finding: { kind: 'controller-threw', step: 1 } });
  });

  it('should report a task awaiting something outside the simulation', async () => {
    const engine = new Engine({ seed: 1 });
    engine.spawn('n/agent', 'leaky', 5, async () => {
      await new Promise((r) => setTimeout(r, 20));
    });
    const outcome = await engine.run();
    expect(outcome.status).toBe('finding');
    if (outcome.status !== 'finding') return;
    expect(outcome.finding).toMatchObject({ kind: 'awaited-outside', agent: 'n/agent', task: 'leaky', step: 1, timeMs: 5 });
    expect(outcome.finding.message).toMatch(/controller awaited something outside the simulation/);
  });

  it('should report a failed world call nobody awaited as an unhandled rejection', async () => {
    const engine = new Engine({ seed: 1 });
    engine.spawn('n/agent', 'fire-and-forget', 0, () => {
      void engine.call({ kind: 'call', label: 'iptables -A X', delayMs: 1 }, () => {
        throw new Error('iptables: No chain/target/match by that name.');
      });
    });
    const outcome = await engine.run();
    expect(outcome).toMatchObject({ status: 'finding', finding: { kind: 'unhandled-rejection' } });
    expect(outcome.status === 'finding' && outcome.finding.message).toMatch(/"iptables -A X" failed and nothing awaited it/);
  });

  it('should deliver a world call failure to a task that awaits it', async () => {
    const engine = new Engine({ seed: 1 });
    let caught = '';
    engine.spawn('n/agent', 'careful', 0, async () => {
      try {
        await engine.call({ kind: 'call', label: 'fails' }, () => {
          throw new Error('Resource temporarily unavailable');
        });
      } catch (e) {
        caught = (e as Error).message;
      }
    });
    expect((await engine.run()).status).toBe('ok');
    expect(caught).toBe('Resource temporarily unavailable');
  });

  it('should refuse a world call made outside any task', () => {
    const engine = new Engine({ seed: 1 });
    let caught: unknown;
    try {
      void engine.call({ kind: 'call', label: 'stray' }, () => undefined);
    } catch (e) {
      caught = e;
    }
    expect(isSimError(caught) && caught.code === 'no-current-task').toBe(true);
  });

  it('should drop the pending steps of killed tasks and never resume them', async () => {
    const engine = new Engine({ seed: 1 });
    const log: string[] = [];
    const t = engine.spawn('n/agent', 'victim', 0, async () => {
      await op(engine, log, 'one', 5);
      await op(engine, log, 'two', 5);
      log.push('resumed after two');
    });
    engine.after(7, { kind: 'fault', label: 'crash' }, () => engine.killOwner('n/agent'));
    expect((await engine.run()).status).toBe('ok');
    expect(log).toEqual(['one']);
    expect(t.state).toBe('killed');
  });

  it('should give a second task activated in one step its own step', async () => {
    const engine = new Engine({ seed: 2 });
    const steps: number[] = [];
    engine.after(0, { kind: 'kube', label: 'deliver to two handlers' }, () => {
      for (const name of ['h1', 'h2']) {
        const task = engine.newTask('n/agent', name);
        engine.activate(task, async () => {
          steps.push(engine.step);
          await Promise.resolve();
        });
      }
    });
    await engine.run();
    expect(steps).toEqual([1, 2]);
  });
});
