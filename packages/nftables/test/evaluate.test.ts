/**
 * Evaluation through base chains: one test per expression, statement and verdict, then the
 * kube-proxy ruleset end to end. Semantics are the kernel's (nft_payload, nft_meta, nft_ct,
 * nft_fib, nft_numgen, nft_lookup, nft_nat, nft_reject); NAT, reject and mark are returned as
 * requests for the datapath.
 */
import { describe, expect, it } from 'vitest';
import {
  baseChainsAt,
  createNftEvalState,
  emptyRuleset,
  evaluateBaseChain,
  evaluateHook,
  formatNftTrace,
  hookSchedule,
  nftApply,
  type NftEvalContext,
  type NftPacket,
  type Ruleset,
} from '../src/index.ts';
import { clusterIp, endpointIp, kubeProxyFullSync } from '../src/testing/index.ts';

const ip = (s: string): number => s.split('.').reduce((a, o) => a * 256 + Number(o), 0);

function seq(values: readonly number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length] as number;
}

const LOCAL = new Set([ip('192.0.2.10'), ip('127.0.0.1')]);
function ctx(over: Partial<NftEvalContext> = {}): NftEvalContext {
  return {
    hook: 'input',
    conntrack: { state: 'new', status: 0, mark: 0 },
    fibAddrType: (a) => (LOCAL.has(a) ? 2 : 1),
    random32: seq([0]),
    ...over,
  };
}

const tcp = (over: Partial<NftPacket> = {}): NftPacket => ({ saddr: ip('198.51.100.7'), daddr: ip('192.0.2.10'), protocol: 6, sport: 40000, dport: 22, tcpFlags: 2, mark: 0, iifname: 'eth0', iif: 2, ...over });

function table(body: string, family = 'ip'): Ruleset {
  return nftApply(emptyRuleset(), `table ${family} t {\n${body}\n}\n`);
}

/** The verdict of one input chain whose rules are `rules`. */
function verdictOf(rules: string, p: NftPacket, c: Partial<NftEvalContext> = {}, family = 'ip'): string {
  const rs = table(`\tchain c {\n\t\ttype filter hook input priority 0; policy accept;\n${rules}\n\t\tcounter drop\n\t}\n\tchain sub {\n\t\treturn\n\t}`, family);
  const ref = baseChainsAt(rs, 'input')[0];
  if (ref === undefined) throw new Error('no base chain');
  return evaluateBaseChain(ref, p, ctx(c)).verdict;
}

