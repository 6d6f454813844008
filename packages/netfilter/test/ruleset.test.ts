import { describe, expect, it } from 'vitest';
import { BUILTIN_CHAINS, emptyRuleset, isBuiltinChain, isNetfilterError, NetfilterError } from '../src/index.ts';

describe('ruleset', () => {
  it('should create every table with exactly its built-in chains, policy ACCEPT', () => {
    const r = emptyRuleset();
    expect(Object.keys(r.tables.nat.chains)).toEqual(['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING']);
    expect(Object.keys(r.tables.filter.chains)).toEqual([...BUILTIN_CHAINS.filter]);
    expect(Object.keys(r.tables.raw.chains)).toEqual(['PREROUTING', 'OUTPUT']);
    expect(r.tables.mangle.chains['FORWARD']?.policy).toBe('ACCEPT');
  });

  it('should know which chains are built in per table', () => {
    expect(isBuiltinChain('nat', 'FORWARD')).toBe(false);
    expect(isBuiltinChain('filter', 'FORWARD')).toBe(true);
    expect(isBuiltinChain('filter', 'KUBE-SERVICES')).toBe(false);
  });

  it('should carry a code and location on typed errors', () => {
    const e = new NetfilterError('parse', 'Bad argument `foo\'', { location: { line: 3, column: 7, token: 'foo' }, exitCode: 2 });
    expect(isNetfilterError(e)).toBe(true);
    expect(isNetfilterError(new Error('x'))).toBe(false);
    expect(e.code).toBe('parse');
    expect(e.location?.line).toBe(3);
    expect(e.exitCode).toBe(2);
  });
});
