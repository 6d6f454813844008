import { describe, expect, it } from 'vitest';
import { conntrackCommand } from '../src/conntrackCli.ts';
import { append, emptyRuleset, rule, T } from './rules.ts';
import { nodeWorld } from './topo.ts';

/** The node after one NodePort TCP connection and one UDP exchange, as in the real runs. */
function world(): ReturnType<typeof nodeWorld> {
  const w = nodeWorld();
  let rs = append(emptyRuleset(), 'nat', 'PREROUTING', rule({ p: 'tcp', dport: 30080 }, T.dnat('203.0.113.9:8080')));
  rs = append(rs, 'nat', 'PREROUTING', rule({ p: 'udp', dport: 30053 }, T.dnat('203.0.113.9:53')));
  rs = append(rs, 'nat', 'POSTROUTING', rule({ o: 'eth1' }, T.masq()));
  w.node.setRuleset(rs);
  w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, sport: 40300 });
  w.net.udp('client', '198.51.100.10', 30053, { nowMs: 0, sport: 41300 });
  w.net.udp('client', '198.51.100.10', 5301, { nowMs: 0, sport: 41301 });
  return w;
}

const TCP = 'tcp      6 431996 ESTABLISHED src=192.0.2.10 dst=198.51.100.10 sport=40300 dport=30080 src=203.0.113.9 dst=203.0.113.1 sport=8080 dport=40300 [ASSURED] mark=0 use=1\n';
const UDP = 'udp      17 26 src=192.0.2.10 dst=198.51.100.10 sport=41300 dport=30053 src=203.0.113.9 dst=203.0.113.1 sport=53 dport=41300 mark=0 use=1\n';
const UDP_UNREPLIED = 'udp      17 26 src=192.0.2.10 dst=198.51.100.10 sport=41301 dport=5301 [UNREPLIED] src=198.51.100.10 dst=192.0.2.10 sport=5301 dport=41301 mark=0 use=1\n';

describe('conntrack -L', () => {
  it('should list every entry in the real format with the summary on stderr', () => {
    const w = world();
    expect(conntrackCommand(w.node.conntrack, ['-L'], 4000)).toEqual({
      stdout: TCP + UDP + UDP_UNREPLIED,
      stderr: 'conntrack v1.4.7 (conntrack-tools): 3 flow entries have been shown.\n',
      exitCode: 0,
    });
  });

  it('should filter by protocol, original and reply addresses, ports and NAT', () => {
    const w = world();
    const L = (...a: string[]): string => conntrackCommand(w.node.conntrack, ['-L', ...a], 4000).stdout;
    expect(L('-p', 'udp', '--orig-dst', '198.51.100.10')).toBe(UDP + UDP_UNREPLIED);
    expect(L('--reply-src', '203.0.113.9')).toBe(TCP + UDP);
    expect(L('-p', 'tcp', '--orig-port-dst', '30080', '--reply-port-src', '8080')).toBe(TCP);
    expect(L('--dst-nat')).toBe(TCP + UDP);
    expect(L('--dst-nat', '203.0.113.9:8080')).toBe(TCP);
    expect(L('--src-nat', '203.0.113.1')).toBe(TCP + UDP);
    expect(L('-p', 'tcp', '--state', 'ESTABLISHED')).toBe(TCP);
    expect(L('-s', '192.0.2.10', '-d', '198.51.100.10', '-p', 'udp', '--dport', '5301')).toBe(UDP_UNREPLIED);
    expect(L('-o', 'extended', '-p', 'tcp')).toBe(`ipv4     2 ${TCP}`);
    expect(conntrackCommand(w.node.conntrack, ['-C'], 4000).stdout).toBe('3\n');
  });
});

describe('conntrack -D', () => {
  it('should delete what kube-proxy deletes for a removed UDP endpoint, printing it, and exit 1 when nothing matches', () => {
    const w = world();
    const first = conntrackCommand(w.node.conntrack, ['-D', '-p', 'udp', '--dst-nat', '203.0.113.9'], 4000);
    expect(first).toEqual({ stdout: UDP, stderr: 'conntrack v1.4.7 (conntrack-tools): 1 flow entries have been deleted.\n', exitCode: 0 });
    expect(conntrackCommand(w.node.conntrack, ['-D', '-p', 'udp', '--dst-nat', '203.0.113.9'], 4000)).toEqual({
      stdout: '',
      stderr: 'conntrack v1.4.7 (conntrack-tools): 0 flow entries have been deleted.\n',
      exitCode: 1,
    });
    expect(w.node.conntrack.count(4000)).toBe(2);
  });

  it('should make the next datagram of a deleted flow take a new NAT decision', () => {
    const w = world();
    w.pod.run('listen udp 5353');
    w.node.setRuleset(append(emptyRuleset(), 'nat', 'PREROUTING', rule({ p: 'udp', dport: 30053 }, T.dnat('203.0.113.9:5353'))));
    conntrackCommand(w.node.conntrack, ['-D', '-p', 'udp', '--orig-port-dst', '30053'], 4000);
    const r = w.net.udp('client', '198.51.100.10', 30053, { nowMs: 4000, sport: 41300 });
    expect(r.trace.some((s) => s.kind === 'nat' && s.host === 'node' && s.action === 'bound' && s.to === '203.0.113.9:5353')).toBe(true);
  });

  it('should flush everything with -F', () => {
    const w = world();
    expect(conntrackCommand(w.node.conntrack, ['-F'], 0).stderr).toBe('conntrack v1.4.7 (conntrack-tools): connection tracking table has been emptied.\n');
    expect(w.node.conntrack.count(0)).toBe(0);
  });

  it('should reject bad input with the real messages and exit status 2', () => {
    const w = world();
    const run = (...a: string[]): string => {
      const r = conntrackCommand(w.node.conntrack, a, 0);
      return `${r.exitCode} ${r.stderr.split('\n')[0] ?? ''}`;
    };
    expect(run('-D', '--orig-src', '300.1.1.1')).toBe("2 conntrack v1.4.7 (conntrack-tools): Invalid IP address `300.1.1.1'");
    expect(run('-D', '-p', 'foo')).toBe("2 conntrack v1.4.7 (conntrack-tools): `foo' unsupported protocol");
    expect(run('-D', '--dport', '5')).toBe("2 conntrack v1.4.7 (conntrack-tools): unknown option `--dport'");
    expect(run('-L', '--state', 'ESTABLISHED')).toBe("2 conntrack v1.4.7 (conntrack-tools): unknown option `--state'");
    expect(run('-L', '-D')).toBe('2 conntrack v1.4.7 (conntrack-tools): Invalid commands combination');
    expect(conntrackCommand(w.node.conntrack, ['-D', '--bogus'], 0).stderr).toBe(
      "conntrack v1.4.7 (conntrack-tools): unknown option `--bogus'\nTry `conntrack -h' or 'conntrack --help' for more information.\n",
    );
    expect(w.node.conntrack.count(0)).toBe(3);
  });
});