describe('expressions', () => {
  it('ip saddr/daddr: value, prefix, range, set, negation', () => {
    expect(verdictOf('ip saddr 198.51.100.7 accept', tcp())).toBe('accept');
    expect(verdictOf('ip saddr 198.51.100.8 accept', tcp())).toBe('drop');
    expect(verdictOf('ip saddr 198.51.100.0/24 accept', tcp())).toBe('accept');
    expect(verdictOf('ip saddr != 198.51.100.0/24 accept', tcp())).toBe('drop');
    expect(verdictOf('ip daddr 192.0.2.1-192.0.2.10 accept', tcp())).toBe('accept');
    expect(verdictOf('ip daddr { 192.0.2.9, 192.0.2.10 } accept', tcp())).toBe('accept');
    expect(verdictOf('ip daddr != { 192.0.2.9, 192.0.2.10 } accept', tcp())).toBe('drop');
  });

  it('tcp/udp ports read only their protocol; th reads any with ports', () => {
    expect(verdictOf('tcp dport 22 accept', tcp())).toBe('accept');
    expect(verdictOf('udp dport 22 accept', tcp())).toBe('drop');
    expect(verdictOf('th dport 22 accept', tcp({ protocol: 17 }))).toBe('accept');
    expect(verdictOf('th dport 22 accept', { saddr: ip('198.51.100.7'), daddr: ip('192.0.2.10'), protocol: 1, icmpType: 8, mark: 0 })).toBe('drop');
    expect(verdictOf('tcp dport { 1-1023 } accept', tcp())).toBe('accept');
    expect(verdictOf('tcp sport < 1024 accept', tcp())).toBe('drop');
  });

  it('tcp flags: implicit is any-of, == is exact, value / mask', () => {
    expect(verdictOf('tcp flags syn accept', tcp({ tcpFlags: 0x12 }))).toBe('accept');
    expect(verdictOf('tcp flags == syn accept', tcp({ tcpFlags: 0x12 }))).toBe('drop');
    expect(verdictOf('tcp flags syn / syn,ack accept', tcp({ tcpFlags: 0x02 }))).toBe('accept');
    expect(verdictOf('tcp flags syn / syn,ack accept', tcp({ tcpFlags: 0x12 }))).toBe('drop');
  });

  it('meta l4proto, mark (with bitwise), iifname (with wildcard), oifname, iif', () => {
    expect(verdictOf('meta l4proto tcp accept', tcp())).toBe('accept');
    expect(verdictOf('meta l4proto { udp, icmp } accept', tcp())).toBe('drop');
    expect(verdictOf('meta mark & 0x4000 == 0x4000 accept', tcp({ mark: 0x4001 }))).toBe('accept');
    expect(verdictOf('mark and 0x4000 == 0 accept', tcp({ mark: 0x4001 }))).toBe('drop');
    expect(verdictOf('iifname "eth*" accept', tcp())).toBe('accept');
    expect(verdictOf('iifname { "lo", "cni0" } accept', tcp())).toBe('drop');
    expect(verdictOf('oifname "" accept', tcp())).toBe('accept');
    expect(verdictOf('iif lo accept', tcp({ iif: 1 }))).toBe('accept');
  });

  it('ct state, status, mark', () => {
    expect(verdictOf('ct state established,related accept', tcp(), { conntrack: { state: 'related', status: 0, mark: 0 } })).toBe('accept');
    expect(verdictOf('ct state established,related accept', tcp())).toBe('drop');
    expect(verdictOf('ct state != established accept', tcp())).toBe('accept');
    expect(verdictOf('ct status dnat accept', tcp(), { conntrack: { state: 'established', status: 32 | 8, mark: 0 } })).toBe('accept');
    expect(verdictOf('ct mark 0x10 accept', tcp(), { conntrack: { state: 'new', status: 0, mark: 0x10 } })).toBe('accept');
    expect(verdictOf('ct state vmap { new : accept, established : drop }', tcp())).toBe('accept');
  });

  it('fib daddr/saddr type from the caller', () => {
    expect(verdictOf('fib daddr type local accept', tcp())).toBe('accept');
    expect(verdictOf('fib saddr type local accept', tcp())).toBe('drop');
    expect(verdictOf('fib daddr type { broadcast, multicast } accept', tcp())).toBe('drop');
  });

  it('numgen random mod N is the high bits of random32 × N; numgen inc counts per rule', () => {
    const rules = '\t\tnumgen random mod 3 vmap { 0 : accept, 1 : drop, 2 : jump sub }';
    expect(verdictOf(rules, tcp(), { random32: seq([0]) })).toBe('accept');
    expect(verdictOf(rules, tcp(), { random32: seq([0x55555556]) })).toBe('drop');
    expect(verdictOf(rules, tcp(), { random32: seq([0xffffffff]) })).toBe('drop'); // sub returns, the chain goes on to its final drop
    const rs = table('\tchain c {\n\t\ttype filter hook input priority 0;\n\t\tnumgen inc mod 2 vmap { 0 : accept, 1 : drop }\n\t}');
    const ref = baseChainsAt(rs, 'input')[0];
    if (ref === undefined) throw new Error('no base chain');
    const st = createNftEvalState();
    expect([1, 2, 3].map(() => evaluateBaseChain(ref, tcp(), ctx(), st).verdict)).toEqual(['accept', 'drop', 'accept']);
  });

  it('concatenations against named sets and verdict maps', () => {
    const rs = table(
      '\tset allow { type ipv4_addr . inet_proto . inet_service; elements = { 192.0.2.10 . tcp . 22 } }\n\tchain c {\n\t\ttype filter hook input priority 0; policy drop;\n\t\tip daddr . meta l4proto . th dport @allow accept\n\t}',
    );
    const ref = baseChainsAt(rs, 'input')[0];
    if (ref === undefined) throw new Error('no base chain');
    expect(evaluateBaseChain(ref, tcp(), ctx()).verdict).toBe('accept');
    expect(evaluateBaseChain(ref, tcp({ protocol: 17 }), ctx()).verdict).toBe('drop');
    expect(evaluateBaseChain(ref, tcp({ dport: 23 }), ctx()).verdict).toBe('drop');
  });

  it('interval sets match inside their ranges', () => {
    const rs = table('\tset nets { type ipv4_addr; flags interval; elements = { 198.51.100.0/24, 203.0.113.5-203.0.113.9 } }\n\tchain c {\n\t\ttype filter hook input priority 0; policy drop;\n\t\tip saddr @nets accept\n\t}');
    const ref = baseChainsAt(rs, 'input')[0];
    if (ref === undefined) throw new Error('no base chain');
    expect(evaluateBaseChain(ref, tcp(), ctx()).verdict).toBe('accept');
    expect(evaluateBaseChain(ref, tcp({ saddr: ip('203.0.113.7') }), ctx()).verdict).toBe('accept');
    expect(evaluateBaseChain(ref, tcp({ saddr: ip('203.0.113.10') }), ctx()).verdict).toBe('drop');
  });
});

