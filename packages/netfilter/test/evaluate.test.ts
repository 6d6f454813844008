import { describe, expect, it } from 'vitest';
import { evaluateHook, evaluateTable, MAX_CHAIN_LEVEL, type Rule } from '../src/index.ts';
import { comment, ctx, dport, ip, NEW, pkt, rule, ruleset, traceLines } from './evalHelpers.ts';

const filterInput = (chains: Parameters<typeof ruleset>[0]['filter']) => ruleset({ filter: chains ?? {} });

describe('evaluateTable: verdicts and policies', () => {
  it('should apply the built-in chain policy when no rule matches', () => {
    const rs = filterInput({ INPUT: { policy: 'DROP', rules: [rule({ s: '192.0.2.1', j: 'ACCEPT' })] } });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx());
    expect(r.verdict).toEqual({ kind: 'DROP', byPolicy: true });
    expect(traceLines(r)).toEqual(['filter:INPUT:1:nomatch', 'filter:INPUT:policy:DROP']);
  });

  it('should stop at the first terminal target and not consider later rules', () => {
    const rs = filterInput({ INPUT: [rule({ j: 'DROP' }), rule({ j: 'ACCEPT' })] });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx());
    expect(r.verdict).toEqual({ kind: 'DROP', byPolicy: false });
    expect(traceLines(r)).toEqual(['filter:INPUT:1:match']);
  });

  it('should return REJECT with its --reject-with', () => {
    const rs = filterInput({ INPUT: [rule({ p: 'tcp', j: { kind: 'REJECT', with: 'tcp-reset' } })] });
    expect(evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx()).verdict).toEqual({ kind: 'REJECT', with: 'tcp-reset' });
  });

  it('should continue past rules without a target, LOG and NFLOG', () => {
    const rs = filterInput({
      INPUT: {
        policy: 'DROP',
        rules: [rule({}), rule({ j: { kind: 'LOG', prefix: 'x ' } }), rule({ j: { kind: 'NFLOG', args: ['--nflog-group', '2'] } }), rule({ j: 'ACCEPT' })],
      },
    });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx());
    expect(r.verdict.kind).toBe('ACCEPT');
    expect(traceLines(r)).toEqual(['filter:INPUT:1:match', 'filter:INPUT:2:match', 'filter:INPUT:3:match', 'filter:INPUT:4:match']);
  });

  it('should accept with an empty trace in a table that has no chain at that hook', () => {
    const r = evaluateTable(ruleset({}), 'filter', 'PREROUTING', pkt(), ctx());
    expect(r.verdict.kind).toBe('ACCEPT');
    expect(r.trace).toEqual([]);
  });

  it('should record nothing when the trace is turned off, with the same verdict', () => {
    const rs = filterInput({ INPUT: [rule({ s: '192.0.2.1', j: 'DROP' }), rule({ j: { kind: 'MARK', value: 5, mask: 0xffffffff } })] });
    const full = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx());
    const quiet = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx(), { trace: false });
    expect(quiet.trace).toEqual([]);
    expect(full.trace.length).toBe(3);
    expect({ ...quiet, trace: [] }).toEqual({ ...full, trace: [] });
  });
});

