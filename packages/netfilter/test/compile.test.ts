import { describe, expect, it } from 'vitest';
import { compile, evaluateTable } from '../src/index.ts';
import { ctx, pkt, rule, ruleset } from './evalHelpers.ts';

describe('compile', () => {
  const rs = ruleset({ nat: { PREROUTING: [rule({ j: 'ACCEPT' })] }, filter: { INPUT: [rule({ j: 'DROP' })] } });

  it('should compile a ruleset once and return the cached result for the same object', () => {
    expect(compile(rs)).toBe(compile(rs));
    expect(compile(rs, { index: false })).toBe(compile(rs, { index: false }));
    expect(compile(rs, { index: false })).not.toBe(compile(rs));
  });

  it('should reuse the compiled form of tables a new ruleset shares with an old one', () => {
    const next = { tables: { ...rs.tables, filter: ruleset({ filter: { INPUT: [rule({ j: 'ACCEPT' })] } }).tables.filter } };
    expect(compile(next).tables.nat).toBe(compile(rs).tables.nat);
    expect(compile(next).tables.filter).not.toBe(compile(rs).tables.filter);
    expect(evaluateTable(next, 'filter', 'INPUT', pkt(), ctx()).verdict.kind).toBe('ACCEPT');
    expect(evaluateTable(rs, 'filter', 'INPUT', pkt(), ctx()).verdict.kind).toBe('DROP');
  });

  it('should give the same results from a ruleset and from its compiled form', () => {
    expect(evaluateTable(compile(rs), 'nat', 'PREROUTING', pkt(), ctx())).toEqual(evaluateTable(rs, 'nat', 'PREROUTING', pkt(), ctx()));
  });
});
