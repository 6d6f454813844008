/**
 * Every match as the kernel evaluates it. Each case runs one rule in filter INPUT (policy DROP,
 * the rule ACCEPTs) so "matches" means the verdict is ACCEPT.
 */
import { describe, expect, it } from 'vitest';
import { evaluateTable, ipsetLookup, type EvalContext, type Match, type Packet, type Rule } from '../src/index.ts';
import { ctx, dport, ip, pkt, rule, ruleset, tcp } from './evalHelpers.ts';

function matches(r: Rule, p: Packet, c: EvalContext = ctx()): boolean {
  const rs = ruleset({ filter: { INPUT: { policy: 'DROP', rules: [{ ...r, target: { kind: 'ACCEPT' } }] } } });
  const v = evaluateTable(rs, 'filter', 'INPUT', p, c).verdict;
  if (v.kind === 'unknown') throw new Error(v.reason);
  return v.kind === 'ACCEPT';
}

const m = (...ms: Match[]) => rule({ m: ms });

describe('IP header matches', () => {
  it('should match -s and -d by prefix, and invert them with !', () => {
    expect(matches(rule({ s: '203.0.113.0/24' }), pkt())).toBe(true);
    expect(matches(rule({ s: '203.0.112.0/24' }), pkt())).toBe(false);
    expect(matches(rule({ s: '! 203.0.113.0/24' }), pkt())).toBe(false);
    expect(matches(rule({ d: '198.18.0.1/32' }), pkt())).toBe(true);
    expect(matches(rule({ d: '198.18.0.2' }), pkt())).toBe(false);
    expect(matches(rule({ d: '!198.18.0.2' }), pkt())).toBe(true);
    expect(matches(rule({ s: '0.0.0.0/0' }), pkt())).toBe(true);
    expect(matches(rule({ s: '! 0.0.0.0/0' }), pkt())).toBe(false);
  });

  it('should compare addresses above 2^31 as unsigned', () => {
    expect(matches(rule({ d: '224.0.0.0/4' }), pkt({ dst: '239.1.2.3' }))).toBe(true);
    expect(matches(rule({ d: '! 224.0.0.0/4' }), pkt({ dst: '239.1.2.3' }))).toBe(false);
    expect(matches(rule({ s: '255.255.255.255' }), pkt({ src: '255.255.255.255' }))).toBe(true);
  });

  it('should match -i/-o exactly, as a prefix with +, inverted with !, and treat a missing interface as the empty name', () => {
    expect(matches(rule({ i: 'eth0' }), pkt({ inIface: 'eth0' }))).toBe(true);
    expect(matches(rule({ i: 'eth' }), pkt({ inIface: 'eth0' }))).toBe(false);
    expect(matches(rule({ i: 'eth+' }), pkt({ inIface: 'eth0' }))).toBe(true);
    expect(matches(rule({ i: 'veth+' }), pkt({ inIface: 'eth0' }))).toBe(false);
    expect(matches(rule({ i: '! eth+' }), pkt({ inIface: 'eth0' }))).toBe(false);
    expect(matches(rule({ i: '! docker0' }), pkt({ inIface: 'eth0' }))).toBe(true);
    expect(matches(rule({ o: 'eth0' }), pkt({ outIface: null }))).toBe(false);
    expect(matches(rule({ o: '! eth0' }), pkt({ outIface: null }))).toBe(true);
    expect(matches(rule({ o: '+' }), pkt({ outIface: null }))).toBe(true);
    expect(matches(rule({ o: '+' }), pkt({ outIface: 'lo' }))).toBe(true);
  });

  it('should match -p by number, invert it, and skip the check for protocol 0 (all) even when inverted', () => {
    expect(matches(rule({ p: 'tcp' }), pkt())).toBe(true);
    expect(matches(rule({ p: 'udp' }), pkt())).toBe(false);
    expect(matches(rule({ p: '! udp' }), pkt())).toBe(true);
    expect(matches(rule({ p: 47 }), pkt({ proto: 47 }))).toBe(true);
    expect(matches(rule({ p: 'all' }), pkt({ proto: 47 }))).toBe(true);
    expect(matches(rule({ p: '! all' }), pkt({ proto: 47 }))).toBe(true);
  });

  it('should match -f only non-first fragments and ! -f only the rest', () => {
    expect(matches(rule({ f: true }), pkt({ fragment: true }))).toBe(true);
    expect(matches(rule({ f: true }), pkt({ fragment: false }))).toBe(false);
    expect(matches(rule({ f: false }), pkt({ fragment: true }))).toBe(false);
    expect(matches(rule({ f: false }), pkt({ fragment: false }))).toBe(true);
  });
});

