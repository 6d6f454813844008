import { describe, expect, it } from 'vitest';
import { Engine, World, describeThrown, type Controller, type ControllerContext, type RunOutcome } from '../src/index.ts';

/** A controller whose start does `body` once the node is up. */
function controller(body: (ctx: ControllerContext) => unknown): Controller<ControllerContext> {
  return { name: 'agent', create: (ctx) => ({ start: () => body(ctx) }) };
}

async function runWorld(body: (ctx: ControllerContext) => unknown): Promise<RunOutcome> {
  const world = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: controller(body) });
  return world.run(2000);
}

const revoked = (): object => {
  const p = Proxy.revocable({}, {});
  p.revoke();
  return p.proxy;
};

describe('what a controller throws', () => {
  it('should describe any thrown value without throwing itself', () => {
    const getters = new Error('hidden');
    // `stack` first: redefining it formats the stack, which reads `message`.
    Object.defineProperty(getters, 'stack', {
      get() {
        throw new Error('no');
      },
    });
    Object.defineProperty(getters, 'message', {
      get() {
        throw new Error('no');
      },
    });
    expect(describeThrown(Object.create(null))).toEqual({ message: 'a non-Error [object Object]' });
    expect(describeThrown(Object.assign(Object.create(null) as object, { code: 7 }))).toEqual({ message: 'a non-Error [object Object]: {"code":7}' });
    expect(describeThrown(revoked())).toEqual({ message: 'a revoked Proxy (no message can be read from it)' });
    expect(describeThrown(Symbol('boom'))).toEqual({ message: 'a Symbol: Symbol(boom)' });
    expect(describeThrown(getters)).toEqual({ message: 'Error (its message could not be read)' });
    expect(describeThrown(null)).toEqual({ message: 'null' });
    expect(describeThrown(42)).toEqual({ message: '42' });
    expect(describeThrown('text')).toEqual({ message: 'text' });
  });

  it('should make a finding of every non-Error throw, synchronous or asynchronous, never a rejected run', async () => {
    for (const [make, message] of [
      [() => Object.create(null) as unknown, 'a non-Error [object Object]'],
      [revoked, 'a revoked Proxy (no message can be read from it)'],
      [() => Symbol('boom'), 'a Symbol: Symbol(boom)'],
      [() => undefined, 'undefined'],
    ] as const) {
      for (const async of [false, true]) {
        const engine = new Engine({ seed: 1 });
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the point: a controller rejecting with a non-Error
        engine.spawn('n/agent', 'start', 0, async ? () => Promise.reject(make()) : () => {
          throw make();
        });
        const outcome = await engine.run();
        expect(outcome).toMatchObject({ status: 'finding', finding: { kind: 'controller-threw', message: `n/agent/start#1 threw: ${message}` } });
      }
    }
    // Through a whole world, too.
    const outcome = await runWorld(async () => {
      await Promise.resolve();
      throw Object.create(null);
    });
    expect(outcome).toMatchObject({ status: 'finding', finding: { kind: 'controller-threw' } });
  });

  it('should report a failing ctx.iptables call nothing awaited as a finding, like an unawaited ctx.kube call', async () => {
    const outcome = await runWorld((ctx) => {
      void ctx.iptables.append('nat', 'NO-SUCH-CHAIN', '-j', 'ACCEPT');
    });
    expect(outcome.status).toBe('finding');
    if (outcome.status !== 'finding') return;
    expect(outcome.finding.kind).toBe('unhandled-rejection');
    expect(outcome.finding.message).toMatch(/^ctx\.iptables\.append\(\) failed and nothing awaited it: node-1\/agent#1\/start#1 threw: running \[iptables -t nat -A NO-SUCH-CHAIN -j ACCEPT --wait\]: exit status 1: iptables: No chain\/target\/match by that name/);
  });

  it('should pass a failing ctx.iptables call to the controller that awaits or catches it', async () => {
    const seen: string[] = [];
    const outcome = await runWorld(async (ctx) => {
      await ctx.iptables.append('nat', 'NO-SUCH-CHAIN', '-j', 'ACCEPT').catch((e: unknown) => seen.push(`caught: ${(e as Error).message}`));
      try {
        await ctx.iptables.delete('nat', 'NO-SUCH-CHAIN', '-j', 'ACCEPT');
      } catch (e) {
        seen.push(`awaited: ${(e as Error).message}`);
      }
      await ctx.iptables.newChain('nat', 'MINE');
      seen.push(`exists: ${String(await ctx.iptables.chainExists('nat', 'MINE'))}`);
    });
    expect(outcome.status).toBe('ok');
    expect(seen).toHaveLength(3);
    expect(seen[0]).toMatch(/^caught: /);
    expect(seen[1]).toMatch(/^awaited: /);
    expect(seen[2]).toBe('exists: true');
  });
});
