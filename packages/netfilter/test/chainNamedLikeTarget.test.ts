import { describe, expect, it } from 'vitest';
import { formatSave, freshRuleset, restore, tryRestore } from '../src/index.ts';

// Recorded from iptables-restore 1.8.9 (nf_tables): once `:LOG - [0:0]` is read, `-j LOG` jumps
// to that chain, and LOG's own options are unknown; before the declaration `-j LOG` is the target.
describe('user chains named like target extensions (iptables-restore)', () => {
  it('should jump to the declared chain, not run the extension', () => {
    const rs = restore(freshRuleset(), '*filter\n:CLASSIFY - [0:0]\n:LOG - [0:0]\n-A INPUT -j CLASSIFY\n-A INPUT -s 203.0.113.0/24 -j LOG\n-A INPUT -g LOG\n-A LOG -j RETURN\nCOMMIT\n');
    const input = rs.tables.filter.chains['INPUT']?.rules ?? [];
    expect(input.map((r) => r.target)).toEqual([
      { kind: 'jump', chain: 'CLASSIFY' },
      { kind: 'jump', chain: 'LOG' },
      { kind: 'goto', chain: 'LOG' },
    ]);
    expect(formatSave(rs)).toContain('-A INPUT -j CLASSIFY\n-A INPUT -s 203.0.113.0/24 -j LOG\n-A INPUT -g LOG\n');
  });

  it('should refuse the extension options after the declaration, and take the target before it', () => {
    const r = tryRestore(freshRuleset(), '*filter\n-A INPUT -j LOG\n:LOG - [0:0]\n-A INPUT -j LOG --log-prefix "y: "\nCOMMIT\n', { version: '1.8.9' });
    expect('error' in r && r.error.stderr).toBe(
      'iptables-restore v1.8.9 (nf_tables): unknown option "--log-prefix"\nError occurred at line: 4\nTry `iptables-restore -h\' or \'iptables-restore --help\' for more information.\n',
    );
    const before = restore(freshRuleset(), '*filter\n-A INPUT -j LOG\n:LOG - [0:0]\nCOMMIT\n');
    expect(before.tables.filter.chains['INPUT']?.rules[0]?.target).toMatchObject({ kind: 'LOG' });
  });
});
