import { describe, expect, it } from 'vitest';
import { parseIpv4 as ip } from '@netsim/netfilter';
import { countersFromSave, describeConntrack, diffOutcomes, type Outcome } from '../src/outcome.ts';
import { parseSaveCounters } from '../src/readback.ts';

const base: Outcome = { counters: { 'filter FORWARD #1': 1 }, egress: ['eth1 tcp 198.51.100.1:40000 > 198.18.0.5:80 [SYN]'], delivered: false, conntrack: [] };

describe('outcome', () => {
  it('should report nothing when both sides agree and one line per differing field otherwise', () => {
    expect(diffOutcomes(base, { ...base })).toEqual([]);
    expect(
      diffOutcomes(base, { counters: { 'filter FORWARD policy': 1 }, egress: [], delivered: true, conntrack: ['udp x'] }),
    ).toEqual([
      'counter filter FORWARD #1: kernel 1, netsim 0',
      'counter filter FORWARD policy: kernel 0, netsim 1',
      'egress: kernel [eth1 tcp 198.51.100.1:40000 > 198.18.0.5:80 [SYN]], netsim []',
      'local delivery: kernel false, netsim true',
      'conntrack: kernel [], netsim [udp x]',
    ]);
  });

  it('should keep only non-zero counters, keyed by table, chain and rule position', () => {
    const saved = parseSaveCounters('*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [2:80]\n:X - [0:0]\n[0:0] -A X -j RETURN\n[3:120] -A X -p tcp\nCOMMIT\n');
    expect(countersFromSave(saved)).toEqual({ 'filter FORWARD policy': 2, 'filter X #2': 3 });
  });

  it('should describe conntrack entries with both tuples', () => {
    expect(
      describeConntrack({ proto: 6, tcpState: 'SYN_SENT', orig: { src: ip('192.0.2.2'), dst: ip('198.18.0.5'), sport: 40000, dport: 80 }, reply: { src: ip('198.18.0.5'), dst: ip('198.51.100.1'), sport: 80, dport: 40000 }, unreplied: true, assured: false, mark: 0 }),
    ).toBe('tcp SYN_SENT 192.0.2.2:40000>198.18.0.5:80 reply 198.18.0.5:80>198.51.100.1:40000 unreplied mark=0');
  });
});