describe('tcp and udp', () => {
  it('should match ports, inclusive ranges and inverted ports', () => {
    expect(matches(rule({ p: 'tcp', m: [tcp({ dport: [80] })] }), pkt())).toBe(true);
    expect(matches(rule({ p: 'tcp', m: [tcp({ dport: [81] })] }), pkt())).toBe(false);
    expect(matches(rule({ p: 'tcp', m: [tcp({ dport: [70, 80] })] }), pkt())).toBe(true);
    expect(matches(rule({ p: 'tcp', m: [tcp({ dport: [80, 90] })] }), pkt())).toBe(true);
    expect(matches(rule({ p: 'tcp', m: [tcp({ dport: [81, 90] })] }), pkt())).toBe(false);
    expect(matches(rule({ p: 'tcp', m: [tcp({ dport: [80, 80, true] })] }), pkt())).toBe(false);
    expect(matches(rule({ p: 'tcp', m: [tcp({ sport: [32768, 60999] })] }), pkt())).toBe(true);
    expect(matches(rule({ p: 'tcp', m: [tcp({ sport: [32768, 60999, true] })] }), pkt())).toBe(false);
  });

  it('should match --tcp-flags mask comp and --syn, and invert them', () => {
    const syn = tcp({ flags: [0x17, 0x02] }); // --syn: SYN,RST,ACK,FIN SYN
    expect(matches(rule({ p: 'tcp', m: [syn] }), pkt({ tcpFlags: 0x02 }))).toBe(true);
    expect(matches(rule({ p: 'tcp', m: [syn] }), pkt({ tcpFlags: 0x12 }))).toBe(false);
    expect(matches(rule({ p: 'tcp', m: [tcp({ flags: [0x17, 0x02, true] })] }), pkt({ tcpFlags: 0x12 }))).toBe(true);
    expect(matches(rule({ p: 'tcp', m: [tcp({ flags: [0x04, 0x04] })] }), pkt({ tcpFlags: 0x14 }))).toBe(true);
    // ECE/CWR outside the mask do not matter.
    expect(matches(rule({ p: 'tcp', m: [syn] }), pkt({ tcpFlags: 0xc2 }))).toBe(true);
  });

  it('should never match a non-first fragment, which has no transport header', () => {
    expect(matches(rule({ p: 'tcp', m: [tcp({ dport: [80] })] }), pkt({ fragment: true }))).toBe(false);
    expect(matches(rule({ p: 'tcp', m: [tcp({ dport: [80, 80, true] })] }), pkt({ fragment: true }))).toBe(false);
    expect(matches(rule({ p: 'udp', m: [dport(53, 'udp')] }), pkt({ proto: 17, dport: 53, fragment: true }))).toBe(false);
  });

  it('should match udp ports and not a tcp packet', () => {
    expect(matches(rule({ p: 'udp', m: [dport(53, 'udp')] }), pkt({ proto: 17, dport: 53 }))).toBe(true);
    expect(matches(m(dport(53, 'udp')), pkt({ proto: 6, dport: 53 }))).toBe(false);
  });
});

describe('multiport', () => {
  const mp = (which: 'sports' | 'dports' | 'ports', ports: [number, number][], negate = false): Match => ({
    kind: 'multiport',
    which,
    ports: ports.map(([from, to]) => ({ from, to })),
    negate,
  });

  it('should match any listed port or range in the chosen direction', () => {
    const r = rule({ p: 'tcp', m: [mp('dports', [[22, 22], [80, 80], [8000, 8100]])] });
    expect(matches(r, pkt({ dport: 80 }))).toBe(true);
    expect(matches(r, pkt({ dport: 8050 }))).toBe(true);
    expect(matches(r, pkt({ dport: 443 }))).toBe(false);
    expect(matches(rule({ p: 'tcp', m: [mp('sports', [[80, 80]])] }), pkt({ dport: 80 }))).toBe(false);
  });

  it('should match --ports on either the source or the destination port', () => {
    const r = rule({ p: 'udp', m: [mp('ports', [[53, 53]])] });
    expect(matches(r, pkt({ proto: 17, sport: 53, dport: 4000 }))).toBe(true);
    expect(matches(r, pkt({ proto: 17, sport: 4000, dport: 53 }))).toBe(true);
    expect(matches(r, pkt({ proto: 17, sport: 4000, dport: 4001 }))).toBe(false);
  });

  it('should invert with ! and never match fragments or port-less protocols', () => {
    expect(matches(rule({ p: 'tcp', m: [mp('dports', [[80, 80]], true)] }), pkt({ dport: 80 }))).toBe(false);
    expect(matches(rule({ p: 'tcp', m: [mp('dports', [[80, 80]], true)] }), pkt({ dport: 81 }))).toBe(true);
    expect(matches(rule({ p: 'tcp', m: [mp('dports', [[80, 80]], true)] }), pkt({ dport: 81, fragment: true }))).toBe(false);
    expect(matches(m(mp('dports', [[0, 65535]])), pkt({ proto: 1 }))).toBe(false);
    expect(matches(m(mp('dports', [[80, 80]])), pkt({ proto: 132, dport: 80 }))).toBe(true);
  });
});

