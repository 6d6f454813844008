/**
 * The "plug in your own controller" example of docs/controllers.md, run by test/docs.test.ts.
 */
// example:start
import { formatSave } from '@netsim/netfilter';
import { runScenario, noDuplicateRules, SIM_SCENARIO_FORMAT, type Controller, type ControllerContext, type SimScenario } from '@netsim/sim';
import { CONTROLLERS } from '@netsim/controllers';

/** Keeps one rule in a chain of its own, checking it every 2 s (-C, then -A when missing). */
const keeper: Controller<ControllerContext> = {
  name: 'keeper',
  create: (ctx) => ({
    start: async () => {
      if (!(await ctx.iptables.chainExists('nat', 'KEEPER'))) await ctx.iptables.newChain('nat', 'KEEPER');
      ctx.every(2000, 'ensure', () => ctx.iptables.appendUnique('nat', 'KEEPER', '-d', '203.0.113.7/32', '-j', 'RETURN'));
    },
  }),
};

const scenario: SimScenario = {
  format: SIM_SCENARIO_FORMAT,
  seed: 7,
  cluster: { nodes: [{ name: 'node-1' }] },
  controller: { name: 'keeper' },
  timeline: [{ atMs: 3000, action: { kind: 'agent.crash', node: 'node-1', restartAfterMs: 500 } }],
  horizonMs: 6000,
  settleMs: 1000,
};

export async function plugYourOwn(): Promise<string[]> {
  const report = await runScenario(scenario, {
    controllers: { ...CONTROLLERS, keeper: () => keeper },
    invariants: [noDuplicateRules({ chains: ['KEEPER'] })],
  });
  const rules = formatSave(report.world.ruleset('node-1'))
    .split('\n')
    .filter((l) => l.startsWith('-A KEEPER'));
  return [`${report.outcome.status} (${report.outcome.status === 'ok' ? report.outcome.reason : ''}) after ${report.outcome.steps} steps`, ...rules];
}
// example:end
