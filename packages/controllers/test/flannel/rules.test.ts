import { describe, expect, it } from 'vitest';
import { exec, formatSave, freshRuleset } from '@netsim/netfilter';
import { masqRules } from '../../src/index.ts';

describe('flannel masqRules', () => {
  it('should produce the POSTROUTING jump and the six FLANNEL-POSTRTG rules as iptables-save prints them', () => {
    let rs = freshRuleset();
    rs = exec(rs, ['-t', 'nat', '-N', 'FLANNEL-POSTRTG']).ruleset;
    for (const r of masqRules('198.18.0.0/15', '198.18.1.0/24')) {
      const res = exec(rs, ['-t', r.table, r.action, r.chain, ...r.rulespec]);
      expect(res.exitCode).toBe(0);
      rs = res.ruleset;
    }
    const lines = formatSave(rs)
      .split('\n')
      .filter((l) => l.includes('flanneld masq'));
    expect(lines).toEqual([
      '-A POSTROUTING -m comment --comment "flanneld masq" -j FLANNEL-POSTRTG',
      '-A FLANNEL-POSTRTG -m mark --mark 0x4000/0x4000 -m comment --comment "flanneld masq" -j RETURN',
      '-A FLANNEL-POSTRTG -s 198.18.1.0/24 -d 198.18.0.0/15 -m comment --comment "flanneld masq" -j RETURN',
      '-A FLANNEL-POSTRTG -s 198.18.0.0/15 -d 198.18.1.0/24 -m comment --comment "flanneld masq" -j RETURN',
      '-A FLANNEL-POSTRTG ! -s 198.18.0.0/15 -d 198.18.1.0/24 -m comment --comment "flanneld masq" -j RETURN',
      '-A FLANNEL-POSTRTG -s 198.18.0.0/15 ! -d 224.0.0.0/4 -m comment --comment "flanneld masq" -j MASQUERADE --random-fully',
      '-A FLANNEL-POSTRTG ! -s 198.18.0.0/15 -d 198.18.0.0/15 -m comment --comment "flanneld masq" -j MASQUERADE --random-fully',
    ]);
  });
});
