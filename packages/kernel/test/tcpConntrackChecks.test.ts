/**
 * Conntrack's TCP checks against what a 6.18 kernel did in a network namespace (iptables-nft,
 * conntrack pinned on, a first TCP segment forwarded from 192.0.2.2 to 198.18.0.5:80 through a
 * FORWARD chain counting `--ctstate INVALID`, `NEW`, `ESTABLISHED`, then `conntrack -L`):
 * the flag combinations below are recorded from that run, for both values of
 * `net.netfilter.nf_conntrack_tcp_loose`.
 */
import { describe, expect, it } from 'vitest';
import { makePacket, type Packet } from '@netsim/netfilter';
import { parseHostFile } from '../src/hostFile.ts';
import { traceHostPacket } from '../src/hostTrace.ts';
import { tcpValidFlags } from '../src/conntrack.ts';
import { getSysctl } from '../src/hostConfig.ts';
import { ip, seeded } from './helpers.ts';

const HOST = `hostname node
ip link add eth0 type physical
ip link set eth0 up
ip addr add 192.0.2.1/30 dev eth0
ip link add eth1 type physical
ip link set eth1 up
ip addr add 198.51.100.1/30 dev eth1
ip route add default via 192.0.2.2
ip route add 198.18.0.0/16 via 198.51.100.2
sysctl -w net.ipv4.ip_forward=1
listen tcp 80
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
-A FORWARD -m conntrack --ctstate INVALID
-A FORWARD -m conntrack --ctstate NEW
-A FORWARD -m conntrack --ctstate ESTABLISHED
COMMIT
`;

const F = { FIN: 0x01, SYN: 0x02, RST: 0x04, PSH: 0x08, ACK: 0x10, URG: 0x20, ECE: 0x40, CWR: 0x80 } as const;

/** Flags, then for loose=1 and loose=0: the `--ctstate` the kernel matched and the entry's TCP state (or none). */
const RECORDED: readonly [string, number, readonly [string, string | null], readonly [string, string | null]][] = [
  ['ACK', F.ACK, ['NEW', 'ESTABLISHED'], ['INVALID', null]],
  ['SYN', F.SYN, ['NEW', 'SYN_SENT'], ['NEW', 'SYN_SENT']],
  ['SYN,FIN', F.SYN | F.FIN, ['INVALID', null], ['INVALID', null]],
  ['FIN', F.FIN, ['INVALID', null], ['INVALID', null]],
  ['none', 0, ['INVALID', null], ['INVALID', null]],
  ['SYN,ACK', F.SYN | F.ACK, ['INVALID', null], ['INVALID', null]],
  ['SYN,URG', F.SYN | F.URG, ['NEW', 'SYN_SENT'], ['NEW', 'SYN_SENT']],
  ['SYN,ACK,URG', F.SYN | F.ACK | F.URG, ['INVALID', null], ['INVALID', null]],
  ['RST', F.RST, ['INVALID', null], ['INVALID', null]],
  ['RST,ACK', F.RST | F.ACK, ['INVALID', null], ['INVALID', null]],
  ['FIN,ACK', F.FIN | F.ACK, ['INVALID', null], ['INVALID', null]],
  ['FIN,ACK,URG', F.FIN | F.ACK | F.URG, ['INVALID', null], ['INVALID', null]],
  ['ACK,URG', F.ACK | F.URG, ['NEW', 'ESTABLISHED'], ['INVALID', null]],
  ['SYN,RST', F.SYN | F.RST, ['INVALID', null], ['INVALID', null]],
  ['SYN,PSH', F.SYN | F.PSH, ['NEW', 'SYN_SENT'], ['NEW', 'SYN_SENT']],
  ['ACK,PSH', F.ACK | F.PSH, ['NEW', 'ESTABLISHED'], ['INVALID', null]],
  ['FIN,PSH,URG', F.FIN | F.PSH | F.URG, ['INVALID', null], ['INVALID', null]],
  ['SYN,ECE,CWR', F.SYN | F.ECE | F.CWR, ['NEW', 'SYN_SENT'], ['NEW', 'SYN_SENT']],
  ['URG', F.URG, ['INVALID', null], ['INVALID', null]],
  ['FIN,RST,ACK', F.FIN | F.RST | F.ACK, ['INVALID', null], ['INVALID', null]],
  ['PSH', F.PSH, ['INVALID', null], ['INVALID', null]],
];

const STATES = ['INVALID', 'NEW', 'ESTABLISHED'];

function firstSegment(loose: 0 | 1, flags: number) {
  const host = parseHostFile(HOST, 'node.host');
  host.run(`sysctl -w net.netfilter.nf_conntrack_tcp_loose=${loose}`);
  const p: Packet = makePacket({ src: ip('192.0.2.2'), dst: ip('198.18.0.5'), proto: 6, sport: 40000, dport: 80, tcpFlags: flags, inIface: 'eth0' });
  const r = traceHostPacket(host, p, { rng: seeded(1) });
  const matched = r.matched.filter((m) => m.chain === 'FORWARD').map((m) => STATES[m.index - 1]);
  const entry = r.conntrack[0];
  const state = entry === undefined ? null : (/^tcp +6 \d+ ([A-Z_]+) /.exec(entry)?.[1] ?? 'NONE');
  return { matched, state, count: r.conntrack.length, fate: r.fate };
}

