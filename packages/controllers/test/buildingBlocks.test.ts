/**
 * The exported building blocks compose into a controller of one's own: flannel's rules and
 * ensure step make a working masquerade manager, and NodePortLocal's port table, rule builder and
 * annotation codec make and publish mappings the declared parser reads back.
 */
import { describe, expect, it } from 'vitest';
import { NPL_CHAIN, PortTable, buildRuleForPod, formatNplAnnotation, parseNplMappings, type PodPortRules, type LocalPortOpener } from '../src/index.ts';
import { chainLines } from './helpers.ts';
import { runMyMasq } from './examples/myMasq.ts';

describe('building blocks', () => {
  it("should make a masquerade manager from flannel's rules and ensure step", async () => {
    const w = await runMyMasq();
    expect(chainLines(w.ruleset('node-1'), 'nat', 'FLANNEL-POSTRTG')).toHaveLength(6);
    expect(chainLines(w.ruleset('node-1'), 'nat', 'POSTROUTING')).toEqual(['-A POSTROUTING -m comment --comment "flanneld masq" -j FLANNEL-POSTRTG']);
  });

  it('should allocate node ports with the port table, write them with the rule builder and publish them in the annotation format', async () => {
    const written: string[] = [];
    const rules: PodPortRules = {
      init: () => Promise.resolve(),
      addRule: (nodePort, podIP, podPort, protocol) => Promise.resolve(void written.push(['-A', NPL_CHAIN, ...buildRuleForPod(nodePort, `${podIP}:${podPort}`, protocol)].join(' '))),
      deleteRule: () => Promise.resolve(),
      addAllRules: () => Promise.resolve(),
    };
    // Port 61001 is taken by another program: the table skips it.
    const opener: LocalPortOpener = {
      openLocalPort: (port) => {
        if (port === 61001) throw new Error('bind: address already in use');
        return { close: () => undefined };
      },
    };
    const table = new PortTable(rules, opener, { start: 61000, end: 61010 });
    const a = await table.addRule('default/web-0', 8080, 'tcp', '198.18.0.2');
    const b = await table.addRule('default/web-0', 53, 'udp', '198.18.0.2');
    expect([a, b]).toEqual([61000, 61002]);
    expect(written).toEqual([`-A ${NPL_CHAIN} -p tcp -m tcp --dport 61000 -j DNAT --to-destination 198.18.0.2:8080`, `-A ${NPL_CHAIN} -p udp -m udp --dport 61002 -j DNAT --to-destination 198.18.0.2:53`]);
    const text = formatNplAnnotation(table.entries().map((e) => ({ podPort: e.podPort, nodeIP: '192.0.2.11', nodePort: e.nodePort, protocol: e.protocol })));
    expect(parseNplMappings(text)).toEqual([
      { protocol: 'TCP', nodePort: 61000, podPort: 8080 },
      { protocol: 'UDP', nodePort: 61002, podPort: 53 },
    ]);
  });
});
