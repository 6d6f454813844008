import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { formatSave, freshRuleset, parseSave, restore } from '../../src/index.ts';
import { ruleArbitrary, rulesetArbitrary } from '../../src/testing/index.ts';

// NETSIM_PROPERTY_RUNS raises the number of generated cases for a long campaign
// (see docs/netfilter.md); the default run stays within a few seconds.
const runs = Number(process.env['NETSIM_PROPERTY_RUNS'] ?? 100);
// Generous per-test limit: the box the suite runs on is small and shared.
const timeout = Math.max(60_000, runs * 200);

describe('rulesetArbitrary', () => {
  it('should round-trip: parseSave(formatSave(r)) deep-equals r', () => {
    fc.assert(
      fc.property(rulesetArbitrary(), (r) => {
        expect(parseSave(formatSave(r))).toEqual(r);
      }),
      { seed: 20260101, numRuns: runs },
    );
  }, timeout);

  it('should be idempotent: formatting the parse of a formatted ruleset prints the same text', () => {
    fc.assert(
      fc.property(rulesetArbitrary(), (r) => {
        const text = formatSave(r);
        expect(formatSave(parseSave(text))).toBe(text);
      }),
      { seed: 424242, numRuns: runs },
    );
  }, timeout);

  it('should generate rulesets the real tool accepts: a plain restore keeps every rule', () => {
    fc.assert(
      fc.property(rulesetArbitrary(), (r) => {
        const text = formatSave(r, { counters: false });
        // Without --counters a restore zeroes chain counters, so compare against zeroed ones.
        const zeroed = text.replace(/^(:\S+ \S+) \[\d+:\d+\]$/gm, '$1 [0:0]');
        expect(formatSave(restore(freshRuleset(), text), { counters: false })).toBe(zeroed);
      }),
      { seed: 99, numRuns: runs },
    );
  }, timeout);

  it('should name only the given ipsets, and restore where exactly those exist', () => {
    const ipsets = ['KUBE-CLUSTER-IP', 'allow-list'];
    let sets = 0;
    fc.assert(
      fc.property(rulesetArbitrary({ ipsets }), (r) => {
        const text = formatSave(r, { counters: false });
        for (const m of text.matchAll(/--match-set (\S+)/g)) {
          sets++;
          expect(ipsets).toContain(m[1]);
        }
        expect(() => restore(freshRuleset(), text, { ipsets })).not.toThrow();
      }),
      { seed: 17, numRuns: runs },
    );
    expect(sets).toBeGreaterThan(0);
    // Without the option no rule names a set or an nfacct counter (a fresh host has neither).
    const plain = fc.sample(rulesetArbitrary(), { seed: 17, numRuns: runs }).map((r) => formatSave(r)).join('\n');
    expect(plain).not.toMatch(/-m (set|nfacct) /);
    expect(() => fc.sample(rulesetArbitrary(), { seed: 17, numRuns: runs }).forEach((r) => restore(freshRuleset(), formatSave(r), { ipsets: [] }))).not.toThrow();
  }, timeout);

  it('should generate rules for a chain that keep the chain\'s interface limits', () => {
    fc.assert(
      fc.property(ruleArbitrary({ table: 'filter', chain: 'INPUT', builtin: true, jumpTargets: [] }), (rule) => {
        expect(rule.outIface).toBeUndefined();
        expect(rule.target?.kind).not.toBe('jump');
      }),
      { seed: 5, numRuns: 200 },
    );
  });
});
