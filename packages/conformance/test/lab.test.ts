import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { formatIpv4, parseIpv4 as ip } from '@netsim/netfilter';
import { run } from '../src/exec.ts';
import { LabCommandError } from '../src/exec.ts';
import { Lab, readSysctl, type Injection } from '../src/lab.ts';
import { listNetns } from '../src/netns.ts';
import { countersFromSave, describeEgress } from '../src/outcome.ts';
import { PROTO_ICMP, PROTO_TCP, PROTO_UDP, TCP, type PacketSpec } from '../src/packet.ts';

const env = inject('conformanceEnv');

const TABLES = {
  raw: ['PREROUTING', 'OUTPUT'],
  mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'],
  nat: ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'],
  filter: ['INPUT', 'FORWARD', 'OUTPUT'],
} as const;

/** iptables-restore text: every table, ACCEPT policies unless given, plus the listed rules. */
function ruleset(rules: { readonly [table: string]: readonly string[] }, policies: { readonly [chain: string]: string } = {}): string {
  const out: string[] = [];
  for (const [t, chains] of Object.entries(TABLES)) {
    out.push(`*${t}`);
    for (const c of chains) out.push(`:${c} ${policies[`${t} ${c}`] ?? 'ACCEPT'} [0:0]`);
    out.push(...(rules[t] ?? []), 'COMMIT');
  }
  return out.join('\n') + '\n';
}

const syn: PacketSpec = { src: ip('192.0.2.2'), dst: ip('198.18.0.5'), proto: PROTO_TCP, sport: 40000, dport: 80, tcpFlags: TCP.SYN, icmpType: 0, icmpCode: 0, icmpId: 0 };
const fromClient = (packet: PacketSpec): Injection => ({ kind: 'ingress', peer: 'client', packet });