describe('verdicts and statements', () => {
  it('jump returns to the caller, goto does not, continue goes on, return ends the base chain with its policy', () => {
    const rs = table(
      '\tchain c {\n\t\ttype filter hook input priority 0; policy drop;\n\t\ttcp dport 22 jump j\n\t\ttcp dport 23 goto j\n\t\ttcp dport 24 continue\n\t\ttcp dport 25 return\n\t\taccept\n\t}\n\tchain j {\n\t\tip saddr 192.0.2.99 accept\n\t}',
    );
    const ref = baseChainsAt(rs, 'input')[0];
    if (ref === undefined) throw new Error('no base chain');
    const v = (dport: number): string => evaluateBaseChain(ref, tcp({ dport }), ctx()).verdict;
    expect([v(22), v(23), v(24), v(25), v(26)]).toEqual(['accept', 'drop', 'accept', 'drop', 'accept']);
  });

  it('reject with its type; meta mark set and ct mark set; notrack; log', () => {
    const rs = table('\tchain c {\n\t\ttype filter hook input priority 0;\n\t\tmeta mark set meta mark | 0x4000 ct mark set 0x7 log prefix "in: " tcp dport 22 reject with tcp reset\n\t\treject with icmp type host-unreachable\n\t}');
    const ref = baseChainsAt(rs, 'input')[0];
    if (ref === undefined) throw new Error('no base chain');
    const r = evaluateBaseChain(ref, tcp({ mark: 1 }), ctx());
    expect(r).toMatchObject({ verdict: 'reject', reject: { kind: 'tcp-reset' }, mark: 0x4001, ctMark: 7, logs: ['in: '] });
    expect(evaluateBaseChain(ref, tcp({ dport: 80 }), ctx())).toMatchObject({ verdict: 'reject', reject: { kind: 'icmp', code: 'host-unreachable' } });
    const raw = table('\tchain r {\n\t\ttype filter hook prerouting priority raw;\n\t\tudp dport 53 notrack\n\t}');
    const rref = baseChainsAt(raw, 'prerouting')[0];
    if (rref === undefined) throw new Error('no base chain');
    expect(evaluateBaseChain(rref, tcp({ protocol: 17, dport: 53 }), ctx({ hook: 'prerouting' }))).toMatchObject({ verdict: 'accept', notrack: true });
  });

  it('dnat, snat, masquerade and redirect accept with a NAT request (address, port range, flags, map lookup)', () => {
    const rs = table(
      '\tchain pre {\n\t\ttype nat hook prerouting priority dstnat;\n\t\ttcp dport 80 dnat to 198.51.100.1:8080\n\t\ttcp dport 81 redirect to :8081\n\t\tdnat to ip daddr map { 192.0.2.10 : 198.51.100.2 }\n\t}\n\tchain post {\n\t\ttype nat hook postrouting priority srcnat;\n\t\tip saddr 10.0.0.0/8 masquerade random,persistent\n\t\tsnat to 203.0.113.1-203.0.113.3\n\t}',
    );
    const pre = baseChainsAt(rs, 'prerouting')[0];
    const post = baseChainsAt(rs, 'postrouting')[0];
    if (pre === undefined || post === undefined) throw new Error('no base chain');
    const c = ctx({ hook: 'prerouting' });
    expect(evaluateBaseChain(pre, tcp({ dport: 80 }), c).nat).toEqual({ kind: 'dnat', addr: { lo: ip('198.51.100.1'), hi: ip('198.51.100.1') }, port: { lo: 8080, hi: 8080 }, flags: [] });
    expect(evaluateBaseChain(pre, tcp({ dport: 81 }), c).nat).toEqual({ kind: 'redirect', port: { lo: 8081, hi: 8081 }, flags: [] });
    expect(evaluateBaseChain(pre, tcp({ dport: 82 }), c).nat).toEqual({ kind: 'dnat', addr: { lo: ip('198.51.100.2'), hi: ip('198.51.100.2') }, flags: [] });
    const pc = ctx({ hook: 'postrouting' });
    expect(evaluateBaseChain(post, tcp({ saddr: ip('10.1.2.3') }), pc).nat).toEqual({ kind: 'masquerade', flags: ['random', 'persistent'] });
    expect(evaluateBaseChain(post, tcp(), pc).nat).toEqual({ kind: 'snat', addr: { lo: ip('203.0.113.1'), hi: ip('203.0.113.3') }, flags: [] });
  });
});