describe('evaluateTable: jump, goto, RETURN', () => {
  it('should return from a user chain to the rule after the jump when it falls off the end', () => {
    const rs = filterInput({
      INPUT: { policy: 'DROP', rules: [rule({ j: 'SUB' }), rule({ j: 'ACCEPT' })] },
      SUB: [rule({ s: '192.0.2.1', j: 'DROP' })],
    });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx());
    expect(r.verdict.kind).toBe('ACCEPT');
    expect(traceLines(r)).toEqual(['filter:INPUT:1:match', 'filter:SUB:1:nomatch', 'filter:SUB:return', 'filter:INPUT:2:match']);
  });

  it('should return early on a matching RETURN rule', () => {
    const rs = filterInput({
      INPUT: { policy: 'DROP', rules: [rule({ j: 'SUB' }), rule({ j: 'ACCEPT' })] },
      SUB: [rule({ p: 'tcp', j: 'RETURN' }), rule({ j: 'DROP' })],
    });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx());
    expect(r.verdict.kind).toBe('ACCEPT');
    expect(traceLines(r)).toEqual(['filter:INPUT:1:match', 'filter:SUB:1:match', 'filter:SUB:return', 'filter:INPUT:2:match']);
  });

  it('should apply the policy on RETURN in a built-in chain', () => {
    const rs = filterInput({ INPUT: { policy: 'DROP', rules: [rule({ j: 'RETURN' }), rule({ j: 'ACCEPT' })] } });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx());
    expect(r.verdict).toEqual({ kind: 'DROP', byPolicy: true });
    expect(traceLines(r)).toEqual(['filter:INPUT:1:match', 'filter:INPUT:policy:DROP']);
  });

  it('should return from a goto chain to the caller of the chain that did the goto', () => {
    const rs = filterInput({
      INPUT: { policy: 'DROP', rules: [rule({ j: 'A' }), rule({ j: 'ACCEPT' })] },
      A: [rule({ g: 'B' }), rule({ j: 'DROP' })],
      B: [rule({ j: 'RETURN' })],
    });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx());
    expect(r.verdict.kind).toBe('ACCEPT');
    expect(traceLines(r)).toEqual([
      'filter:INPUT:1:match',
      'filter:A:1:match',
      'filter:B:1:match',
      'filter:B:return',
      'filter:INPUT:2:match',
    ]);
  });

  it('should apply the built-in policy when a chain reached by goto from the built-in chain returns', () => {
    const rs = filterInput({
      INPUT: { policy: 'DROP', rules: [rule({ g: 'A' }), rule({ j: 'ACCEPT' })] },
      A: [rule({ s: '192.0.2.9', j: 'ACCEPT' })],
    });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx());
    expect(r.verdict).toEqual({ kind: 'DROP', byPolicy: true });
    expect(traceLines(r)).toEqual(['filter:INPUT:1:match', 'filter:A:1:nomatch', 'filter:A:return', 'filter:INPUT:policy:DROP']);
  });

  it('should treat an empty user chain as an immediate return', () => {
    const rs = filterInput({ INPUT: { policy: 'DROP', rules: [rule({ j: 'EMPTY' }), rule({ j: 'ACCEPT' })] }, EMPTY: [] });
    expect(traceLines(evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx()))).toEqual([
      'filter:INPUT:1:match',
      'filter:EMPTY:return',
      'filter:INPUT:2:match',
    ]);
  });

  it('should resume a chain entered several times at the right rule each time', () => {
    const rs = filterInput({
      INPUT: { policy: 'DROP', rules: [rule({ j: 'M' }), rule({ j: 'M' }), rule({ m: [{ kind: 'mark', value: 2, mask: 0xff, negate: false }], j: 'ACCEPT' })] },
      M: [rule({ j: { kind: 'MARK', value: 1, mask: 0 } })],
    });
    // --xor-mark 1 (value 1, mask 0) toggles bit 0: two calls leave 0, so rule 3 (mark 2) does not match.
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx());
    expect(r.mark).toBe(0);
    expect(traceLines(r)).toEqual([
      'filter:INPUT:1:match',
      'filter:M:1:match',
      'filter:M:return',
      'filter:INPUT:2:match',
      'filter:M:1:match',
      'filter:M:return',
      'filter:INPUT:3:nomatch',
      'filter:INPUT:policy:DROP',
    ]);
  });

  it('should end a jump loop with an unknown verdict instead of hanging', () => {
    const rs = filterInput({ INPUT: [rule({ j: 'A' })], A: [rule({ j: 'B' })], B: [rule({ j: 'A' })] });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx());
    expect(r.verdict.kind).toBe('unknown');
    if (r.verdict.kind !== 'unknown') return;
    expect(r.verdict.reason).toContain('Too many links');
    expect(r.trace.length).toBe(MAX_CHAIN_LEVEL + 1);
  });

  it('should end a goto-only loop (which never grows the return stack) with an unknown verdict', () => {
    const rs = filterInput({ INPUT: [rule({ g: 'A' })], A: [rule({ g: 'B' })], B: [rule({ g: 'A' })] });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx());
    expect(r.verdict.kind).toBe('unknown');
  });

  it('should follow 15 nested chains, the deepest nf_tables loads, and refuse the 16th', () => {
    const chains = (depth: number) => {
      const spec: { [name: string]: Rule[] } = { INPUT: [rule({ j: 'C1' })] };
      for (let i = 1; i < depth; i++) spec[`C${i}`] = [rule({ j: `C${i + 1}` })];
      spec[`C${depth}`] = [rule({ j: 'DROP' })];
      return filterInput(spec);
    };
    expect(evaluateTable(chains(15), 'filter', 'INPUT', pkt(), ctx()).verdict).toEqual({ kind: 'DROP', byPolicy: false });
    const deep = evaluateTable(chains(16), 'filter', 'INPUT', pkt(), ctx()).verdict;
    expect(deep.kind).toBe('unknown');
    if (deep.kind === 'unknown') expect(deep.at).toEqual({ table: 'filter', chain: 'C15', index: 1 });
  });

  it('should give an unknown verdict for a jump to a chain that does not exist', () => {
    const rs = filterInput({ INPUT: [rule({ j: 'NOPE' })] });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx());
    expect(r.verdict).toEqual({
      kind: 'unknown',
      reason: 'filter INPUT rule 1: cannot evaluate jump to NOPE: no such chain',
      at: { table: 'filter', chain: 'INPUT', index: 1 },
    });
    expect(traceLines(r)).toEqual(['filter:INPUT:1:match(jump to NOPE: no such chain)']);
  });
});

