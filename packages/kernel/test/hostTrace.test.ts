import { describe, expect, it } from 'vitest';
import { makePacket, type Packet } from '@netsim/netfilter';
import { parseHostFile } from '../src/hostFile.ts';
import { formatHostTrace, traceHostPacket } from '../src/hostTrace.ts';
import { ip, NODE_A_LINKS, seeded } from './helpers.ts';

const NODE = `hostname node-a
${NODE_A_LINKS}*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
-A PREROUTING -p tcp -m tcp --dport 30080 -j DNAT --to-destination 203.0.113.9:8080
-A POSTROUTING -o eth1 -j MASQUERADE
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
-A INPUT -p tcp -m tcp --dport 23 -j REJECT --reject-with tcp-reset
-A FORWARD -d 203.0.113.66/32 -j DROP
COMMIT
`;

function pkt(over: Partial<Packet>): Packet {
  return makePacket({ src: ip('192.0.2.10'), dst: ip('198.51.100.10'), dport: 30080, inIface: 'eth0', ...over });
}

describe('one packet through one host', () => {
  it('should forward a NodePort SYN with DNAT and MASQUERADE and report egress, matched rules and conntrack', () => {
    const r = traceHostPacket(parseHostFile(NODE, 'node-a.host'), pkt({}), { rng: seeded(1) });
    expect(r.fate).toBe('forwarded');
    expect(r.egress).toEqual({ iface: 'eth1', src: '203.0.113.1', dst: '203.0.113.9', sport: 40000, dport: 8080, nexthop: '203.0.113.9' });
    expect(r.matched).toEqual([
      { table: 'nat', chain: 'PREROUTING', index: 1, rule: '-A PREROUTING -p tcp -m tcp --dport 30080 -j DNAT --to-destination 203.0.113.9:8080' },
      { table: 'nat', chain: 'POSTROUTING', index: 1, rule: '-A POSTROUTING -o eth1 -j MASQUERADE' },
    ]);
    expect(r.conntrack).toEqual([
      'tcp      6 120 SYN_SENT src=192.0.2.10 dst=198.51.100.10 sport=40000 dport=30080 [UNREPLIED] src=203.0.113.9 dst=203.0.113.1 sport=8080 dport=40000 mark=0 use=1',
    ]);
    expect({ dnat: r.dnat, snat: r.snat, masquerade: r.masquerade }).toEqual({ dnat: '203.0.113.9:8080', snat: '203.0.113.1:40000', masquerade: true });
  });

  it('should report no NAT fields for a packet no rule NATs', () => {
    const r = traceHostPacket(parseHostFile(NODE, 'node-a.host'), pkt({ dport: 22 }), { rng: seeded(1) });
    expect({ dnat: r.dnat, snat: r.snat, masquerade: r.masquerade }).toEqual({ dnat: null, snat: null, masquerade: false });
  });

  it('should deliver a packet for a local socket and report no egress', () => {
    const r = traceHostPacket(parseHostFile(NODE, 'node-a.host'), pkt({ dport: 22 }), { rng: seeded(1) });
    expect([r.fate, r.egress]).toEqual(['delivered', null]);
  });

  it('should report a REJECT as rejected, with the RST traced back out', () => {
    const r = traceHostPacket(parseHostFile(NODE, 'node-a.host'), pkt({ dport: 23 }), { rng: seeded(1) });
    expect(r.fate).toBe('rejected');
    expect(r.reason).toBe('filter INPUT rule 1: REJECT --reject-with tcp-reset');
    expect(r.trace.some((s) => s.kind === 'fate' && s.packet.flags === 'RST,ACK' && s.iface === 'eth0')).toBe(true);
  });

  it('should report drops by rules and by kernel checks', () => {
    const host = parseHostFile(NODE, 'node-a.host');
    expect(traceHostPacket(host, pkt({ dst: ip('203.0.113.66'), dport: 80 }), { rng: seeded(1) })).toMatchObject({ fate: 'dropped', reason: 'filter FORWARD rule 1: DROP' });
    host.run('sysctl -w net.ipv4.conf.eth0.rp_filter=1', 'ip route del default');
    expect(traceHostPacket(host, pkt({ dst: ip('203.0.113.9'), dport: 80 }), { rng: seeded(1) }).reason).toBe('no route back to 192.0.2.10 (rp_filter=1 on eth0)');
  });

  it('should send a locally generated packet and call its fate sent', () => {
    const r = traceHostPacket(parseHostFile(NODE, 'node-a.host'), pkt({ src: ip('198.51.100.10'), dst: ip('192.0.2.10'), dport: 443, inIface: null }), { rng: seeded(1) });
    expect(r.fate).toBe('sent');
    expect(r.egress).toMatchObject({ iface: 'eth0', nexthop: '198.51.100.254' });
  });

  it('should print each decision, then fate, egress and the conntrack table', () => {
    const text = formatHostTrace(traceHostPacket(parseHostFile(NODE, 'node-a.host'), pkt({}), { rng: seeded(1) }));
    expect(text).toContain('TRACE: nat:PREROUTING:rule:1  -A PREROUTING -p tcp -m tcp --dport 30080 -j DNAT --to-destination 203.0.113.9:8080');
    expect(text).toContain('fate: forwarded\negress: eth1 203.0.113.1:40000 > 203.0.113.9:8080 via 203.0.113.9\nnat: DNAT to 203.0.113.9:8080, MASQUERADE to 203.0.113.1:40000\nconntrack:\n  tcp      6 120 SYN_SENT');
  });
});