describe('hooks', () => {
  it('run base chains in priority order across tables; drop ends the hook; nat chains see only new connections', () => {
    const rs = nftApply(
      emptyRuleset(),
      'table ip a {\n\tchain late {\n\t\ttype filter hook input priority 10;\n\t\tmeta mark 0x1 drop\n\t}\n}\ntable inet b {\n\tchain early {\n\t\ttype filter hook input priority -10;\n\t\tmeta mark set 0x1\n\t}\n\tchain n {\n\t\ttype nat hook input priority 100;\n\t\tsnat ip to 192.0.2.1\n\t}\n}\n',
    );
    expect(baseChainsAt(rs, 'input').map((r) => `${r.table.name}/${r.chain.name}`)).toEqual(['b/early', 'a/late', 'b/n']);
    expect(evaluateHook(rs, tcp(), ctx()).verdict).toBe('drop');
    const established = evaluateHook(rs, tcp({ mark: 0 }), ctx({ conntrack: { state: 'established', status: 8, mark: 0 } }));
    expect(established.verdict).toBe('drop');
  });

  it('interleave with iptables tables at their fixed priorities', () => {
    const rs = nftApply(emptyRuleset(), 'table ip t {\n\tchain a { type filter hook prerouting priority -110; }\n\tchain b { type nat hook prerouting priority -100; }\n\tchain c { type filter hook prerouting priority -300; }\n}\n');
    const steps = hookSchedule(rs, 'prerouting', ['raw', 'mangle', 'nat', 'filter']);
    expect(steps.map((s) => (s.kind === 'nft' ? `nft:${s.chain.chain.name}@${s.priority}` : `ipt:${s.table}@${s.priority}`))).toEqual([
      // At equal priority the later registration runs first (Linux 6.18): the nft chain, then iptables.
      'nft:c@-300',
      'ipt:raw@-300',
      'ipt:mangle@-150',
      'nft:a@-110',
      'nft:b@-100',
      'ipt:nat@-100',
      'ipt:filter@0',
    ]);
    expect(hookSchedule(rs, 'postrouting', ['nat']).map((s) => s.priority)).toEqual([100]);
  });

  it('run base chains of equal priority last-created first, as the kernel does', () => {
    const rs = nftApply(emptyRuleset(), 'table ip t {\n\tchain b0 { type filter hook output priority 50; }\n\tchain b1 { type filter hook output priority 50; }\n\tchain b2 { type filter hook output priority 10; }\n}\n');
    expect(hookSchedule(rs, 'output').map((s) => (s.kind === 'nft' ? s.chain.chain.name : s.table))).toEqual(['b2', 'b1', 'b0']);
  });
});