describe('evaluateTable: marks', () => {
  it('should let later rules and called chains see a mark set by MARK', () => {
    const rs = ruleset({
      mangle: {
        PREROUTING: [
          rule({ j: { kind: 'MARK', value: 0x4000, mask: 0x4000 } }),
          rule({ j: 'CHK' }),
          rule({ m: [{ kind: 'mark', value: 0x4000, mask: 0x4000, negate: false }], j: { kind: 'MARK', value: 0x1, mask: 0xff } }),
        ],
        CHK: [rule({ m: [{ kind: 'mark', value: 0x4000, mask: 0x4000, negate: true }], j: 'DROP' })],
      },
    });
    const r = evaluateTable(rs, 'mangle', 'PREROUTING', pkt({ mark: 0x10 }), ctx());
    expect(r.verdict.kind).toBe('ACCEPT');
    expect(r.mark).toBe(0x4001);
  });

  it('should apply --set-xmark as (mark & ~mask) ^ value', () => {
    const rs = ruleset({ mangle: { OUTPUT: [rule({ j: { kind: 'MARK', value: 0x0f, mask: 0xf0 } })] } });
    expect(evaluateTable(rs, 'mangle', 'OUTPUT', pkt({ mark: 0xff }), ctx()).mark).toBe(0x00);
    expect(evaluateTable(rs, 'mangle', 'OUTPUT', pkt({ mark: 0x100 }), ctx()).mark).toBe(0x10f);
  });

  it('should save the mark to the connection and restore it with CONNMARK', () => {
    const rs = ruleset({
      mangle: {
        PREROUTING: [
          rule({ j: { kind: 'CONNMARK', mode: 'save', value: 0, mask: 0, nfmask: 0xff, ctmask: 0xff } }),
          rule({ j: { kind: 'MARK', value: 0, mask: 0xffffffff } }),
          rule({ j: { kind: 'CONNMARK', mode: 'restore', value: 0, mask: 0, nfmask: 0x0f, ctmask: 0x0f } }),
        ],
      },
    });
    const r = evaluateTable(rs, 'mangle', 'PREROUTING', pkt({ mark: 0x1234 }), ctx({ conntrack: { ...NEW, ctmark: 0xab00 } }));
    expect(r.ctmark).toBe(0xab34);
    expect(r.mark).toBe(0x4);
  });

  it('should set the connection mark with CONNMARK --set-xmark and ignore CONNMARK without a conntrack entry', () => {
    const rs = ruleset({ mangle: { PREROUTING: [rule({ j: { kind: 'CONNMARK', mode: 'set-xmark', value: 0x5, mask: 0xf } })] } });
    expect(evaluateTable(rs, 'mangle', 'PREROUTING', pkt(), ctx({ conntrack: { ...NEW, ctmark: 0xf3 } })).ctmark).toBe(0xf5);
    const invalid = { state: 'INVALID', dnat: false, snat: false, ctmark: 0xf3 } as const;
    expect(evaluateTable(rs, 'mangle', 'PREROUTING', pkt(), ctx({ conntrack: invalid })).ctmark).toBe(0xf3);
  });
});

