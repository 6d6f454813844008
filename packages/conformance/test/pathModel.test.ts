import { describe, expect, it } from 'vitest';
import { emptyRuleset, parseIpv4 as ip, type Chain, type Rule, type Ruleset, type TableName } from '@netsim/netfilter';
import { addrTypeOf, firstPacketConntrack, isLocalDestination, predict } from '../src/pathModel.ts';
import { PROTO_ICMP, PROTO_TCP, PROTO_UDP, TCP, type PacketSpec } from '../src/packet.ts';
import { TOPOLOGY } from '../src/topology.ts';

const syn: PacketSpec = { src: ip('192.0.2.2'), dst: ip('198.18.0.5'), proto: PROTO_TCP, sport: 40000, dport: 80, tcpFlags: TCP.SYN, icmpType: 0, icmpCode: 0, icmpId: 0 };

function withRules(table: TableName, chain: string, rules: Rule[], policy?: 'DROP'): Ruleset {
  const base = emptyRuleset();
  const old = base.tables[table].chains[chain] as Chain;
  return { tables: { ...base.tables, [table]: { name: table, chains: { ...base.tables[table].chains, [chain]: { ...old, rules, ...(policy ? { policy } : {}) } } } } };
}

describe('pathModel', () => {
  it('should start a connection only from the TCP flags conntrack accepts as new', () => {
    const state = (f: number): string => firstPacketConntrack({ ...syn, tcpFlags: f }).state;
    expect([TCP.SYN, TCP.SYN | TCP.URG, TCP.ACK, TCP.ACK | TCP.PSH, TCP.SYN | TCP.ECE | TCP.CWR].map(state)).toEqual(['NEW', 'NEW', 'NEW', 'NEW', 'NEW']);
    expect([TCP.SYN | TCP.ACK, TCP.RST, TCP.FIN | TCP.ACK, TCP.FIN, 0, TCP.SYN | TCP.FIN].map(state)).toEqual(['INVALID', 'INVALID', 'INVALID', 'INVALID', 'INVALID', 'INVALID']);
    expect(firstPacketConntrack({ ...syn, tcpFlags: TCP.ACK }).tcpState).toBe('ESTABLISHED');
    expect(firstPacketConntrack({ ...syn, proto: PROTO_ICMP, icmpType: 0 }).state).toBe('INVALID');
    expect(firstPacketConntrack({ ...syn, proto: PROTO_UDP }).state).toBe('NEW');
  });

  it('should answer addrtype like the kernel, including --limit-iface', () => {
    const t = addrTypeOf(TOPOLOGY);
    expect(t(ip('192.0.2.1'), null)).toBe('LOCAL');
    expect(t(ip('192.0.2.1'), 'eth0')).toBe('LOCAL');
    expect(t(ip('192.0.2.1'), 'eth1')).toBe('UNICAST');
    expect(t(ip('198.51.100.3'), null)).toBe('BROADCAST');
    expect(t(ip('255.255.255.255'), 'eth1')).toBe('BROADCAST');
    expect(t(ip('224.0.0.1'), null)).toBe('MULTICAST');
    expect(t(ip('127.0.0.1'), null)).toBe('LOCAL');
    expect(t(ip('198.18.0.5'), null)).toBe('UNICAST');
    expect(isLocalDestination(TOPOLOGY, ip('203.0.113.3'))).toBe(true);
    expect(isLocalDestination(TOPOLOGY, ip('203.0.113.2'))).toBe(false);
  });

  it('should predict a MASQUERADEd SYN leaving eth1 with its counters and conntrack entry', () => {
    const rs = withRules('nat', 'POSTROUTING', [{ outIface: { name: 'eth1', wildcard: false, negate: false }, matches: [], target: { kind: 'MASQUERADE', random: false, randomFully: false } }]);
    const p = predict(rs, { kind: 'ingress', peer: 'client', packet: syn }, TOPOLOGY);
    expect(p.egress).toEqual(['eth1 tcp 198.51.100.1:40000 > 198.18.0.5:80 [SYN]']);
    expect(p.counters).toMatchObject({ 'nat POSTROUTING #1': 1, 'filter FORWARD policy': 1, 'raw PREROUTING policy': 1 });
    expect(p.conntrack).toEqual(['tcp SYN_SENT 192.0.2.2:40000>198.18.0.5:80 reply 198.18.0.5:80>198.51.100.1:40000 unreplied mark=0']);
    expect(p.steps.map((s) => s.hook)).toEqual(['PREROUTING', 'FORWARD', 'POSTROUTING']);
  });

  it('should predict the RST a tcp-reset REJECT sends back and the chains that answer crosses', () => {
    const rs = withRules('filter', 'FORWARD', [{ proto: { proto: 6, negate: false }, matches: [], target: { kind: 'REJECT', with: 'tcp-reset' } }]);
    const p = predict(rs, { kind: 'ingress', peer: 'client', packet: syn }, TOPOLOGY);
    expect(p.egress).toEqual(['eth0 tcp 198.18.0.5:80 > 192.0.2.2:40000 [ACK,RST]']);
    expect(p.counters['nat POSTROUTING policy']).toBe(1);
    expect(p.counters['filter OUTPUT policy']).toBe(1);
    expect(p.counters['nat OUTPUT policy']).toBeUndefined();
    expect(p.conntrack).toEqual([]);
  });

  it('should mark a connection DNAT only when the DNAT changed its destination', () => {
    const ctDnat: Rule = { matches: [{ kind: 'conntrack', ctstate: { states: ['DNAT'], negate: false } }] };
    const withDnatTo = (to: string): Ruleset => {
      const rs = withRules('nat', 'PREROUTING', [{ matches: [], target: { kind: 'DNAT', to: { minIp: ip(to), maxIp: ip(to) }, random: false, persistent: false } }]);
      const filter = rs.tables.filter;
      return { tables: { ...rs.tables, filter: { ...filter, chains: { ...filter.chains, FORWARD: { ...(filter.chains['FORWARD'] as Chain), rules: [ctDnat] } } } } };
    };
    const moved = predict(withDnatTo('203.0.113.2'), { kind: 'ingress', peer: 'client', packet: syn }, TOPOLOGY);
    expect(moved.counters['filter FORWARD #1']).toBe(1);
    expect(moved.egress).toEqual(['vethpod tcp 192.0.2.2:40000 > 203.0.113.2:80 [SYN]']);
    const same = predict(withDnatTo('198.18.0.5'), { kind: 'ingress', peer: 'client', packet: syn }, TOPOLOGY);
    expect(same.counters['filter FORWARD #1']).toBeUndefined();
  });

  it('should predict silent local delivery for UDP to the node and re-route a DNAT in OUTPUT', () => {
    const local = predict(emptyRuleset(), { kind: 'ingress', peer: 'uplink2', packet: { ...syn, proto: PROTO_UDP, src: ip('198.18.0.5'), dst: ip('198.51.100.1'), dport: 53 } }, TOPOLOGY);
    expect(local.delivered).toBe(true);
    expect(local.egress).toEqual([]);
    const rs = withRules('nat', 'OUTPUT', [{ matches: [], target: { kind: 'DNAT', to: { minIp: ip('203.0.113.2'), maxIp: ip('203.0.113.2') }, random: false, persistent: false } }]);
    const out = predict(rs, { kind: 'local', mark: 0, packet: { ...syn, src: ip('192.0.2.1') } }, TOPOLOGY);
    expect(out.egress).toEqual(['vethpod tcp 192.0.2.1:40000 > 203.0.113.2:80 [SYN]']);
  });
});