describe('comment, mark, icmp, iprange', () => {
  it('should always match a comment', () => {
    expect(matches(m({ kind: 'comment', comment: 'x' }), pkt())).toBe(true);
  });

  it('should match the mark under its mask and invert it', () => {
    const mark = (value: number, mask: number, negate = false): Match => ({ kind: 'mark', value, mask, negate });
    expect(matches(m(mark(0x4000, 0x4000)), pkt({ mark: 0xc000 }))).toBe(true);
    expect(matches(m(mark(0x4000, 0x4000)), pkt({ mark: 0x8000 }))).toBe(false);
    expect(matches(m(mark(0x4000, 0x4000, true)), pkt({ mark: 0x8000 }))).toBe(true);
    expect(matches(m(mark(0x1, 0xffffffff)), pkt({ mark: 0x1 }))).toBe(true);
    expect(matches(m(mark(0x80000000, 0x80000000)), pkt({ mark: 0xffffffff }))).toBe(true);
  });

  it('should match icmp type, code ranges and any, and invert them', () => {
    const icmp = (type: number, code?: [number, number], negate = false, any = false): Match => ({
      kind: 'icmp',
      icmp: { type, negate, ...(code === undefined ? {} : { code: { from: code[0], to: code[1] } }), ...(any ? { any } : {}) },
    });
    const echo = pkt({ proto: 1, icmpType: 8, icmpCode: 0, sport: 0, dport: 0 });
    const unreach = pkt({ proto: 1, icmpType: 3, icmpCode: 3, sport: 0, dport: 0 });
    expect(matches(m(icmp(8)), echo)).toBe(true);
    expect(matches(m(icmp(8, [0, 0])), echo)).toBe(true);
    expect(matches(m(icmp(3, [3, 3])), unreach)).toBe(true);
    expect(matches(m(icmp(3, [1, 1])), unreach)).toBe(false);
    expect(matches(m(icmp(8, undefined, true)), unreach)).toBe(true);
    expect(matches(m(icmp(255, undefined, false, true)), unreach)).toBe(true);
    expect(matches(m(icmp(255, undefined, true, true)), unreach)).toBe(false);
    expect(matches(m(icmp(8)), pkt())).toBe(false);
    expect(matches(m(icmp(8)), { ...echo, fragment: true })).toBe(false);
  });

  it('should match iprange source and destination ranges inclusively, and invert them', () => {
    const range = (from: string, to: string, negate = false) => ({ from: ip(from), to: ip(to), negate });
    expect(matches(m({ kind: 'iprange', srcRange: range('203.0.113.1', '203.0.113.7') }), pkt())).toBe(true);
    expect(matches(m({ kind: 'iprange', srcRange: range('203.0.113.8', '203.0.113.9') }), pkt())).toBe(false);
    expect(matches(m({ kind: 'iprange', srcRange: range('203.0.113.8', '203.0.113.9', true) }), pkt())).toBe(true);
    expect(matches(m({ kind: 'iprange', dstRange: range('198.18.0.0', '198.19.255.255') }), pkt())).toBe(true);
    expect(matches(m({ kind: 'iprange', dstRange: range('240.0.0.0', '255.255.255.255') }), pkt({ dst: '250.0.0.1' }))).toBe(true);
  });
});