describe('evaluateTable: NAT, NOTRACK, TRACE and unknown targets', () => {
  it('should end the walk on DNAT and hand back the NAT request', () => {
    const to = { minIp: ip('10.244.1.5'), maxIp: ip('10.244.1.5'), minPort: 8080, maxPort: 8080 };
    const rs = ruleset({ nat: { PREROUTING: [rule({ p: 'tcp', m: [dport(80)], j: { kind: 'DNAT', to, random: false, persistent: false } }), rule({ j: 'DROP' })] } });
    const r = evaluateTable(rs, 'nat', 'PREROUTING', pkt(), ctx());
    expect(r.verdict.kind).toBe('ACCEPT');
    expect(r.nat).toEqual({ kind: 'DNAT', to, random: false, persistent: false });
    expect(r.trace.length).toBe(1);
  });

  it('should hand back SNAT and MASQUERADE requests with their flags', () => {
    const snat = { kind: 'SNAT', to: { minIp: ip('198.51.100.1') }, random: false, randomFully: true, persistent: false } as const;
    const masq = { kind: 'MASQUERADE', random: false, randomFully: true } as const;
    const rs = ruleset({ nat: { POSTROUTING: [rule({ s: '10.0.0.0/8', j: snat }), rule({ j: masq })] } });
    expect(evaluateTable(rs, 'nat', 'POSTROUTING', pkt({ src: '10.1.2.3' }), ctx()).nat).toEqual(snat);
    expect(evaluateTable(rs, 'nat', 'POSTROUTING', pkt(), ctx()).nat).toEqual(masq);
  });

  it('should set notrack on NOTRACK and CT --notrack and continue, and make later rules see UNTRACKED', () => {
    const untracked = { kind: 'conntrack', ctstate: { states: ['UNTRACKED'], negate: false } } as const;
    for (const t of [{ kind: 'NOTRACK' }, { kind: 'CT', notrack: true, args: ['--notrack'] }] as const) {
      const rs = ruleset({ raw: { PREROUTING: [rule({ j: t }), rule({ m: [untracked], j: 'DROP' })] } });
      const r = evaluateTable(rs, 'raw', 'PREROUTING', pkt(), ctx({ conntrack: { state: 'INVALID', dnat: false, snat: false, ctmark: 0 } }));
      expect(r.notrack).toBe(true);
      expect(r.verdict).toEqual({ kind: 'DROP', byPolicy: false });
    }
  });

  it('should ignore NOTRACK for a packet that already has a conntrack entry (looped back), as the kernel does', () => {
    const rs = ruleset({ raw: { OUTPUT: [rule({ j: 'NOTRACK' })] } });
    expect(evaluateTable(rs, 'raw', 'OUTPUT', pkt(), ctx({ conntrack: NEW })).notrack).toBe(false);
  });

  it('should flag TRACE and continue', () => {
    const rs = ruleset({ raw: { PREROUTING: { policy: 'DROP', rules: [rule({ j: 'TRACE' })] } } });
    const r = evaluateTable(rs, 'raw', 'PREROUTING', pkt(), ctx());
    expect(r.traced).toBe(true);
    expect(r.verdict).toEqual({ kind: 'DROP', byPolicy: true });
  });

  it('should give an unknown verdict naming the rule and target for a target it does not evaluate', () => {
    const rs = ruleset({ mangle: { PREROUTING: [rule({ p: 'udp' }), rule({ p: 'tcp', j: { kind: 'unknown', name: 'TPROXY', args: ['--on-port', '1'] } })] } });
    const r = evaluateTable(rs, 'mangle', 'PREROUTING', pkt(), ctx());
    expect(r.verdict).toEqual({
      kind: 'unknown',
      reason: 'mangle PREROUTING rule 2: cannot evaluate target TPROXY',
      at: { table: 'mangle', chain: 'PREROUTING', index: 2 },
    });
    expect(traceLines(r)).toEqual(['mangle:PREROUTING:1:nomatch', 'mangle:PREROUTING:2:match(target TPROXY)']);
  });

  it('should report CT with options other than --notrack as unknown', () => {
    const rs = ruleset({ raw: { PREROUTING: [rule({ j: { kind: 'CT', notrack: false, args: ['--zone', '1'] } })] } });
    const v = evaluateTable(rs, 'raw', 'PREROUTING', pkt(), ctx()).verdict;
    expect(v.kind === 'unknown' && v.reason).toBe('raw PREROUTING rule 1: cannot evaluate target CT --zone 1');
  });
});

