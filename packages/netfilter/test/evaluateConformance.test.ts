/**
 * Conformance with the real kernel: the packets of `fixtures/eval/NAME.packets` were sent, in
 * order, through a network namespace holding `NAME.rules`, and `iptables-save -c` recorded how many
 * packets each rule and each built-in chain's policy counted (`NAME.counters`; see
 * fixtures/recordEval.ts for how). Here the same packets walk the same rules through the
 * evaluator's OUTPUT and POSTROUTING hooks and, for those looped back through `lo`, PREROUTING and
 * INPUT; every rule's and policy's count must equal the kernel's.
 */
import { describe, expect, it } from 'vitest';
import {
  createEvalState,
  evaluateHook,
  parseIpv4,
  parseSave,
  rewriteToRangeStart,
  seededRandom31,
  type AddrType,
  type EvalContext,
  type EvalResult,
  type Packet,
  type TableName,
} from '../src/index.ts';
import { fixture } from './fixtures.ts';

/** `PROTO SRC[:PORT] > DST[:PORT] out IFACE`, as the recorder read it. */
function parsePacket(line: string): Packet {
  const m = /^(udp|tcp|icmp) ([0-9.]+)(?::(\d+))? > ([0-9.]+)(?::(\d+))? out (\S+)$/.exec(line);
  if (m === null) throw new Error(`bad packet line: ${line}`);
  const proto = { udp: 17, tcp: 6, icmp: 1 }[m[1] as 'udp' | 'tcp' | 'icmp'];
  return {
    src: parseIpv4(m[2] as string),
    dst: parseIpv4(m[4] as string),
    proto,
    sport: Number(m[3] ?? 0),
    dport: Number(m[5] ?? 0),
    tcpFlags: proto === 6 ? 0x02 : 0,
    icmpType: proto === 1 ? 8 : 0,
    icmpCode: 0,
    inIface: null,
    outIface: m[6] as string,
    mark: 0,
    lengthBytes: 0,
    fragment: false,
  };
}

/** The recording namespace: 127.0.0.0/8 and 198.18.0.1 on lo, 198.51.100.1/24 on d0. */
function addrType(addr: number, iface: string | null): AddrType {
  const onLo = addr >>> 24 === 127 || addr === parseIpv4('198.18.0.1');
  const onD0 = addr === parseIpv4('198.51.100.1');
  if (iface === 'lo') return onLo ? 'LOCAL' : 'UNICAST';
  if (iface === 'd0') return onD0 ? 'LOCAL' : 'UNICAST';
  return onLo || onD0 ? 'LOCAL' : 'UNICAST';
}

describe('evaluation conformance with the kernel', () => {
  it('should count, rule by rule, what Linux counted for the output-walk packet sequence', () => {
    const recorded = parseSave(fixture('eval/output-walk.counters'), { file: 'output-walk.counters' });
    const rules = parseSave(fixture('eval/output-walk.rules'), { file: 'output-walk.rules' });
    const packets = fixture('eval/output-walk.packets')
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('#'))
      .map(parsePacket);
    const state = createEvalState();
    const counts = new Map<string, number>();
    const add = (r: EvalResult) => {
      for (const e of r.trace) {
        const key = e.kind === 'rule' && e.outcome === 'match' ? `${e.table} ${e.chain} ${e.index}` : e.kind === 'policy' ? `${e.table} ${e.chain} policy` : undefined;
        if (key !== undefined) counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    };
    for (const p of packets) {
      const ctx: EvalContext = { addrType, conntrack: { state: 'NEW', dnat: false, snat: false, ctmark: 0 }, random31: seededRandom31(1), state };
      const out = evaluateHook(rules, 'OUTPUT', p, ctx);
      add(out);
      if (out.verdict.kind !== 'ACCEPT') continue;
      const routed = { ...(out.nat === undefined ? p : rewriteToRangeStart(p, out.nat)), mark: out.mark };
      const conntrack = { state: out.notrack ? ('UNTRACKED' as const) : ('NEW' as const), dnat: out.nat?.kind === 'DNAT', snat: false, ctmark: out.ctmark };
      const post = evaluateHook(rules, 'POSTROUTING', routed, { ...ctx, conntrack });
      add(post);
      if (post.verdict.kind !== 'ACCEPT' || p.outIface !== 'lo') continue;
      // Looped back: the skb keeps its mark and its conntrack entry, so raw already sees the
      // entry, and the nat chains are not walked again (the binding exists).
      const back = { ...routed, mark: post.mark, inIface: 'lo', outIface: null };
      const opts = { rawConntrack: conntrack, skipNat: true };
      const pre = evaluateHook(rules, 'PREROUTING', back, { ...ctx, conntrack }, opts);
      add(pre);
      if (pre.verdict.kind === 'ACCEPT') add(evaluateHook(rules, 'INPUT', { ...back, mark: pre.mark }, { ...ctx, conntrack }, opts));
    }
    const expected = new Map<string, number>();
    const got = new Map<string, number>();
    for (const t of ['raw', 'mangle', 'nat', 'filter'] as TableName[]) {
      for (const [name, chain] of Object.entries(recorded.tables[t].chains)) {
        chain.rules.forEach((r, i) => {
          expected.set(`${t} ${name} ${i + 1}`, r.counters?.packets ?? -1);
          got.set(`${t} ${name} ${i + 1}`, counts.get(`${t} ${name} ${i + 1}`) ?? 0);
        });
        if (chain.policy !== undefined && !recorded.tables[t].absent) {
          expected.set(`${t} ${name} policy`, chain.counters?.packets ?? -1);
          got.set(`${t} ${name} policy`, counts.get(`${t} ${name} policy`) ?? 0);
        }
      }
    }
    expect(expected.size).toBeGreaterThan(95);
    expect(Object.fromEntries(got)).toEqual(Object.fromEntries(expected));
  });
});
