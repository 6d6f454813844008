import { describe, expect, it } from 'vitest';
import { World, builtinInvariants, isIptablesError, type Action, type Controller, type ControllerContext, type ControllerDeclaration, type RunOutcome } from '../src/index.ts';

const CHAIN = 'TOY-LIVE';

function violated(o: RunOutcome): string {
  return o.status === 'violation' ? `${o.violation.invariant}: ${o.violation.message}` : o.status;
}

/**
 * A controller that programs its chain (hooked from PREROUTING, a MASQUERADE rule in it, a RETURN
 * rule per Pod of its node) when it starts, when a Pod is added and at every resync, retrying a failed write after `retryMs` (or, with
 * `retryMs: 'hot'`, at once, or never with `null`). With `dropFirst`, the handler ignores the first
 * Pod it hears of, so its rules lag one Pod behind until something makes it look again.
 */
function chainWriter(opts: { readonly retryMs: number | 'hot' | null; readonly dropFirst?: boolean; readonly declares: ControllerDeclaration }): Controller<ControllerContext> {
  return {
    name: 'live',
    declares: opts.declares,
    create: (ctx) => {
      const pods = ctx.informers.pods({ selector: { nodeName: ctx.node } });
      let dropped = opts.dropFirst !== true;
      const write = async (): Promise<void> => {
        const n = pods.lister.list().length;
        const text = ['*nat', `:${CHAIN} - [0:0]`, `-A ${CHAIN} -j MASQUERADE`, ...Array.from({ length: n }, (_, i) => `-A ${CHAIN} -s 198.18.9.${i + 1}/32 -j RETURN`), 'COMMIT', ''].join('\n');
        for (;;) {
          const r = await ctx.iptables.run(['-t', 'nat', '-N', CHAIN]);
          if (r.exitCode === 0 || r.stderr.includes('Chain already exists')) {
            try {
              await ctx.iptables.restore(text, { noflush: true });
              const hook = await ctx.iptables.run(['-t', 'nat', '-C', 'PREROUTING', '-j', CHAIN]);
              if (hook.exitCode === 1) await ctx.iptables.run(['-t', 'nat', '-A', 'PREROUTING', '-j', CHAIN]);
              if (hook.exitCode <= 1) return;
            } catch (e) {
              if (!isIptablesError(e)) throw e;
            }
          }
          if (opts.retryMs === null) return;
          await ctx.sleep(opts.retryMs === 'hot' ? 1 : opts.retryMs);
        }
      };
      pods.addEventHandler({
        onAdd: () => {
          if (!dropped) {
            dropped = true;
            return;
          }
          ctx.go('write', write);
        },
        // Other updates do not matter to it; a resync (the same object again) rewrites everything.
        onUpdate: (old, obj) => {
          if (old.metadata.resourceVersion === obj.metadata.resourceVersion) ctx.go('write', write);
        },
      });
      return {
        start: async () => {
          ctx.informers.start();
          if (!(await ctx.informers.waitForCacheSync())) return;
          await write();
        },
      };
    },
  };
}

const DECLARES: ControllerDeclaration = { ownedChains: [{ table: 'nat', chain: CHAIN, hookedFrom: ['PREROUTING'], requiredTarget: 'MASQUERADE' }], firstBackoffMs: 1000, maxBackoffMs: 8000 };
const pod = (name: string): Action => ({ kind: 'pod.create', pod: { name, node: 'node-1', labels: { app: 'web' }, ports: [{ port: 8080, protocol: 'TCP' }] } });

async function run(controller: Controller<ControllerContext>, timeline: readonly [number, Action][], horizonMs = 12_000): Promise<{ readonly world: World; readonly outcome: RunOutcome }> {
  const world = new World({ seed: 5, cluster: { nodes: [{ name: 'node-1' }] }, controller, invariants: builtinInvariants(), settleMs: 2000, trace: false, datapath: false });
  for (const [t, a] of timeline) world.at(t, a);
  return { world, outcome: await world.run(horizonMs) };
}

