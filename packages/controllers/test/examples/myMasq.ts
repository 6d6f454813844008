import { World, type Controller, type ControllerContext } from '@netsim/sim';
import { MASQ_CHAIN, ensureIPTables, flannelDeclaration, masqRules } from '@netsim/controllers';

/** A masquerade manager built from flannel's pieces: its rules, its check-then-bootstrap, its declaration. */
export const myMasq: Controller<ControllerContext> = {
  name: 'my-masq',
  declares: flannelDeclaration(3000),
  create: (ctx) => ({
    start: async () => {
      const node = await ctx.kube.get('Node', '', ctx.node);
      const rules = masqRules('198.18.0.0/15', node.spec.podCIDR ?? '');
      if (!(await ctx.iptables.chainExists('nat', MASQ_CHAIN))) await ctx.iptables.newChain('nat', MASQ_CHAIN);
      ctx.every(3000, 'ensure', () => ensureIPTables(ctx.iptables, rules));
    },
  }),
};

export async function runMyMasq(): Promise<World> {
  const world = new World({ seed: 3, cluster: { nodes: [{ name: 'node-1' }] }, controller: myMasq });
  await world.run(5000);
  return world;
}
