/**
 * The controller context's `conntrack` handle: one `conntrack` process per call, against the
 * node's kernel table.
 */
import { describe, expect, it } from 'vitest';
import { World, type Controller, type ControllerContext, type RawResult } from '../src/index.ts';

describe('ControllerContext.conntrack', () => {
  it("should list and delete entries of the node's conntrack table with the real tool's output and exit statuses", async () => {
    const results: RawResult[] = [];
    const controller: Controller<ControllerContext> = {
      name: 'ct',
      create: (ctx) => ({
        start: async () => {
          // Connection tracking runs once a rule needs it, as on Linux: any nat rule will do.
          await ctx.iptables.append('nat', 'PREROUTING', '-p', 'udp', '--dport', '9999', '-j', 'RETURN');
          await ctx.sleep(2000);
          results.push(await ctx.conntrack.run(['-L', '-p', 'udp']));
          results.push(await ctx.conntrack.run(['-D', '-p', 'udp', '--orig-dst', ctx.nodeInfo.ip, '--dport', '9999']));
          results.push(await ctx.conntrack.run(['-D', '-p', 'udp', '--orig-dst', ctx.nodeInfo.ip, '--dport', '9999']));
        },
      }),
    };
    const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller, datapath: true });
    w.engine.at(1000, { kind: 'action', label: 'udp from lb' }, () => {
      w.datapath?.net.udp('lb', w.node('node-1').ip, 9999, { nowMs: w.engine.now() });
    });
    expect((await w.run(5000)).status).toBe('ok');
    expect(results.map((r) => r.exitCode)).toEqual([0, 0, 1]);
    expect(results[0]?.stdout).toMatch(/^udp {6}17 \d+ src=192\.0\.2\.2 dst=192\.0\.2\.11 sport=\d+ dport=9999 /);
    expect(results[1]?.stderr).toBe('conntrack v1.4.7 (conntrack-tools): 1 flow entries have been deleted.\n');
    expect(results[2]?.stderr).toBe('conntrack v1.4.7 (conntrack-tools): 0 flow entries have been deleted.\n');
    expect(w.events.filter((e) => e.type === 'conntrack.exec').map((e) => e['exit'])).toEqual([0, 0, 1]);
  });

  it('should see an empty table in a world without a data plane', async () => {
    let r: RawResult | undefined;
    const controller: Controller<ControllerContext> = { name: 'ct', create: (ctx) => ({ start: async () => void (r = await ctx.conntrack.run(['-L'])) }) };
    const w = new World({ seed: 1, cluster: { nodes: [{ name: 'node-1' }] }, controller });
    await w.run(100);
    expect(r).toEqual({ stdout: '', stderr: 'conntrack v1.4.7 (conntrack-tools): 0 flow entries have been shown.\n', exitCode: 0 });
  });
});
