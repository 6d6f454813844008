import { describe, expect, it } from 'vitest';
import { Agent, Engine, type Controller, type ProcessContext } from '../src/index.ts';

const identity = (base: ProcessContext): ProcessContext => base;

function events(engine: Engine, prefix: string): string[] {
  return engine.events
    .filter((e) => e.type.startsWith(prefix))
    .map((e) => `t=${e.t} ${e.type}${typeof e['reason'] === 'string' ? ` ${e['reason']}` : ''}${typeof e['msg'] === 'string' ? ` ${e['msg']}` : ''}`);
}

describe('Agent lifecycle', () => {
  it('should start a process that runs periodic work on the simulated clock', async () => {
    const engine = new Engine({ seed: 1 });
    const ticks: number[] = [];
    const c: Controller = {
      name: 'ticker',
      create: (ctx) => ({
        start: () => {
          ctx.every(1000, 'tick', () => {
            ticks.push(ctx.now());
          });
        },
      }),
    };
    const agent = new Agent(engine, 'node-1', c, identity);
    engine.after(0, { kind: 'lifecycle', label: 'boot' }, () => agent.start());
    await engine.run({ untilMs: 3500 });
    expect(ticks).toEqual([0, 1000, 2000, 3000]);
    expect(agent.state).toBe('running');
    expect(agent.name).toBe('node-1/ticker');
  });

  it('should run the SIGTERM handler, then exit, then restart with fresh in-memory state', async () => {
    const engine = new Engine({ seed: 1 });
    const seen: string[] = [];
    const c: Controller = {
      name: 'stateful',
      create: (ctx) => {
        const cache: string[] = [];
        return {
          start: async () => {
            seen.push(`start #${ctx.incarnation} cache=${cache.length}`);
            cache.push('entry');
            await ctx.done();
            seen.push(`#${ctx.incarnation} saw done at ${ctx.now()}`);
          },
          stop: async () => {
            seen.push(`stop #${ctx.incarnation} at ${ctx.now()}`);
            await ctx.sleep(500);
            seen.push(`stop #${ctx.incarnation} cleaned up at ${ctx.now()}`);
          },
        };
      },
    };
    const agent = new Agent(engine, 'n1', c, identity, { restartDelayMs: 2000 });
    engine.after(0, { kind: 'x', label: 'boot' }, () => agent.start());
    engine.after(100, { kind: 'fault', label: 'sigterm' }, () => agent.sigterm({ restart: true }));
    await engine.run({ untilMs: 5000 });
    expect(seen).toContain('start #1 cache=0');
    expect(seen).toContain('stop #1 at 100');
    expect(seen).toContain('#1 saw done at 100');
    expect(seen).toContain('stop #1 cleaned up at 600');
    expect(seen).toContain('start #2 cache=0');
    expect(events(engine, 'agent.')).toEqual(['t=0 agent.start', 't=100 agent.sigterm', 't=600 agent.exit stopped', 't=2600 agent.start']);
  });

  it('should kill a process whose SIGTERM handler outlives the grace period', async () => {
    const engine = new Engine({ seed: 1 });
    let finished = false;
    const c: Controller = {
      name: 'slow-stop',
      create: (ctx) => ({
        start: () => undefined,
        stop: async () => {
          await ctx.sleep(10_000);
          finished = true;
        },
      }),
    };
    const agent = new Agent(engine, 'n1', c, identity, { graceMs: 3000 });
    engine.after(0, { kind: 'x', label: 'boot' }, () => agent.start());
    engine.after(10, { kind: 'fault', label: 'sigterm' }, () => agent.sigterm());
    await engine.run({ untilMs: 20_000 });
    expect(finished).toBe(false);
    expect(agent.state).toBe('down');
    expect(events(engine, 'agent.exit')).toEqual(['t=3010 agent.exit killed']);
  });

  it('should crash between two world calls and never run the rest of that code', async () => {
    const engine = new Engine({ seed: 1 });
    const done: string[] = [];
    const c: Controller = {
      name: 'two-phase',
      create: (ctx) => ({
        start: async () => {
          await ctx.sleep(10);
          done.push(`phase 1 #${ctx.incarnation}`);
          await ctx.sleep(10);
          done.push(`phase 2 #${ctx.incarnation}`);
        },
      }),
    };
    const agent = new Agent(engine, 'n1', c, identity, { restartDelayMs: 100 });
    engine.after(0, { kind: 'x', label: 'boot' }, () => agent.start());
    engine.after(15, { kind: 'fault', label: 'crash' }, () => agent.crash({ restart: true }));
    await engine.run({ untilMs: 1000 });
    expect(done).toEqual(['phase 1 #1', 'phase 1 #2', 'phase 2 #2']);
    expect(agent.incarnation).toBe(2);
  });

  it('should stop periodic loops once SIGTERM is delivered', async () => {
    const engine = new Engine({ seed: 1 });
    const ticks: number[] = [];
    const c: Controller = {
      name: 'loop',
      create: (ctx) => ({
        start: () => {
          ctx.every(100, 'ensure', () => {
            ticks.push(ctx.now());
          });
        },
        stop: async () => {
          await ctx.sleep(1000);
        },
      }),
    };
    const agent = new Agent(engine, 'n1', c, identity);
    engine.after(0, { kind: 'x', label: 'boot' }, () => agent.start());
    engine.after(250, { kind: 'fault', label: 'sigterm' }, () => agent.sigterm());
    await engine.run({ untilMs: 2000 });
    expect(ticks).toEqual([0, 100, 200]);
  });

  it('should log into the trace with the agent name and level', async () => {
    const engine = new Engine({ seed: 1 });
    const c: Controller = {
      name: 'talker',
      create: (ctx) => ({
        start: () => ctx.log.warn('chain missing, re-bootstrapping', { chain: 'FLANNEL-POSTRTG' }),
      }),
    };
    const agent = new Agent(engine, 'n1', c, identity);
    engine.after(0, { kind: 'x', label: 'boot' }, () => agent.start());
    await engine.run();
    expect(engine.events.find((e) => e.type === 'agent.log')).toEqual({
      step: 1,
      t: 0,
      type: 'agent.log',
      agent: 'n1/talker',
      level: 'warn',
      msg: 'chain missing, re-bootstrapping',
      fields: { chain: 'FLANNEL-POSTRTG' },
    });
  });
});
