import { describe, expect, it } from 'vitest';
import { isKernelError } from '../src/errors.ts';
import { parseHostFile } from '../src/hostFile.ts';
import { NODE_A_LINKS } from './helpers.ts';

const NODE = `hostname node-a
# interfaces
${NODE_A_LINKS}
*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
-A PREROUTING -p tcp -m tcp --dport 30080 -j DNAT --to-destination 203.0.113.9:8080
COMMIT
`;

function errorOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (isKernelError(e)) return `${e.code} ${JSON.stringify(e.location)} ${e.message}`;
    throw e;
  }
  return 'no error';
}

describe('host files', () => {
  it('should build the host from ip/sysctl/listen commands and an inline iptables-save section', () => {
    const h = parseHostFile(NODE, 'node-a.host');
    expect(h.name).toBe('node-a');
    expect(h.formatRoutes().split('\n')).toContain('default via 198.51.100.254 dev eth0');
    expect(h.getSysctl('net.ipv4.ip_forward')).toBe('1');
    expect(h.config.listeners).toEqual([{ proto: 'tcp', port: 22, addr: 0 }]);
    expect(h.ruleset.tables.nat.chains.PREROUTING?.rules).toHaveLength(1);
  });

  it('should read the ruleset from a file named by iptables-restore', () => {
    const text = NODE.slice(0, NODE.indexOf('*nat')) + 'iptables-restore node-a.rules\n';
    const h = parseHostFile(text, 'dir/node-a.host', (p) => {
      expect(p).toBe('node-a.rules');
      return '*filter\n:INPUT DROP [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n';
    });
    expect(h.ruleset.tables.filter.chains.INPUT?.policy).toBe('DROP');
  });

  it('should name file, line, column and token of a bad command', () => {
    const text = NODE.replace('ip route add default via 198.51.100.254', 'ip route add default via 198.51.100.254 bogus');
    expect(errorOf(() => parseHostFile(text, 'node-a.host'))).toBe(
      'parse {"file":"node-a.host","line":9,"column":41,"token":"bogus"} node-a.host:9:41: Error: either "to" is duplicate, or "bogus" is a garbage.',
    );
  });

  it('should report what the kernel refuses at the line that asked for it', () => {
    const text = NODE.replace('ip route add default via 198.51.100.254', 'ip route add default via 192.0.2.1');
    expect(errorOf(() => parseHostFile(text, 'node-a.host'))).toBe(
      'parse {"file":"node-a.host","line":9,"column":1,"token":"ip"} node-a.host:9:1: Error: Nexthop has invalid gateway.',
    );
  });

  it('should keep the file line numbers for an error in the iptables-save section', () => {
    const text = NODE.replace('-A PREROUTING -p tcp', '-A NOSUCH -p tcp');
    expect(errorOf(() => parseHostFile(text, 'node-a.host'))).toMatch(/^parse \{"file":"node-a.host","line":16,"column":4,"token":"NOSUCH"\}/);
  });

  it('should refuse an unterminated table section and a ruleset given twice', () => {
    expect(errorOf(() => parseHostFile(NODE.replace('COMMIT\n', ''), 'n.host'))).toContain('table section without COMMIT');
    expect(errorOf(() => parseHostFile(`${NODE}iptables-restore x.rules\n`, 'n.host', () => ''))).toContain('give the ruleset inline or with iptables-restore, not both');
  });
});