describe('conntrack and state', () => {
  const ctstate = (states: ('NEW' | 'ESTABLISHED' | 'RELATED' | 'INVALID' | 'UNTRACKED' | 'DNAT' | 'SNAT')[], negate = false): Match => ({
    kind: 'conntrack',
    ctstate: { states, negate },
  });
  const with_ = (state: 'NEW' | 'ESTABLISHED' | 'RELATED' | 'INVALID' | 'UNTRACKED', dnat = false, snat = false) =>
    ctx({ conntrack: { state, dnat, snat, ctmark: 0 } });

  it('should match any listed state and invert the list with !', () => {
    expect(matches(m(ctstate(['RELATED', 'ESTABLISHED'])), pkt(), with_('ESTABLISHED'))).toBe(true);
    expect(matches(m(ctstate(['RELATED', 'ESTABLISHED'])), pkt(), with_('NEW'))).toBe(false);
    expect(matches(m(ctstate(['INVALID'])), pkt(), with_('INVALID'))).toBe(true);
    expect(matches(m(ctstate(['UNTRACKED'])), pkt(), with_('UNTRACKED'))).toBe(true);
    expect(matches(m(ctstate(['NEW'], true)), pkt(), with_('ESTABLISHED'))).toBe(true);
    expect(matches(m(ctstate(['NEW'], true)), pkt(), with_('NEW'))).toBe(false);
  });

  it('should match the DNAT and SNAT pseudo-states from the connection NAT status', () => {
    expect(matches(m(ctstate(['DNAT'])), pkt(), with_('ESTABLISHED', true))).toBe(true);
    expect(matches(m(ctstate(['DNAT'])), pkt(), with_('ESTABLISHED', false, true))).toBe(false);
    expect(matches(m(ctstate(['SNAT'])), pkt(), with_('NEW', false, true))).toBe(true);
    expect(matches(m(ctstate(['DNAT'], true)), pkt(), with_('NEW', true))).toBe(false);
    // Without an entry (INVALID) there is no NAT status to see.
    expect(matches(m(ctstate(['DNAT'])), pkt(), with_('INVALID', true))).toBe(false);
  });

  it('should match -m state like --ctstate without NAT pseudo-states', () => {
    const state = (states: ('NEW' | 'ESTABLISHED' | 'DNAT')[], negate = false): Match => ({ kind: 'state', states, negate });
    expect(matches(m(state(['ESTABLISHED'])), pkt(), with_('ESTABLISHED', true))).toBe(true);
    expect(matches(m(state(['NEW'])), pkt(), with_('ESTABLISHED'))).toBe(false);
    expect(matches(m(state(['NEW'], true)), pkt(), with_('ESTABLISHED'))).toBe(true);
    expect(matches(m(state(['DNAT'])), pkt(), with_('ESTABLISHED', true))).toBe(false);
  });
});

describe('addrtype', () => {
  const at = (o: { src?: string[]; dst?: string[]; srcNeg?: boolean; dstNeg?: boolean; limitIn?: boolean; limitOut?: boolean }): Match => ({
    kind: 'addrtype',
    ...(o.src === undefined ? {} : { src: { types: o.src as never[], negate: o.srcNeg ?? false } }),
    ...(o.dst === undefined ? {} : { dst: { types: o.dst as never[], negate: o.dstNeg ?? false } }),
    limitIfaceIn: o.limitIn ?? false,
    limitIfaceOut: o.limitOut ?? false,
  });

  it('should ask the context for the address type of the source and destination', () => {
    expect(matches(m(at({ dst: ['LOCAL'] })), pkt({ dst: '198.18.0.1' }))).toBe(true);
    expect(matches(m(at({ dst: ['LOCAL'] })), pkt({ dst: '198.18.0.2' }))).toBe(false);
    expect(matches(m(at({ dst: ['LOCAL'], dstNeg: true })), pkt({ dst: '198.18.0.2' }))).toBe(true);
    expect(matches(m(at({ src: ['LOCAL'] })), pkt({ src: '127.0.0.1' }))).toBe(true);
    expect(matches(m(at({ dst: ['BROADCAST', 'MULTICAST'] })), pkt({ dst: '239.0.0.1' }))).toBe(true);
    expect(matches(m(at({ src: ['UNICAST'], dst: ['LOCAL'] })), pkt())).toBe(true);
    expect(matches(m(at({ src: ['LOCAL'], dst: ['LOCAL'] })), pkt())).toBe(false);
  });

  it('should pass the incoming or outgoing interface for --limit-iface-in/out', () => {
    const c = ctx({ local: ['198.18.0.1', '192.0.2.1'], localOn: { eth0: ['198.18.0.1'], eth1: ['192.0.2.1'] } });
    const toSecond = pkt({ dst: '192.0.2.1', inIface: 'eth0' });
    expect(matches(m(at({ dst: ['LOCAL'] })), toSecond, c)).toBe(true);
    expect(matches(m(at({ dst: ['LOCAL'], limitIn: true })), toSecond, c)).toBe(false);
    expect(matches(m(at({ dst: ['LOCAL'], limitIn: true })), pkt({ dst: '198.18.0.1', inIface: 'eth0' }), c)).toBe(true);
    expect(matches(m(at({ dst: ['LOCAL'], limitOut: true })), pkt({ dst: '192.0.2.1', inIface: null, outIface: 'eth1' }), c)).toBe(true);
  });
});