describe('liveness: a resync changes nothing', () => {
  it('should pass a controller at its fixpoint when its informers resync, having judged the resync', async () => {
    const { world, outcome } = await run(chainWriter({ retryMs: 1000, declares: DECLARES }), [[500, pod('web-0')], [6000, { kind: 'informer.resync', node: 'node-1' }]]);
    expect(violated(outcome)).toBe('ok');
    expect(world.coverage()['a resync changes nothing']).toBe(1);
  });

  it('should catch a controller whose rules change at a resync on a calm node, showing the change', async () => {
    const { outcome } = await run(chainWriter({ retryMs: 1000, dropFirst: true, declares: DECLARES }), [[500, pod('web-0')], [6000, { kind: 'informer.resync' }]]);
    expect(violated(outcome)).toMatch(/^a resync changes nothing: a resync of the agents on node-1 at t=6000ms changed its rules by t=\d+ms, though the node had been calm for more than the settle time \(2000ms\): the controller was not at its fixpoint\n\*nat\n.*-A TOY-LIVE -s 198\.18\.9\.1\/32 -j RETURN/s);
  });

  it('should leave unjudged a resync that comes before the node has settled', async () => {
    const { world, outcome } = await run(chainWriter({ retryMs: 1000, dropFirst: true, declares: DECLARES }), [[500, pod('web-0')], [1500, { kind: 'informer.resync' }]]);
    expect(violated(outcome)).toBe('ok');
    expect(world.coverage()['a resync changes nothing']).toBe(0);
  });

  it('should not count a resync as a disruption (the world did not change)', async () => {
    const world = new World({ seed: 5, cluster: { nodes: [{ name: 'node-1' }] }, controller: chainWriter({ retryMs: 1000, declares: DECLARES }), trace: false, datapath: false });
    world.at(6000, { kind: 'informer.resync', node: 'node-1' });
    await world.run(7000);
    expect(world.disruptions.windows().map((d) => d.cause)).not.toContain('informer.resync');
  });
});

describe('liveness: injected iptables failures and retries', () => {
  it('should forgive a controller that retries after its declared first delay', async () => {
    const { outcome } = await run(chainWriter({ retryMs: 1000, declares: DECLARES }), [[3000, { kind: 'iptables.fail', node: 'node-1', count: 2 }], [3000, pod('web-0')], [9000, { kind: 'informer.resync' }]]);
    expect(violated(outcome)).toBe('ok');
  });

  it('should blame a controller that never retries once the declared delay and the settle time are over', async () => {
    const { outcome } = await run(chainWriter({ retryMs: null, declares: DECLARES }), [[3000, { kind: 'iptables.fail', node: 'node-1', count: 1 }], [3000, pod('web-0')], [9000, { kind: 'informer.resync' }]]);
    expect(violated(outcome)).toMatch(/^a resync changes nothing: a resync of the agents on node-1 at t=9000ms changed its rules/);
  });

  it('should forgive each further failure for twice the delay before it (exponential backoff), recording why', async () => {
    const world = new World({ seed: 5, cluster: { nodes: [{ name: 'node-1' }] }, controller: chainWriter({ retryMs: 1000, declares: DECLARES }), trace: false, datapath: false });
    world.at(3000, { kind: 'iptables.fail', node: 'node-1', count: 2 });
    world.at(3000, pod('web-0'));
    await world.run(9000);
    const forgiven = world.disruptions.windows().filter((d) => d.cause.startsWith('injected iptables failure'));
    expect(forgiven.map((d) => d.untilMs - d.fromMs)).toEqual([1000, 2000]);
  });

  it('should catch a controller that retries in a hot loop through an outage', async () => {
    const { outcome } = await run(chainWriter({ retryMs: 'hot', declares: DECLARES }), [[3000, { kind: 'iptables.fail', node: 'node-1', durationMs: 2000 }], [3000, pod('web-0')]]);
    expect(violated(outcome)).toMatch(/^agents stay live: the agents on node-1 retry without backing off: 25 commands met an injected iptables failure within \d+ms \(t=\d+ms to t=\d+ms\), though they declare a first retry delay of 1000ms/);
  });

  it('should pass the same controller through the outage when it backs off', async () => {
    const { outcome } = await run(chainWriter({ retryMs: 1000, declares: DECLARES }), [[3000, { kind: 'iptables.fail', node: 'node-1', durationMs: 2000 }], [3000, pod('web-0')]]);
    expect(violated(outcome)).toBe('ok');
  });
});