describe('kube-proxy nftables ruleset', () => {
  const rs = nftApply(emptyRuleset(), kubeProxyFullSync({ services: 40 }));

  it('DNATs a ClusterIP connection to the endpoint numgen picks, and traces it like nft monitor trace', () => {
    const p = tcp({ saddr: ip('10.0.0.5'), daddr: ip(clusterIp(3)), dport: 80 });
    const r0 = evaluateHook(rs, p, ctx({ hook: 'prerouting', random32: seq([0]), trace: true }));
    expect(r0.nat).toEqual({ kind: 'dnat', addr: { lo: ip(endpointIp(3, 0)), hi: ip(endpointIp(3, 0)) }, port: { lo: 8080, hi: 8080 }, flags: [] });
    const r1 = evaluateHook(rs, p, ctx({ hook: 'prerouting', random32: seq([0x80000000]) }));
    expect(r1.nat?.addr?.lo).toBe(ip(endpointIp(3, 1)));
    const text = formatNftTrace(r0.trace);
    expect(text).toContain('ip kube-proxy nat-prerouting rule jump services (verdict jump services)\n');
    expect(text).toContain('ip kube-proxy services rule ip daddr . meta l4proto . th dport vmap @service-ips (verdict goto service-');
    expect(text).toContain(`meta l4proto tcp dnat to ${endpointIp(3, 0)}:8080 (verdict accept)\n`);
  });

  it('marks hairpin traffic for masquerade and masquerades it at postrouting', () => {
    const p = tcp({ saddr: ip(endpointIp(3, 0)), daddr: ip(clusterIp(3)), dport: 80 });
    const pre = evaluateHook(rs, p, ctx({ hook: 'prerouting' }));
    expect(pre.mark & 0x4000).toBe(0x4000);
    const post = evaluateHook(rs, { ...p, mark: pre.mark }, ctx({ hook: 'postrouting' }));
    expect(post.nat).toEqual({ kind: 'masquerade', flags: ['fully-random'] });
    expect(post.mark & 0x4000).toBe(0);
  });

  it('rejects a Service without endpoints in filter, and drops unallocated ClusterIPs', () => {
    const noEp = tcp({ saddr: ip('10.0.0.5'), daddr: ip(clusterIp(9)), dport: 80 });
    expect(evaluateHook(rs, noEp, ctx({ hook: 'forward' })).verdict).toBe('reject');
    const unallocated = tcp({ saddr: ip('10.0.0.5'), daddr: ip('172.30.200.1'), dport: 80 });
    expect(evaluateHook(rs, unallocated, ctx({ hook: 'forward' })).verdict).toBe('drop');
    const wrongPort = tcp({ saddr: ip('10.0.0.5'), daddr: ip(clusterIp(3)), dport: 81 });
    expect(evaluateHook(rs, wrongPort, ctx({ hook: 'forward' })).verdict).toBe('reject');
  });

  it('reaches a NodePort through the node address', () => {
    const p = tcp({ daddr: ip('192.0.2.10'), dport: 30000 + 2 });
    expect(evaluateHook(rs, p, ctx({ hook: 'prerouting' })).nat?.addr?.lo).toBe(ip(endpointIp(8, 0)));
  });
});