describe('evaluateTable: unknown modules and UnknownPolicy', () => {
  const recent = { kind: 'unknown', module: 'recent', args: ['--rcheck', '--name', 'x'] } as const;

  it('should stop with an unknown verdict naming the rule and module by default', () => {
    const rs = filterInput({ INPUT: [rule({ m: [recent], j: 'DROP' }), rule({ j: 'ACCEPT' })] });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx());
    expect(r.verdict).toEqual({
      kind: 'unknown',
      reason: 'filter INPUT rule 1: cannot evaluate recent',
      at: { table: 'filter', chain: 'INPUT', index: 1 },
    });
    expect(traceLines(r)).toEqual(['filter:INPUT:1:unknown(recent)']);
  });

  it('should call a rule nomatch when a known match fails, even after the unknown one', () => {
    const rs = filterInput({ INPUT: [rule({ m: [recent, dport(22)], j: 'DROP' }), rule({ j: 'ACCEPT' })] });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt({ dport: 80 }), ctx());
    expect(r.verdict.kind).toBe('ACCEPT');
    expect(traceLines(r)).toEqual(['filter:INPUT:1:nomatch', 'filter:INPUT:2:match']);
  });

  it('should go on as if matched under assume-match and as if not under assume-nomatch, recording both', () => {
    const rs = filterInput({ INPUT: [rule({ m: [recent], j: 'DROP' }), rule({ j: 'ACCEPT' })] });
    const yes = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx(), { unknown: 'assume-match' });
    expect(yes.verdict).toEqual({ kind: 'DROP', byPolicy: false });
    expect(traceLines(yes)).toEqual(['filter:INPUT:1:unknown(recent)->match']);
    const no = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx(), { unknown: 'assume-nomatch' });
    expect(no.verdict.kind).toBe('ACCEPT');
    expect(traceLines(no)).toEqual(['filter:INPUT:1:unknown(recent)->nomatch', 'filter:INPUT:2:match']);
  });

  it('should follow each module its own unknown policy, a rule not matching when any of its modules is assumed not to', () => {
    const limit: Rule['matches'][number] = { kind: 'unknown', module: 'limit', args: ['--limit', '1/sec'] };
    const physdev: Rule['matches'][number] = { kind: 'unknown', module: 'physdev', args: ['--physdev-is-bridged'] };
    const rs = filterInput({ INPUT: [rule({ m: [limit], j: 'DROP' }), rule({ m: [limit, physdev], j: 'DROP' }), rule({ m: [physdev], j: 'ACCEPT' }), rule({ j: 'DROP' })] });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx(), { unknown: 'stop', unknownModules: { limit: 'assume-nomatch', physdev: 'assume-match' } });
    expect(r.verdict.kind).toBe('ACCEPT');
    expect(traceLines(r)).toEqual(['filter:INPUT:1:unknown(limit)->nomatch', 'filter:INPUT:2:unknown(limit)->nomatch', 'filter:INPUT:3:unknown(physdev)->match']);
    // A module without its own policy takes the default.
    const stop = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx(), { unknownModules: { physdev: 'assume-match' } });
    expect(stop.verdict).toEqual({ kind: 'unknown', reason: 'filter INPUT rule 1: cannot evaluate limit', at: { table: 'filter', chain: 'INPUT', index: 1 } });
    // Of two undecidable modules, one that stops stops the rule that the other would let match.
    const pair = filterInput({ INPUT: [rule({ m: [limit, physdev], j: 'DROP' })] });
    const both = evaluateTable(pair, 'filter', 'INPUT', pkt(), ctx(), { unknown: 'assume-match', unknownModules: { physdev: 'stop' } });
    expect(both.verdict).toEqual({ kind: 'unknown', reason: 'filter INPUT rule 1: cannot evaluate limit', at: { table: 'filter', chain: 'INPUT', index: 1 } });
    expect(evaluateTable(pair, 'filter', 'INPUT', pkt(), ctx(), { unknown: 'assume-match' }).verdict.kind).toBe('DROP');
  });

  it('should draw for a statistic match after an unknown one only when assuming the unknown matched', () => {
    let draws = 0;
    const counting = () => {
      draws++;
      return 0;
    };
    const st = { kind: 'statistic', mode: 'random', probability: { text: '0.5', threshold31: 0x40000000 }, negate: false } as const;
    const rs = filterInput({ INPUT: [rule({ m: [recent, st], j: 'DROP' })] });
    evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx({ random: counting }));
    evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx({ random: counting }), { unknown: 'assume-nomatch' });
    expect(draws).toBe(0);
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx({ random: counting }), { unknown: 'assume-match' });
    expect(draws).toBe(1);
    expect(r.verdict.kind).toBe('DROP');
  });

  it('should report the unknown tcp option, conntrack options and set options by name', () => {
    const cases: [Rule, string][] = [
      [rule({ p: 'tcp', m: [{ kind: 'tcp', option: { value: 8, negate: false } }] }), 'tcp --tcp-option'],
      [rule({ m: [{ kind: 'conntrack', extra: ['--ctstatus', 'CONFIRMED'] }] }), 'conntrack --ctstatus CONFIRMED'],
      [rule({ m: [{ kind: 'set', setName: 'S', flags: ['src'], negate: false, extra: ['--return-nomatch'] }] }), 'set --return-nomatch'],
      [rule({ m: [{ kind: 'set', setName: 'S', flags: ['src'], negate: false }] }), 'set "S" (no such ipset)'],
    ];
    for (const [r, what] of cases) {
      const res = evaluateTable(filterInput({ INPUT: [r] }), 'filter', 'INPUT', pkt(), ctx());
      expect(traceLines(res)).toEqual([`filter:INPUT:1:unknown(${what})`]);
    }
  });
});