describe.skipIf(!env.ok)('lab (real kernel in network namespaces)', () => {
  let lab: Lab;
  beforeAll(() => {
    lab = Lab.create();
  });
  afterAll(() => {
    lab.destroy();
  });

  const egress = (steps: ReturnType<Lab['inject']>): string[] =>
    steps.flatMap((s) => s.frames.filter((f) => f.direction === 'out').map((f) => (f.frame.ip === undefined ? 'non-ip' : describeEgress(f.iface, f.frame.ip))));

  it('should build the node with its addresses, routes and permanent neighbours, and peers without addresses', () => {
    const addrs = run('ip', ['-n', lab.names.node, '-4', '-o', 'addr', 'show']);
    expect(addrs).toMatch(/eth0\s+inet 192\.0\.2\.1\/30 brd 192\.0\.2\.3/);
    expect(addrs).toMatch(/eth1\s+inet 198\.51\.100\.1\/30 brd 198\.51\.100\.3/);
    expect(addrs).toMatch(/vethpod\s+inet 203\.0\.113\.1\/30 brd 203\.0\.113\.3/);
    const routes = run('ip', ['-n', lab.names.node, 'route', 'show']);
    expect(routes).toContain('default via 192.0.2.2 dev eth0');
    expect(routes).toContain('198.18.0.0/16 via 198.51.100.2 dev eth1');
    const neigh = run('ip', ['-n', lab.names.node, 'neigh', 'show']);
    expect(neigh).toContain('192.0.2.2 dev eth0 lladdr 02:00:5e:00:01:02 PERMANENT');
    expect(neigh).toContain('203.0.113.2 dev vethpod lladdr 02:00:5e:00:03:02 PERMANENT');
    expect(run('ip', ['-n', lab.names.peers.client, '-4', 'addr', 'show']).trim()).toBe('');
  });

  it('should count exactly the rules a forwarded SYN matches, capture it MASQUERADEd on eth1 and list its conntrack entry', () => {
    lab.reset({
      ruleset: ruleset({
        filter: ['-A FORWARD -p udp -j DROP', '-A FORWARD -p tcp -m tcp --dport 80', '-A FORWARD -s 192.0.2.2/32 -j ACCEPT', '-A FORWARD -j DROP'],
        nat: ['-A POSTROUTING -o eth0 -j MASQUERADE', '-A POSTROUTING -o eth1 -j MASQUERADE'],
      }),
      sysctls: {},
    });
    const obs = lab.inject([fromClient(syn)]);
    expect(egress(obs)).toEqual(['eth1 tcp 198.51.100.1:40000 > 198.18.0.5:80 [SYN]']);
    expect(obs[0]?.delivered).toBe(0);
    expect(countersFromSave(lab.counters())).toEqual({
      'filter FORWARD #2': 1,
      'filter FORWARD #3': 1,
      'mangle FORWARD policy': 1,
      'mangle POSTROUTING policy': 1,
      'mangle PREROUTING policy': 1,
      'nat POSTROUTING #2': 1,
      'nat PREROUTING policy': 1,
      'raw PREROUTING policy': 1,
    });
    const ct = lab.conntrack();
    expect(ct).toHaveLength(1);
    expect(ct[0]).toMatchObject({ proto: 6, tcpState: 'SYN_SENT', unreplied: true });
    expect(formatIpv4(ct[0]?.reply.dst ?? 0)).toBe('198.51.100.1');
  });

  it('should leave no frame and no conntrack entry for a packet dropped by policy', () => {
    lab.reset({ ruleset: ruleset({}, { 'filter FORWARD': 'DROP' }), sysctls: {} });
    const obs = lab.inject([fromClient(syn)]);
    expect(egress(obs)).toEqual([]);
    expect(obs[0]?.frames.map((f) => `${f.direction} ${f.iface}`)).toEqual(['in eth0']);
    expect(countersFromSave(lab.counters())['filter FORWARD policy']).toBe(1);
    expect(lab.conntrack()).toEqual([]);
  });

  it('should capture the answers of REJECT: a RST for tcp-reset, a port unreachable quoting the packet otherwise', () => {
    lab.reset({
      ruleset: ruleset({ filter: ['-A FORWARD -p tcp -m tcp --dport 81 -j REJECT --reject-with tcp-reset', '-A FORWARD -p tcp -m tcp --dport 82 -j REJECT'] }),
      sysctls: {},
    });
    const obs = lab.inject([fromClient({ ...syn, dport: 81 }), fromClient({ ...syn, dport: 82 })]);
    expect(egress(obs.slice(0, 1))).toEqual(['eth0 tcp 198.18.0.5:81 > 192.0.2.2:40000 [ACK,RST]']);
    expect(egress(obs.slice(1))).toEqual(['eth0 icmp 192.0.2.1 > 192.0.2.2 type 3 code 3 quoting tcp 192.0.2.2:40000 > 198.18.0.5:82 [SYN]']);
    expect(lab.conntrack()).toEqual([]);
  });

  it('should see UDP for the node delivered without any answer', () => {
    lab.reset({ ruleset: ruleset({}), sysctls: {} });
    const obs = lab.inject([fromClient({ ...syn, proto: PROTO_UDP, dst: ip('192.0.2.1'), dport: 53, tcpFlags: 0 })]);
    expect(obs[0]?.delivered).toBe(1);
    expect(egress(obs)).toEqual([]);
    expect(lab.conntrack()).toHaveLength(1);
  });

  it('should report a local send dropped in OUTPUT as EPERM with nothing on the wire', () => {
    lab.reset({ ruleset: ruleset({ filter: ['-A OUTPUT -p tcp -j DROP'] }), sysctls: {} });
    const obs = lab.inject([
      { kind: 'local', mark: 0, packet: { ...syn, src: ip('192.0.2.1') } },
      { kind: 'local', mark: 0x4000, packet: { ...syn, src: ip('192.0.2.1'), proto: PROTO_ICMP, icmpType: 8, icmpId: 3, sport: 0, dport: 0, tcpFlags: 0 } },
    ]);
    expect(obs[0]?.sendError).toBe('EPERM');
    expect(egress(obs.slice(0, 1))).toEqual([]);
    expect(obs[1]?.sendError).toBeNull();
    expect(egress(obs.slice(1))).toEqual(['eth1 icmp 192.0.2.1 > 198.18.0.5 type 8 code 0 id 3']);
  });

  it('should attribute each frame to the packet that caused it when several are sent in one run', () => {
    lab.reset({ ruleset: ruleset({ nat: ['-A PREROUTING -p tcp -m tcp --dport 8080 -j DNAT --to-destination 203.0.113.2:80'] }), sysctls: {} });
    const obs = lab.inject([
      fromClient({ ...syn, dport: 8080 }),
      { kind: 'ingress', peer: 'uplink2', packet: { ...syn, src: ip('198.18.0.5'), dst: ip('192.0.2.100'), sport: 40001 } },
      fromClient({ ...syn, dst: ip('198.18.3.3'), sport: 40002 }),
    ]);
    expect(obs.map((o) => egress([o]))).toEqual([
      ['vethpod tcp 192.0.2.2:40000 > 203.0.113.2:80 [SYN]'],
      ['eth0 tcp 198.18.0.5:40001 > 192.0.2.100:80 [SYN]'],
      ['eth1 tcp 192.0.2.2:40002 > 198.18.3.3:80 [SYN]'],
    ]);
  });

  it('should reset every counter and the conntrack table between cases', () => {
    const rs = ruleset({ filter: ['-A FORWARD -j ACCEPT'] });
    lab.reset({ ruleset: rs, sysctls: {} });
    lab.inject([fromClient(syn)]);
    expect(countersFromSave(lab.counters())['filter FORWARD #1']).toBe(1);
    expect(lab.conntrack()).toHaveLength(1);
    lab.reset({ ruleset: rs, sysctls: {} });
    expect(countersFromSave(lab.counters())).toEqual({});
    expect(lab.conntrack()).toEqual([]);
  });

  it('should track connections even when the ruleset has no rule that needs conntrack', () => {
    lab.reset({ ruleset: ruleset({}), sysctls: {} });
    lab.inject([fromClient(syn)]);
    expect(lab.conntrack().map((e) => e.tcpState)).toEqual(['SYN_SENT']);
  });

  it('should write sysctls and read them back from the node', () => {
    lab.reset({ ruleset: ruleset({}), sysctls: { 'net.ipv4.conf.eth1.rp_filter': 2 } });
    expect(readSysctl(lab.names.node, 'net.ipv4.conf.eth1.rp_filter')).toBe('2');
    expect(readSysctl(lab.names.node, 'net.ipv4.icmp_ratemask')).toBe('0');
    lab.reset({ ruleset: ruleset({}), sysctls: { 'net.ipv4.conf.eth1.rp_filter': 0 } });
    expect(readSysctl(lab.names.node, 'net.ipv4.conf.eth1.rp_filter')).toBe('0');
    expect(readSysctl(lab.names.peers.pod, 'net.ipv6.conf.all.disable_ipv6')).toBe('1');
  });

  it('should fail with the real tool error when the kernel refuses a ruleset', () => {
    let err: unknown;
    try {
      lab.restore('*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j DNAT --to-destination 192.0.2.2\nCOMMIT\n');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LabCommandError);
    expect((err as LabCommandError).command).toMatch(/iptables-(nft-|legacy-)?restore/);
    expect((err as LabCommandError).status).not.toBe(0);
  });

  it('should remove all its namespaces on destroy', () => {
    const other = Lab.create();
    const names = [other.names.node, other.names.peers.client, other.names.peers.uplink2, other.names.peers.pod];
    expect(listNetns()).toEqual(expect.arrayContaining(names));
    other.destroy();
    const left = listNetns();
    expect(names.filter((n) => left.includes(n))).toEqual([]);
    expect(() => other.conntrack()).toThrow(/used after destroy/);
  });
});
