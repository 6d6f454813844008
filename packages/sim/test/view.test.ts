import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Rule } from '@netsim/netfilter';
import { ruleIdentity } from '../src/index.ts';

/** The definition: JSON with sorted keys, undefined-valued keys left out, counters ignored. */
function reference(rule: Rule): string {
  const { counters: _counters, ...rest } = rule;
  const canon = (v: unknown): string => {
    if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'undefined';
    if (Array.isArray(v)) return `[${v.map(canon).join(',')}]`;
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canon(o[k])}`)
      .join(',')}}`;
  };
  return canon(rest);
}

describe('ruleIdentity', () => {
  it('should print exactly the definition for any rule-shaped data, holes and undefined included', () => {
    const value = fc.letrec((tie) => ({
      v: fc.oneof(
        { depthSize: 'small' },
        fc.constantFrom(0, -1, 7.5, 'a"b', 'tcp', true, null, undefined),
        fc.sparseArray(tie('v'), { maxLength: 4 }),
        fc.dictionary(fc.constantFrom('kind', 'to', 'dport', 'négate', 'a b', '"q"'), tie('v'), { maxKeys: 4 }),
      ),
    })).v;
    const rule = fc.record({ matches: fc.array(value, { maxLength: 3 }), target: value, counters: fc.option(fc.record({ packets: fc.nat(), bytes: fc.nat() }), { nil: undefined }) });
    fc.assert(
      fc.property(rule, (r) => {
        expect(ruleIdentity(r as unknown as Rule)).toBe(reference(r as unknown as Rule));
      }),
      { seed: 17, numRuns: 500 },
    );
  });

  it('should ignore key order and counters, and tell different rules apart', () => {
    const a = { matches: [{ kind: 'tcp', dport: 80 }], target: { kind: 'ACCEPT' } } as unknown as Rule;
    const b = { target: { kind: 'ACCEPT' }, matches: [{ dport: 80, kind: 'tcp' }], counters: { packets: 3, bytes: 9 } } as unknown as Rule;
    expect(ruleIdentity(a)).toBe(ruleIdentity(b));
    const c: Rule = { ...a, target: { kind: 'DROP' } };
    expect(ruleIdentity(a)).not.toBe(ruleIdentity(c));
  });
});