describe('set', () => {
  const set = (flags: ('src' | 'dst')[], negate = false): Match => ({ kind: 'set', setName: 'S', flags, negate });

  it('should test membership through the context and invert it with !', () => {
    const c = ctx({ ipsetHas: ipsetLookup([{ name: 'S', type: 'hash:ip', members: ['203.0.113.7'] }]) });
    expect(matches(m(set(['src'])), pkt(), c)).toBe(true);
    expect(matches(m(set(['dst'])), pkt(), c)).toBe(false);
    expect(matches(m(set(['dst'], true)), pkt(), c)).toBe(true);
  });

  it('should pass the directions to the set (src,dst for hash:ip,port)', () => {
    const c = ctx({ ipsetHas: ipsetLookup([{ name: 'S', type: 'hash:ip,port', members: ['198.18.0.1,tcp:80'] }]) });
    expect(matches(m(set(['dst', 'dst'])), pkt(), c)).toBe(true);
    expect(matches(m(set(['dst', 'src'])), pkt(), c)).toBe(false);
  });
});

describe('statistic', () => {
  it('should match random when the draw is below the 31-bit threshold and invert it with !', () => {
    const st = (threshold31: number, negate = false): Match => ({
      kind: 'statistic',
      mode: 'random',
      probability: { text: '', threshold31 },
      negate,
    });
    const draw = (v: number) => ctx({ random: () => v });
    expect(matches(m(st(1000)), pkt(), draw(999))).toBe(true);
    expect(matches(m(st(1000)), pkt(), draw(1000))).toBe(false);
    expect(matches(m(st(1000, true)), pkt(), draw(1000))).toBe(true);
    expect(matches(m(st(0)), pkt(), draw(0))).toBe(false);
    expect(matches(m(st(0x80000000)), pkt(), draw(0x7fffffff))).toBe(true);
  });

  it('should draw only when the earlier matches of the rule passed', () => {
    let draws = 0;
    const c = ctx({
      random: () => {
        draws++;
        return 0;
      },
    });
    const st: Match = { kind: 'statistic', mode: 'random', probability: { text: '', threshold31: 1 }, negate: false };
    matches(rule({ p: 'udp', m: [st] }), pkt(), c);
    matches(rule({ p: 'tcp', m: [dport(81), st] }), pkt(), c);
    expect(draws).toBe(0);
    matches(rule({ p: 'tcp', m: [dport(80), st] }), pkt(), c);
    expect(draws).toBe(1);
  });

  it('should select every n-th packet from --packet on, per rule, as the kernel counts', () => {
    const nth = (every: number, packet: number): Match => ({ kind: 'statistic', mode: 'nth', every, packet, negate: false });
    const rules = [0, 2, 1].map((p) => rule({ m: [nth(3, p)], j: { kind: 'MARK', value: 1 << p, mask: 0 } }));
    const rs = ruleset({ mangle: { PREROUTING: rules } });
    const c = ctx();
    const marks = Array.from({ length: 7 }, () => evaluateTable(rs, 'mangle', 'PREROUTING', pkt(), c).mark);
    // Kernel (6.18, iptables 1.8.9, three rules like these on udp packets): --packet 0 took
    // packets 1, 4, 7; --packet 1 packets 2, 5; --packet 2 packets 3, 6.
    expect(marks).toEqual([1, 2, 4, 1, 2, 4, 1]);
  });

  it('should keep nth counters per rule object, so a rule re-created by a restore starts again', () => {
    const nth: Match = { kind: 'statistic', mode: 'nth', every: 2, packet: 1, negate: false };
    const c = ctx();
    const first = ruleset({ filter: { INPUT: { policy: 'DROP', rules: [rule({ m: [nth], j: 'ACCEPT' })] } } });
    const run = (rs: typeof first) => evaluateTable(rs, 'filter', 'INPUT', pkt(), c).verdict.kind;
    expect([run(first), run(first), run(first)]).toEqual(['DROP', 'ACCEPT', 'DROP']);
    const recreated = ruleset({ filter: { INPUT: { policy: 'DROP', rules: [rule({ m: [nth], j: 'ACCEPT' })] } } });
    expect(run(recreated)).toBe('DROP');
    expect(run(first)).toBe('ACCEPT');
  });
});
