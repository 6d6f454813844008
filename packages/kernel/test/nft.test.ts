/**
 * The host's nftables ruleset in the datapath: base chains at their hooks in priority order beside
 * the iptables tables, the NAT core shared by iptables nat and nft nat chains, verdicts and
 * statements with their effects on the packet, conntrack and the listing.
 */
import { describe, expect, it } from 'vitest';
import { makePacket, type Packet } from '@netsim/netfilter';
import { formatRuleset, nftApply } from '@netsim/nftables';
import { parseHostFile } from '../src/hostFile.ts';
import { formatHostTrace, traceHostPacket } from '../src/hostTrace.ts';
import { ip, NODE_A_LINKS, seeded } from './helpers.ts';

function node(rules: string): string {
  return `hostname node-a\n${NODE_A_LINKS}${rules}`;
}

function pkt(over: Partial<Packet> = {}): Packet {
  return makePacket({ src: ip('192.0.2.10'), dst: ip('198.51.100.10'), dport: 30080, inIface: 'eth0', ...over });
}

const DNAT_NODEPORT = `table ip nat {
  chain prerouting {
    type nat hook prerouting priority dstnat; policy accept;
    tcp dport 30080 dnat to 203.0.113.9:8080
  }
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    oifname "eth1" masquerade
  }
}
`;