describe('evaluateHook', () => {
  it('should walk the tables of each hook in priority order', () => {
    // One counting rule in every built-in chain of every table.
    const one = [rule({ m: [comment('count')] })];
    const rs = ruleset({
      raw: { PREROUTING: one, OUTPUT: one },
      mangle: { PREROUTING: one, INPUT: one, FORWARD: one, OUTPUT: one, POSTROUTING: one },
      nat: { PREROUTING: one, INPUT: one, OUTPUT: one, POSTROUTING: one },
      filter: { INPUT: one, FORWARD: one, OUTPUT: one },
    });
    const tablesOf = (hook: 'PREROUTING' | 'INPUT' | 'FORWARD' | 'OUTPUT' | 'POSTROUTING') =>
      evaluateHook(rs, hook, pkt(), ctx())
        .trace.filter((e) => e.kind === 'rule')
        .map((e) => e.table);
    expect(tablesOf('PREROUTING')).toEqual(['raw', 'mangle', 'nat']);
    expect(tablesOf('INPUT')).toEqual(['mangle', 'filter', 'nat']);
    expect(tablesOf('FORWARD')).toEqual(['mangle', 'filter']);
    expect(tablesOf('OUTPUT')).toEqual(['raw', 'mangle', 'nat', 'filter']);
    expect(tablesOf('POSTROUTING')).toEqual(['mangle', 'nat']);
  });

  it('should skip the nat table when asked (not the first packet) and for packets without a conntrack entry', () => {
    const rs = ruleset({ nat: { PREROUTING: [rule({ j: { kind: 'DNAT', to: { minIp: ip('10.0.0.1') }, random: false, persistent: false } })] } });
    expect(evaluateHook(rs, 'PREROUTING', pkt(), ctx()).nat?.kind).toBe('DNAT');
    expect(evaluateHook(rs, 'PREROUTING', pkt(), ctx(), { skipNat: true }).nat).toBeUndefined();
    const invalid = { state: 'INVALID', dnat: false, snat: false, ctmark: 0 } as const;
    expect(evaluateHook(rs, 'PREROUTING', pkt(), ctx({ conntrack: invalid })).nat).toBeUndefined();
    const notrack = ruleset({ raw: { PREROUTING: [rule({ j: 'NOTRACK' })] }, nat: rs.tables.nat.chains });
    const r = evaluateHook(notrack, 'PREROUTING', pkt(), ctx());
    expect(r.notrack).toBe(true);
    expect(r.nat).toBeUndefined();
  });

  it('should show the raw table no conntrack state (INVALID) and later tables the state conntrack gave', () => {
    const st = (s: 'INVALID' | 'NEW') => ({ kind: 'conntrack', ctstate: { states: [s], negate: false } }) as const;
    const rs = ruleset({
      raw: { PREROUTING: [rule({ m: [st('INVALID')], j: { kind: 'MARK', value: 1, mask: 0 } })] },
      mangle: { PREROUTING: [rule({ m: [st('NEW')], j: { kind: 'MARK', value: 2, mask: 0 } })] },
    });
    expect(evaluateHook(rs, 'PREROUTING', pkt(), ctx()).mark).toBe(3);
    // A packet looped back through lo still carries its entry into raw.
    expect(evaluateHook(rs, 'PREROUTING', pkt(), ctx(), { rawConntrack: NEW }).mark).toBe(2);
  });

  it('should carry marks from one table to the next and stop at a DROP', () => {
    const rs = ruleset({
      mangle: { PREROUTING: [rule({ j: { kind: 'MARK', value: 0x4000, mask: 0x4000 } })] },
      nat: { PREROUTING: [rule({ m: [{ kind: 'mark', value: 0x4000, mask: 0x4000, negate: false }], j: 'ACCEPT' })] },
    });
    const r = evaluateHook(rs, 'PREROUTING', pkt(), ctx());
    expect(r.mark).toBe(0x4000);
    expect(traceLines(r)).toEqual([
      'raw:PREROUTING:policy:ACCEPT',
      'mangle:PREROUTING:1:match',
      'mangle:PREROUTING:policy:ACCEPT',
      'nat:PREROUTING:1:match',
    ]);
    const dropping = ruleset({ mangle: { FORWARD: [rule({ j: 'DROP' })] }, filter: { FORWARD: [rule({ j: 'ACCEPT' })] } });
    const d = evaluateHook(dropping, 'FORWARD', pkt(), ctx());
    expect(d.verdict).toEqual({ kind: 'DROP', byPolicy: false });
    expect(traceLines(d)).toEqual(['mangle:FORWARD:1:match']);
  });

  it('should show the filter table in OUTPUT the packet as DNAT rewrote it, with --ctstate DNAT', () => {
    const to = { minIp: ip('10.244.1.5'), maxIp: ip('10.244.1.5'), minPort: 8080, maxPort: 8080 };
    const rs = ruleset({
      nat: { OUTPUT: [rule({ d: '198.18.0.10', p: 'tcp', j: { kind: 'DNAT', to, random: false, persistent: false } })] },
      filter: {
        OUTPUT: {
          policy: 'DROP',
          rules: [rule({ d: '10.244.1.5', p: 'tcp', m: [dport(8080), { kind: 'conntrack', ctstate: { states: ['DNAT'], negate: false } }], j: 'ACCEPT' })],
        },
      },
    });
    const r = evaluateHook(rs, 'OUTPUT', pkt({ dst: '198.18.0.10', inIface: null, outIface: 'eth0' }), ctx());
    expect(r.verdict.kind).toBe('ACCEPT');
    expect(traceLines(r)).toContain('filter:OUTPUT:1:match');
  });
});

