import { describe, expect, it } from 'vitest';
import { World, isNftExecError, probesSucceed, story, type Controller, type ControllerContext } from '../src/index.ts';

const pod = (name: string, node = 'node-1', port = 8080) => ({ kind: 'pod.create' as const, pod: { name, node, ports: [{ port, protocol: 'TCP' as const }] } });

const MASQ = `table ip masq {
	chain post {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr 198.18.0.0/15 ip daddr != 198.18.0.0/15 counter masquerade
	}
}
`;

/** Masquerades Pod egress with one nft transaction at start, retrying on failure; records what it saw. */
function masq(seen: string[]): Controller<ControllerContext> {
  return {
    name: 'masq',
    create: (ctx) => ({
      start: async () => {
        for (;;) {
          try {
            await ctx.nft.apply(MASQ);
            break;
          } catch (e) {
            if (!isNftExecError(e)) throw e;
            seen.push(e.message);
            await ctx.sleep(100);
          }
        }
        ctx.every(1000, 'list', async () => {
          seen.push(await ctx.nft.listChain('ip', 'masq', 'post'));
        });
      },
    }),
  };
}

describe('ctx.nft', () => {
  it('should program the node with an nft transaction that the datapath probes then use, counters advancing in the listing', async () => {
    const seen: string[] = [];
    const world = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }, { name: 'node-2' }] }, controller: masq(seen), probes: [{ kind: 'pod-egress', everyMs: 1000 }], invariants: [probesSucceed()], settleMs: 2000 });
    world.at(0, pod('web-0'));
    expect((await world.run(4500)).status).toBe('ok');
    expect(world.view.probes()[0]).toMatchObject({ kind: 'pod-egress', ok: true, outcome: 'established' });
    // Each probe's SYN is counted once (nat chains see a connection's first packet only).
    const last = seen[seen.length - 1] ?? '';
    const first = seen[0] ?? '';
    expect(first).toMatch(/counter packets \d+ bytes \d+ masquerade/);
    const count = (s: string): number => Number(/counter packets (\d+)/.exec(s)?.[1]);
    expect(count(last)).toBeGreaterThan(count(first));
    expect(story(world.events).join('\n')).toMatch(/node-1\/masq: nft -f - \(6 lines\)/);
  });

  it('should fail the next transaction under iptables.fail and iptables.restore-fail, changing nothing, with nft-style errors', async () => {
    const seen: string[] = [];
    const world = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: masq(seen) });
    world.at(0, { kind: 'iptables.fail', node: 'node-1', count: 1 });
    world.at(0, { kind: 'iptables.restore-fail', node: 'node-1', line: 4 });
    expect((await world.run(1500)).status).toBe('ok');
    expect(seen[0]).toBe('running [nft -f -]: exit status 1: Error: Could not process rule: Resource temporarily unavailable');
    expect(seen[1]).toBe(
      'running [nft -f -]: exit status 1: /dev/stdin:4:1-69: Error: Could not process rule: Resource temporarily unavailable\n\t\tip saddr 198.18.0.0/15 ip daddr != 198.18.0.0/15 counter masquerade\n' + '^'.repeat(69),
    );
    expect(seen[2]).toContain('chain post {');
  });

  it('should reject a bad transaction whole with the real message and report a missing table on list', async () => {
    const results: string[] = [];
    const c: Controller<ControllerContext> = {
      name: 'bad',
      create: (ctx) => ({
        start: async () => {
          const r = await ctx.nft.run(['-f', '-'], 'add table ip a\nadd chain ip a c\nadd rule ip a nochain accept\n');
          results.push(`${r.exitCode}\n${r.stderr}`);
          const l = await ctx.nft.run(['list', 'table', 'ip', 'a']);
          results.push(`${l.exitCode}\n${l.stderr}`);
        },
      }),
    };
    const world = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller: c });
    await world.run(100);
    expect(results[0]).toBe('1\n/dev/stdin:3:15-21: Error: Could not process rule: No such file or directory\nadd rule ip a nochain accept\n              ^^^^^^^\n');
    expect(results[1]).toBe('1\nError: No such file or directory\nlist table ip a\n              ^\n');
  });
});