describe('set and map indexes', () => {
  const rs = nftApply(
    emptyRuleset(),
    `table ip t {
	map m {
		type ipv4_addr . inet_service : verdict
		elements = { 192.0.2.1 . 80 : accept, 192.0.2.2 . 80 : drop, 192.0.2.3 . 0 : drop }
	}
	chain c {
		type filter hook input priority 0; policy accept;
		ip daddr . tcp dport vmap @m
		counter
	}
	chain n {
		type filter hook output priority 0; policy accept;
		numgen inc mod 4 vmap { 0 : drop, 2 : drop }
	}
}
`,
  );
  const tcp = (daddr: string, dport: number): NftPacket => ({ saddr: ip('198.51.100.1'), daddr: ip(daddr), protocol: 6, sport: 40000, dport, mark: 0 });
  const ruleVerdicts = (p: NftPacket): string[] => evaluateHook(rs, p, ctx({ trace: true })).trace.map((e) => `${e.kind} ${e.verdict}`);
  it('finds a concatenated key exactly, and no other: a part larger than every element part misses', () => {
    expect(ruleVerdicts(tcp('192.0.2.1', 80))).toEqual(['rule accept']);
    expect(ruleVerdicts(tcp('192.0.2.2', 80))).toEqual(['rule drop']);
    expect(ruleVerdicts(tcp('192.0.2.3', 0))).toEqual(['rule drop']);
    // 208 = 80 + 128: packed as one number without the bound, it would read as 192.0.2.2 . 80.
    expect(ruleVerdicts(tcp('192.0.2.1', 208))).toEqual(['rule continue', 'policy accept']);
    expect(ruleVerdicts(tcp('192.0.2.1', 81))).toEqual(['rule continue', 'policy accept']);
  });
  it('looks small integer keys up by value: numgen inc 1 and 3 miss, 0 and 2 drop', () => {
    const state = createNftEvalState();
    const verdicts = [0, 1, 2, 3, 4].map(() => evaluateHook(rs, tcp('192.0.2.9', 22), ctx({ hook: 'output' }), state).verdict);
    expect(verdicts).toEqual(['drop', 'accept', 'drop', 'accept', 'drop']);
  });
});

describe('comparisons with constants, run as one step', () => {
  const rs = nftApply(
    emptyRuleset(),
    `table ip t {
	chain c {
		type filter hook input priority 0; policy accept;
		ip saddr != 10.0.0.0/8 tcp dport 1024-2048 meta mark != 0x5 ip ttl 64 drop
		ip saddr 10.1.0.0/16 tcp dport 53 reject
	}
}
`,
  );
  const p = (saddr: string, dport: number, mark: number, ttl = 64): NftPacket => ({ saddr: ip(saddr), daddr: ip('192.0.2.10'), protocol: 6, sport: 40000, dport, mark, ttl });
  it('matches only when every comparison holds, four in a row included', () => {
    expect(evaluateHook(rs, p('198.51.100.1', 1500, 0), ctx()).verdict).toBe('drop');
    expect(evaluateHook(rs, p('10.2.3.4', 1500, 0), ctx()).verdict).toBe('accept');
    expect(evaluateHook(rs, p('198.51.100.1', 1023, 0), ctx()).verdict).toBe('accept');
    expect(evaluateHook(rs, p('198.51.100.1', 2048, 5), ctx()).verdict).toBe('accept');
    expect(evaluateHook(rs, p('198.51.100.1', 2048, 6, 63), ctx()).verdict).toBe('accept');
    expect(evaluateHook(rs, p('10.1.9.9', 53, 0), ctx()).verdict).toBe('reject');
    // A UDP packet has no tcp dport: the comparison fails, whatever the operator.
    expect(evaluateHook(rs, { ...p('198.51.100.1', 1500, 0), protocol: 17 }, ctx()).verdict).toBe('accept');
  });
});
