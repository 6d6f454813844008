import { describe, expect, it } from 'vitest';
import { Network } from '../src/network.ts';
import { seeded } from './helpers.ts';
import { append, emptyRuleset, rule, T } from './rules.ts';
import { host } from './topo.ts';

/**
 * client 192.0.2.10 — router — node eth0 198.51.100.10 (default route)
 *                            \— node eth2 198.18.0.10 (second NIC, no route back to the client)
 * A SYN to 198.18.0.10 enters by eth2; the route back to the client leaves by eth0.
 */
function asymmetric(): Network {
  const net = new Network({ rng: seeded(3) });
  host(net, 'client', { eth0: '192.0.2.10/24' }, 'ip route add default via 192.0.2.1');
  host(net, 'router', { eth0: '192.0.2.1/24', eth1: '198.51.100.254/24', eth2: '198.18.0.1/24' }, 'sysctl -w net.ipv4.ip_forward=1');
  host(
    net,
    'node',
    { eth0: '198.51.100.10/24', eth2: '198.18.0.10/24', eth1: '203.0.113.1/24' },
    'ip route add default via 198.51.100.254',
    'sysctl -w net.ipv4.ip_forward=1',
    'listen tcp 22',
  );
  host(net, 'pod', { eth0: '203.0.113.9/24' }, 'ip route add default via 203.0.113.1', 'listen tcp 8080');
  net.wire('client/eth0', 'router/eth0').wire('router/eth1', 'node/eth0').wire('router/eth2', 'node/eth2').wire('node/eth1', 'pod/eth0');
  return net;
}

describe('rp_filter', () => {
  it('should apply max(all, iface): strict drops the asymmetric SYN, loose and off let it through', () => {
    const cases: [number, number, string][] = [
      [0, 0, 'established'],
      [0, 1, 'timed-out'],
      [1, 0, 'timed-out'],
      [2, 1, 'established'],
      [1, 2, 'established'],
      [0, 2, 'established'],
    ];
    for (const [all, dev, outcome] of cases) {
      const net = asymmetric();
      net.host('node').run(`sysctl -w net.ipv4.conf.all.rp_filter=${all}`, `sysctl -w net.ipv4.conf.eth2.rp_filter=${dev}`);
      const r = net.connect('client', '198.18.0.10', 22, { nowMs: 0, synRetries: 0 });
      expect(r.kind, `all=${all} eth2=${dev}`).toBe(outcome);
      if (outcome === 'timed-out') {
        expect(r.drops[0]).toMatchObject({ host: 'node', site: { stage: 'routing', check: 'rp_filter' } });
        expect(r.drops[0]?.reason).toBe(`route back to 192.0.2.10 leaves by eth0, not eth2 (rp_filter=${Math.max(all, dev)} on eth2)`);
      }
    }
  });

  it('should check after DNAT: the SYN is already rewritten when strict rp_filter drops it on a forward path', () => {
    const net = asymmetric();
    const node = net.host('node');
    node.run('sysctl -w net.ipv4.conf.eth2.rp_filter=1').setRuleset(append(emptyRuleset(), 'nat', 'PREROUTING', rule({ p: 'tcp', dport: 30080 }, T.dnat('203.0.113.9:8080'))));
    const r = net.connect('client', '198.18.0.10', 30080, { nowMs: 0, synRetries: 0 });
    expect(r.kind).toBe('timed-out');
    const kinds = r.trace.filter((s) => s.kind !== 'wire' && s.host === 'node').map((s) => s.kind);
    expect(kinds.indexOf('nat')).toBeLessThan(kinds.indexOf('rp_filter'));
    expect(r.drops[0]?.packet).toMatchObject({ dst: '203.0.113.9', dport: 8080 });
  });

  it('should need only some route back in loose mode, and drop a source with no route at all', () => {
    const net = asymmetric();
    net.host('node').run('sysctl -w net.ipv4.conf.eth2.rp_filter=2', 'ip route del default', 'ip route add 192.0.2.0/25 via 198.51.100.254');
    expect(net.connect('client', '198.18.0.10', 22, { nowMs: 0, synRetries: 0 }).kind).toBe('established');
    net.host('client').run('ip addr add 192.0.2.200/24 dev eth0');
    const r = net.connect('client', '198.18.0.10', 22, { nowMs: 0, synRetries: 0, src: '192.0.2.200' });
    expect(r.kind).toBe('timed-out');
    expect(r.drops[0]?.reason).toBe('no route back to 192.0.2.200 (rp_filter=2 on eth2)');
  });

  it('should drop a packet claiming one of the host own addresses as source even with rp_filter off, unless accept_local', () => {
    const net = asymmetric();
    net.host('client').run('ip addr add 198.51.100.10/32 dev eth0');
    const r = net.connect('client', '198.18.0.10', 22, { nowMs: 0, synRetries: 0, src: '198.51.100.10' });
    expect(r.kind).toBe('timed-out');
    expect(r.drops[0]).toMatchObject({ host: 'node', site: { stage: 'routing', check: 'martian-source' } });
    net.host('node').run('sysctl -w net.ipv4.conf.eth2.accept_local=1');
    const again = net.connect('client', '198.18.0.10', 22, { nowMs: 0, synRetries: 0, src: '198.51.100.10' });
    expect(again.drops.some((d) => d.site.stage === 'routing' && d.site.check === 'martian-source' && d.host === 'node' && d.packet.dport === 22)).toBe(false);
  });

  it('should ignore fwmark policy rules in the reverse lookup unless src_valid_mark is set', () => {
    const net = asymmetric();
    const node = net.host('node');
    // Marked packets would route back through eth2 (table 100) — but only if the mark is used.
    node.run('sysctl -w net.ipv4.conf.eth2.rp_filter=1', 'ip route add default via 198.18.0.1 table 100', 'ip rule add fwmark 0x1 lookup 100 priority 100');
    node.setRuleset(append(emptyRuleset(), 'mangle', 'PREROUTING', rule({ i: 'eth2' }, T.mark(1))));
    expect(net.connect('client', '198.18.0.10', 22, { nowMs: 0, synRetries: 0 }).kind).toBe('timed-out');
    node.run('sysctl -w net.ipv4.conf.eth2.src_valid_mark=1');
    expect(net.connect('client', '198.18.0.10', 22, { nowMs: 0, synRetries: 0 }).kind).toBe('established');
  });
});