describe('conntrack TCP checks, as recorded from the kernel', () => {
  for (const [name, flags, loose1, loose0] of RECORDED) {
    it(`should classify a first ${name} segment as the kernel did (loose=1 ${loose1[0]}, loose=0 ${loose0[0]})`, () => {
      for (const [loose, [ctstate, state]] of [[1, loose1], [0, loose0]] as const) {
        const r = firstSegment(loose, flags);
        // Conntrack never drops: the kernel forwarded every one of these segments.
        expect({ loose, fate: r.fate, matched: r.matched, state: r.state }).toEqual({ loose, fate: 'forwarded', matched: [ctstate], state });
      }
    });
  }

  it('should accept exactly the nine combinations of tcp_valid_flags, whatever PSH, ECE and CWR say', () => {
    const valid: number[] = [];
    for (let f = 0; f < 0x40; f++) if ((f & F.PSH) === 0 && tcpValidFlags(f)) valid.push(f);
    expect(valid).toEqual([F.SYN, F.SYN | F.ACK, F.RST, F.RST | F.ACK, F.FIN | F.ACK, F.ACK, F.SYN | F.URG, F.ACK | F.URG, F.FIN | F.ACK | F.URG].sort((a, b) => a - b));
    expect(tcpValidFlags(F.ACK | F.PSH | F.ECE | F.CWR)).toBe(true);
  });

  it('should leave a known connection untouched by a segment with invalid flags (tcp_error runs first)', () => {
    const host = parseHostFile(HOST, 'node.host');
    const syn = makePacket({ src: ip('192.0.2.2'), dst: ip('198.18.0.5'), proto: 6, sport: 40000, dport: 80, tcpFlags: F.SYN, inIface: 'eth0' });
    traceHostPacket(host, syn, { rng: seeded(1) });
    const r = traceHostPacket(host, { ...syn, tcpFlags: F.SYN | F.RST }, { rng: seeded(1), nowMs: 1000 });
    expect(r.matched.filter((m) => m.chain === 'FORWARD').map((m) => m.index)).toEqual([1]);
    expect(r.conntrack).toEqual(['tcp      6 119 SYN_SENT src=192.0.2.2 dst=198.18.0.5 sport=40000 dport=80 [UNREPLIED] src=198.18.0.5 dst=192.0.2.2 sport=80 dport=40000 mark=0 use=1']);
  });

  it('should refuse nf_conntrack_tcp_loose values other than 0 and 1 as the kernel does, and read the value back', () => {
    const host = parseHostFile(HOST, 'node.host');
    expect(() => host.run('sysctl -w net.netfilter.nf_conntrack_tcp_loose=2')).toThrow('sysctl: setting key "net.netfilter.nf_conntrack_tcp_loose": Invalid argument');
    expect(() => host.run('sysctl -w net.netfilter.nf_conntrack_tcp_loose=-1')).toThrow('Invalid argument');
    expect(getSysctl(host.config, 'net.netfilter.nf_conntrack_tcp_loose')).toBe('1');
    host.run('sysctl -w net.netfilter.nf_conntrack_tcp_loose=0');
    expect(getSysctl(host.config, 'net.netfilter.nf_conntrack_tcp_loose')).toBe('0');
  });
});

describe('REJECT --reject-with tcp-reset and the rejected connection (as recorded from the kernel)', () => {
  // The node sent a SYN from 192.0.2.1:40000 to its own 192.0.2.1:80 through a raw socket; filter
  // INPUT rejected it. With tcp-reset, `conntrack -L` then listed the entry in CLOSE (timeout 10,
  // still UNREPLIED); with icmp-port-unreachable it stayed SYN_SENT.
  const REJECTING = (how: string): string => HOST.replace('-A FORWARD -m conntrack --ctstate INVALID\n', `-A INPUT -p tcp -m tcp --dport 80 -j REJECT --reject-with ${how}\n-A FORWARD -m conntrack --ctstate INVALID\n`);
  const loopSyn = makePacket({ src: ip('192.0.2.1'), dst: ip('192.0.2.1'), proto: 6, sport: 40000, dport: 80, tcpFlags: F.SYN, inIface: null });

  it('should leave the entry of a local SYN rejected with tcp-reset in CLOSE for the close timeout', () => {
    const r = traceHostPacket(parseHostFile(REJECTING('tcp-reset'), 'node.host'), loopSyn, { rng: seeded(1) });
    expect(r.fate).toBe('rejected');
    expect(r.conntrack).toEqual(['tcp      6 10 CLOSE src=192.0.2.1 dst=192.0.2.1 sport=40000 dport=80 [UNREPLIED] src=192.0.2.1 dst=192.0.2.1 sport=80 dport=40000 mark=0 use=1']);
  });

  it('should leave it in SYN_SENT when the REJECT answers with an ICMP error', () => {
    const r = traceHostPacket(parseHostFile(REJECTING('icmp-port-unreachable'), 'node.host'), loopSyn, { rng: seeded(1) });
    expect(r.fate).toBe('rejected');
    expect(r.conntrack).toEqual(['tcp      6 120 SYN_SENT src=192.0.2.1 dst=192.0.2.1 sport=40000 dport=80 [UNREPLIED] src=192.0.2.1 dst=192.0.2.1 sport=80 dport=40000 mark=0 use=1']);
  });
});

describe('TCP flags the datapath carries', () => {
  it('should forward URG, ECE and CWR untouched and show them in the trace (the conformance campaign caught their loss)', () => {
    const host = parseHostFile(HOST, 'node.host');
    const r = traceHostPacket(host, makePacket({ src: ip('192.0.2.2'), dst: ip('198.18.0.5'), proto: 6, sport: 40000, dport: 80, tcpFlags: F.SYN | F.ACK | F.URG | F.ECE | F.CWR, inIface: 'eth0' }), { rng: seeded(1) });
    expect(r.trace.filter((s) => s.kind === 'fate').map((s) => (s.kind === 'fate' ? s.packet.flags : ''))).toEqual(['SYN,ACK,URG,ECE,CWR']);
  });
});