describe('nft base chains in the host datapath', () => {
  it('should DNAT and masquerade a forwarded NodePort SYN with nft nat chains', () => {
    const r = traceHostPacket(parseHostFile(node(DNAT_NODEPORT), 'a.host'), pkt(), { rng: seeded(1) });
    expect(r.fate).toBe('forwarded');
    expect(r.egress).toEqual({ iface: 'eth1', src: '203.0.113.1', dst: '203.0.113.9', sport: 40000, dport: 8080, nexthop: '203.0.113.9' });
    expect({ dnat: r.dnat, snat: r.snat, masquerade: r.masquerade }).toEqual({ dnat: '203.0.113.9:8080', snat: '203.0.113.1:40000', masquerade: true });
  });

  it('should walk nat chains for the first packet only: a later rule change does not move the flow', () => {
    const host = parseHostFile(node(DNAT_NODEPORT), 'a.host');
    traceHostPacket(host, pkt(), { rng: seeded(1) });
    host.setNft(nftApply(host.nft, 'flush chain ip nat prerouting\nadd rule ip nat prerouting tcp dport 30080 dnat to 203.0.113.77:8080\n'));
    // A retransmitted SYN: still NEW, but its connection's NAT is decided.
    const second = traceHostPacket(host, pkt(), { rng: seeded(1) });
    expect(second.egress?.dst).toBe('203.0.113.9');
    expect(second.trace.some((s) => s.kind === 'nat-skip' && s.hook === 'PREROUTING' && s.reason === 'binding-exists')).toBe(true);
    expect(second.trace.some((s) => s.kind === 'nft' && s.chain === 'prerouting')).toBe(false);
  });

  it('should run a nat chain at the NAT core priority whatever its own (Linux 6.18: -150 is seen at -90, not at -120)', () => {
    const host = parseHostFile(
      node(`table ip t {
  chain nat1 {
    type nat hook prerouting priority -150; policy accept;
    tcp dport 30080 dnat to 203.0.113.9:8080
  }
  chain f1 {
    type filter hook prerouting priority -120; policy accept;
    ip daddr 203.0.113.9 counter
    ip daddr 198.51.100.10 counter
  }
  chain f3 {
    type filter hook prerouting priority dstnat + 10; policy accept;
    ip daddr 203.0.113.9 counter
    ip daddr 198.51.100.10 counter
  }
}
`),
      'a.host',
    );
    traceHostPacket(host, pkt(), { rng: seeded(1) });
    const listing = formatRuleset(host.nftListing);
    expect(listing).toContain('type filter hook prerouting priority -120; policy accept;\n\t\tip daddr 203.0.113.9 counter packets 0 bytes 0\n\t\tip daddr 198.51.100.10 counter packets 1 bytes 60');
    expect(listing).toContain('priority dstnat + 10; policy accept;\n\t\tip daddr 203.0.113.9 counter packets 1 bytes 60\n\t\tip daddr 198.51.100.10 counter packets 0 bytes 0');
    // The value loaded is unchanged; only the listing shows what was counted.
    expect(formatRuleset(host.nft)).not.toContain('packets 1');
  });

  it('should see no connection before conntrack (priority below -200): ct state is invalid there, new after', () => {
    const host = parseHostFile(
      node(`table ip t {
  chain early {
    type filter hook prerouting priority raw; policy accept;
    ct state invalid counter
    ct state new counter
  }
  chain late {
    type filter hook prerouting priority mangle; policy accept;
    ct state invalid counter
    ct state new counter
  }
}
`),
      'a.host',
    );
    traceHostPacket(host, pkt({ dport: 22 }), { rng: seeded(1) });
    const listing = formatRuleset(host.nftListing);
    expect(listing).toContain('priority raw; policy accept;\n\t\tct state invalid counter packets 1 bytes 60\n\t\tct state new counter packets 0 bytes 0');
    expect(listing).toContain('priority mangle; policy accept;\n\t\tct state invalid counter packets 0 bytes 0\n\t\tct state new counter packets 1 bytes 60');
  });

  it('should let the first NAT decision at a hook win between the iptables nat table and nft nat chains', () => {
    const iptables = `*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
-A PREROUTING -p tcp -m tcp --dport 30080 -j DNAT --to-destination 203.0.113.20:8080
COMMIT
`;
    const nftAt = (prio: number): string => `table ip kp {
  chain pre {
    type nat hook prerouting priority ${prio}; policy accept;
    tcp dport 30080 dnat to 203.0.113.30:8080
  }
}
`;
    const before = traceHostPacket(parseHostFile(node(iptables + nftAt(-110)), 'a.host'), pkt(), { rng: seeded(1) });
    expect(before.dnat).toBe('203.0.113.30:8080');
    const after = traceHostPacket(parseHostFile(node(iptables + nftAt(-90)), 'a.host'), pkt(), { rng: seeded(1) });
    expect(after.dnat).toBe('203.0.113.20:8080');
    expect(after.trace.some((s) => s.kind === 'nft' && s.table === 'kp')).toBe(false);
  });

  it('should run nft and iptables filter chains interleaved by priority, a drop in either ending the packet', () => {
    const iptables = `*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
-A INPUT -p tcp -m tcp --dport 22 -j DROP
COMMIT
`;
    const nft = (prio: number): string => `table inet f {
  chain input {
    type filter hook input priority ${prio}; policy accept;
    tcp dport 22 counter accept
  }
}
`;
    const early = parseHostFile(node(iptables + nft(-10)), 'a.host');
    const r1 = traceHostPacket(early, pkt({ dport: 22 }), { rng: seeded(1) });
    // accept ends only that base chain: the iptables filter table still drops.
    expect(r1.fate).toBe('dropped');
    expect(r1.trace.filter((s) => s.kind === 'nft' || s.kind === 'table').map((s) => (s.kind === 'nft' ? `nft ${s.chain}` : `${s.table} ${s.hook}`))).toEqual(['nft input', 'filter INPUT']);
    const late = parseHostFile(node(iptables + nft(10)), 'a.host');
    const r2 = traceHostPacket(late, pkt({ dport: 22 }), { rng: seeded(1) });
    expect(r2.fate).toBe('dropped');
    expect(formatRuleset(late.nftListing)).toContain('counter packets 0 bytes 0 accept');
  });

  it('should run chains of equal priority last-registered first: after the iptables table and the NAT core, an nft chain at their priority runs before them', () => {
    const host = parseHostFile(
      node(`*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
-A PREROUTING -p tcp -m tcp --dport 30080 -j DNAT --to-destination 203.0.113.9:8080
COMMIT
table ip t {
  chain first {
    type filter hook prerouting priority dstnat; policy accept;
    ip daddr 198.51.100.10 counter
  }
  chain second {
    type filter hook prerouting priority dstnat; policy accept;
    ip daddr 198.51.100.10 counter drop
  }
}
`),
      'a.host',
    );
    const r = traceHostPacket(host, pkt(), { rng: seeded(1) });
    // second (created last) runs first and drops before the NAT core and before first.
    expect([r.fate, r.dnat]).toEqual(['dropped', null]);
    expect(formatRuleset(host.nftListing)).toContain('ip daddr 198.51.100.10 counter packets 0 bytes 0\n');
  });

  it('should not match ct mark or ct status without a connection (before conntrack), while ct state reads invalid', () => {
    const host = parseHostFile(node('table ip t {\n  chain raw {\n    type filter hook prerouting priority raw; policy accept;\n    ct mark 0 counter\n    ct mark != 1 counter\n    ct state invalid counter\n  }\n}\n'), 'a.host');
    traceHostPacket(host, pkt({ dport: 22 }), { rng: seeded(1) });
    expect(formatRuleset(host.nftListing)).toContain('ct mark 0x00000000 counter packets 0 bytes 0\n\t\tct mark != 0x00000001 counter packets 0 bytes 0\n\t\tct state invalid counter packets 1 bytes 60');
  });

  it('should let a later rule read the connection mark a ct mark set just wrote (kernel 6.18, conformance seed 5 case 132)', () => {
    const host = parseHostFile(node('table ip t {\n  chain input {\n    type filter hook input priority 0; policy accept;\n    ct mark set 0x00000002\n    ct mark 0x00000000 counter\n    ct mark 0x00000002 counter\n  }\n}\n'), 'a.host');
    traceHostPacket(host, pkt({ dport: 22 }), { rng: seeded(1) });
    expect(formatRuleset(host.nftListing)).toContain('ct mark 0x00000000 counter packets 0 bytes 0\n\t\tct mark 0x00000002 counter packets 1 bytes 60');
  });

  it('should compare tcp flags with != exactly (a SYN,ECE matches != syn), a bare flag being a bit test', () => {
    const host = parseHostFile(node('table ip t {\n  chain input {\n    type filter hook input priority 0; policy accept;\n    tcp flags != syn counter\n    tcp flags syn counter\n  }\n}\n'), 'a.host');
    traceHostPacket(host, pkt({ dport: 22, tcpFlags: 0x42 }), { rng: seeded(1) });
    expect(formatRuleset(host.nftListing)).toContain('tcp flags != syn counter packets 1 bytes 60\n\t\ttcp flags syn counter packets 1 bytes 60');
  });

  it('should drop by a base chain policy and name the chain', () => {
    const host = parseHostFile(node('table inet f {\n  chain input {\n    type filter hook input priority filter; policy drop;\n    tcp dport 80 accept\n  }\n}\n'), 'a.host');
    const r = traceHostPacket(host, pkt({ dport: 22 }), { rng: seeded(1) });
    expect(r.fate).toBe('dropped');
    expect(r.reason).toBe('nft inet f input policy drop');
  });

  it('should reject with a TCP reset, and by default with ICMP port unreachable', () => {
    const host = parseHostFile(
      node('table ip f {\n  chain input {\n    type filter hook input priority 0; policy accept;\n    tcp dport 23 reject with tcp reset\n    tcp dport 24 reject\n    tcp dport 25 reject with icmp type admin-prohibited\n  }\n}\n'),
      'a.host',
    );
    const rst = traceHostPacket(host, pkt({ dport: 23 }), { rng: seeded(1) });
    expect(rst.fate).toBe('rejected');
    expect(rst.reason).toBe('nft ip f input rule tcp dport 23 reject with tcp reset: reject (tcp-reset)');
    expect(rst.trace.some((s) => s.kind === 'fate' && s.packet.flags === 'RST,ACK' && s.iface === 'eth0')).toBe(true);
    const icmp = traceHostPacket(host, pkt({ dport: 24, sport: 40001 }), { rng: seeded(1) });
    expect(icmp.fate).toBe('rejected');
    expect(icmp.trace.some((s) => s.kind === 'stack' && s.event === 'icmp-error' && s.detail.startsWith('sends destination unreachable (code 3)'))).toBe(true);
    const admin = traceHostPacket(host, pkt({ dport: 25, sport: 40002 }), { rng: seeded(1) });
    expect(admin.trace.some((s) => s.kind === 'stack' && s.event === 'icmp-error' && s.detail.startsWith('sends destination unreachable (code 13)'))).toBe(true);
  });

  it('should set the packet mark and the connection mark (meta mark set, ct mark set)', () => {
    const host = parseHostFile(
      node('table ip m {\n  chain pre {\n    type filter hook prerouting priority mangle; policy accept;\n    tcp dport 22 meta mark set 0x4000 ct mark set meta mark\n  }\n  chain input {\n    type filter hook input priority 0; policy accept;\n    meta mark 0x4000 counter\n    ct mark 0x4000 counter\n  }\n}\n'),
      'a.host',
    );
    const r = traceHostPacket(host, pkt({ dport: 22 }), { rng: seeded(1) });
    expect(r.fate).toBe('delivered');
    expect(r.conntrack[0]).toContain('mark=16384');
    expect(formatRuleset(host.nftListing)).toContain('meta mark 0x00004000 counter packets 1 bytes 60\n\t\tct mark 0x00004000 counter packets 1 bytes 60');
  });

  it('should leave a packet untracked after notrack before conntrack, so nat chains never see it', () => {
    const host = parseHostFile(
      node(`table ip raw {\n  chain pre {\n    type filter hook prerouting priority raw; policy accept;\n    tcp dport 30080 notrack\n  }\n}\n${DNAT_NODEPORT}`),
      'a.host',
    );
    const r = traceHostPacket(host, pkt(), { rng: seeded(1) });
    expect(r.conntrack).toEqual([]);
    expect(r.dnat).toBeNull();
    expect(r.trace.some((s) => s.kind === 'conntrack' && s.event === 'untracked')).toBe(true);
  });

  it('should snat to an address and port range, and redirect to the incoming interface address', () => {
    const host = parseHostFile(
      node(`table ip nat {
  chain pre {
    type nat hook prerouting priority dstnat; policy accept;
    tcp dport 8080 redirect to :22
  }
  chain post {
    type nat hook postrouting priority srcnat; policy accept;
    oifname "eth1" meta l4proto tcp snat to 203.0.113.50:5000-5010
  }
}
`),
      'a.host',
    );
    const red = traceHostPacket(host, pkt({ dport: 8080 }), { rng: seeded(1) });
    expect([red.fate, red.dnat]).toEqual(['delivered', '198.51.100.10:22']);
    const sn = traceHostPacket(host, pkt({ dst: ip('203.0.113.9'), dport: 80 }), { rng: seeded(1) });
    expect(sn.snat).toMatch(/^203\.0\.113\.50:50(0\d|10)$/);
  });

  it('should spread with numgen random (seeded: same seed, same choice) and rotate with numgen inc', () => {
    const rules = (mode: string): string => `table ip lb {
  chain pre {
    type nat hook prerouting priority dstnat; policy accept;
    tcp dport 30080 dnat to numgen ${mode} mod 2 map { 0 : 203.0.113.10, 1 : 203.0.113.11 }
  }
}
`;
    const picks = (seed: number): string[] => {
      const host = parseHostFile(node(rules('random')), 'a.host');
      const rng = seeded(seed);
      return Array.from({ length: 8 }, (_, i) => traceHostPacket(host, pkt({ sport: 41000 + i }), { rng }).dnat ?? '');
    };
    expect(picks(5)).toEqual(picks(5));
    expect(new Set(picks(5)).size).toBe(2);
    const inc = parseHostFile(node(rules('inc')), 'a.host');
    expect(Array.from({ length: 4 }, (_, i) => traceHostPacket(inc, pkt({ sport: 42000 + i }), { rng: seeded(1) }).dnat)).toEqual([
      '203.0.113.10:30080',
      '203.0.113.11:30080',
      '203.0.113.10:30080',
      '203.0.113.11:30080',
    ]);
  });

  it('should refuse queue at load, naming it unsupported', () => {
    expect(() => parseHostFile(node('table ip f {\n  chain input {\n    type filter hook input priority 0; policy accept;\n    tcp dport 22 queue\n  }\n}\n'), 'a.host')).toThrow(
      'a.host:14:18-22: Error: queue is not supported by netsim (no userspace queue model)',
    );
  });

  it('should match fib daddr type local, sets, verdict maps, concatenations and intervals, with jump and return', () => {
    const host = parseHostFile(
      node(`table inet f {
  set allowed {
    type ipv4_addr . inet_proto . inet_service
    elements = { 192.0.2.10 . tcp . 22 }
  }
  map ports {
    type inet_service : verdict
    flags interval
    elements = { 8000-8999 : jump web, 23 : drop }
  }
  chain web {
    ip saddr 192.0.2.0/28 return
    drop
  }
  chain input {
    type filter hook input priority 0; policy drop;
    fib daddr type != local drop
    ip saddr . meta l4proto . th dport @allowed accept
    tcp dport vmap @ports
    tcp dport 8080 accept
  }
}
`),
      'a.host',
    );
    expect(traceHostPacket(host, pkt({ dport: 22 }), { rng: seeded(1) }).fate).toBe('delivered');
    expect(traceHostPacket(host, pkt({ dport: 22, src: ip('192.0.2.11') }), { rng: seeded(1) }).fate).toBe('dropped');
    expect(traceHostPacket(host, pkt({ dport: 8080, sport: 40010 }), { rng: seeded(1) }).fate).toBe('delivered');
    const out = traceHostPacket(host, pkt({ dport: 8080, src: ip('192.0.2.99') }), { rng: seeded(1) });
    expect([out.fate, out.reason]).toEqual(['dropped', 'nft inet f web rule drop: drop']);
  });

  it('should print each base chain in the style of nft monitor trace, in hook order with the iptables tables', () => {
    const host = parseHostFile(
      node(`*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT
COMMIT
table inet f {
  chain input {
    type filter hook input priority filter + 10; policy accept;
    tcp dport 22 counter accept
  }
}
`),
      'a.host',
    );
    const text = formatHostTrace(traceHostPacket(host, pkt({ dport: 22 }), { rng: seeded(1) }));
    expect(text).toContain(`[node-a] filter INPUT: ACCEPT
    TRACE: filter:INPUT:rule:1  -A INPUT -p tcp -m tcp --dport 22 -j ACCEPT
[node-a] nft inet f input (INPUT, priority 10): accept
    trace id 00000001 inet f input packet: iif "eth0" ip saddr 192.0.2.10 ip daddr 198.51.100.10 ip ttl 64 ip length 60 tcp sport 40000 tcp dport 22 tcp flags == syn
    trace id 00000001 inet f input rule tcp dport 22 counter packets 0 bytes 0 accept (verdict accept)
`);
  });

  it('should point at the host file line of an nft error, with the real message and caret', () => {
    expect(() => parseHostFile(node('table ip f {\n  chain input {\n    type filter hook input priority 0; policy accept;\n    tcp dport 22 acept\n  }\n}\n'), 'a.host')).toThrow(
      /^a\.host:14:23-23: Error: syntax error, unexpected newline\n {4}tcp dport 22 acept\n {22}\^$/,
    );
  });
});