describe('evaluateTable: one trace entry per rule considered', () => {
  it('should record an assumed-match rule with an unknown target once, and name the target in the verdict', () => {
    const rs = ruleset({
      filter: { INPUT: [rule({ m: [{ kind: 'unknown', module: 'limit', args: ['--limit', '1/s'] }], j: { kind: 'unknown', name: 'AUDIT', args: [] } })] },
    });
    const r = evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx(), { unknown: 'assume-match' });
    expect(traceLines(r)).toEqual(['filter:INPUT:1:unknown(limit)->match']);
    expect(r.verdict.kind === 'unknown' && r.verdict.reason).toBe('filter INPUT rule 1: cannot evaluate target AUDIT');
  });
});

describe('evaluateTable: goto semantics as measured on Linux', () => {
  it('should reproduce the rule counters the kernel showed for goto, RETURN and goto from a built-in chain', () => {
    // Loaded into a network namespace (Linux 6.18, iptables 1.8.9 nf_tables), one UDP packet to
    // port 9 and one to port 10 sent from the host; iptables-save -c then showed [1:30] on
    // OUTPUT 1, OUTPUT 2, OUTPUT 3, A 1, B 1, C 1 and [0:0] on OUTPUT 4, A 2, B 2.
    const udp = (port: number) => [{ kind: 'udp', dport: { range: { from: port, to: port }, negate: false } }] as const;
    const rs = ruleset({
      filter: {
        OUTPUT: [
          rule({ p: 'udp', m: [...udp(9)], j: 'A' }),
          rule({ p: 'udp', m: [...udp(9), comment('after-A')] }),
          rule({ p: 'udp', m: [...udp(10)], g: 'C' }),
          rule({ p: 'udp', m: [...udp(10), comment('after-goto-C')] }),
        ],
        A: [rule({ g: 'B' }), rule({ m: [comment('A-after-goto')] })],
        B: [rule({ j: 'RETURN' }), rule({ m: [comment('B-after-return')] })],
        C: [rule({ m: [comment('in-C')] })],
      },
    });
    const counts = new Map<string, number>();
    for (const port of [9, 10]) {
      const r = evaluateTable(rs, 'filter', 'OUTPUT', pkt({ proto: 17, dport: port, inIface: null, outIface: 'lo' }), ctx());
      for (const e of r.trace) if (e.kind === 'rule' && e.outcome === 'match') counts.set(`${e.chain} ${e.index}`, (counts.get(`${e.chain} ${e.index}`) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual(['A 1', 'B 1', 'C 1', 'OUTPUT 1', 'OUTPUT 2', 'OUTPUT 3']);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
  });
});

describe('evaluateHook: tables that do not exist yet', () => {
  it('should run and trace nothing for an absent table, as nf_tables registers no hook for it', () => {
    const present = ruleset({ filter: { INPUT: [rule({ j: 'ACCEPT' })] } });
    const rs = { tables: { ...present.tables, mangle: { ...present.tables.mangle, absent: true as const } } };
    expect(traceLines(evaluateHook(rs, 'INPUT', pkt(), ctx()))).toEqual(['filter:INPUT:1:match', 'nat:INPUT:policy:ACCEPT']);
    expect(traceLines(evaluateHook(present, 'INPUT', pkt(), ctx()))).toEqual([
      'mangle:INPUT:policy:ACCEPT',
      'filter:INPUT:1:match',
      'nat:INPUT:policy:ACCEPT',
    ]);
  });
});

describe('evaluateHook: null NAT bindings', () => {
  it('should not give --ctstate DNAT to filter OUTPUT after a DNAT to the destination the packet already has', () => {
    // The conformance lab's minimal case (Linux 6.18, iptables 1.8.9): nf_nat_setup_info sets the
    // DNAT status only when the tuple changes, so `! --ctstate DNAT` matched on the kernel.
    const rs = ruleset({
      nat: { OUTPUT: [rule({ j: { kind: 'DNAT', to: { minIp: ip('198.18.3.3'), maxIp: ip('198.18.3.3') }, random: false, persistent: false } })] },
      filter: { OUTPUT: { policy: 'DROP', rules: [rule({ o: 'eth1', m: [{ kind: 'conntrack', ctstate: { states: ['DNAT'], negate: true } }], j: 'ACCEPT' })] } },
    });
    const same = pkt({ src: '192.0.2.1', dst: '198.18.3.3', dport: 8080, inIface: null, outIface: 'eth1' });
    expect(evaluateHook(rs, 'OUTPUT', same, ctx()).verdict.kind).toBe('ACCEPT');
    const moved = { ...same, dst: ip('198.18.3.4') };
    expect(evaluateHook(rs, 'OUTPUT', moved, ctx()).verdict).toEqual({ kind: 'DROP', byPolicy: true });
  });
});
