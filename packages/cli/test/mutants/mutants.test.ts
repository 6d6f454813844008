/**
 * The mutation suite: the default campaign of `netsim fuzz` must catch every one-bug variant of
 * the fixed reference controllers (each from a bug class in a public tracker), and must stay
 * silent on the fixed references themselves. Each campaign stops at its first counterexample.
 *
 * EXPECTED_MISSED lists the variants the default campaign cannot catch yet, each for want of a
 * generated action, fault or oracle (named beside it). The list only shrinks: a listed variant
 * that is caught fails the test until it is taken off.
 */
import { describe, expect, it } from 'vitest';
import { MUTANTS } from '../../../controllers/mutants/index.ts';
import { defaultCampaign } from './suite.ts';

/** A whole default campaign may run here (a missed variant); on a loaded machine that is seconds, not milliseconds. */
const CAMPAIGN_TIMEOUT_MS = 300_000;

const EXPECTED_MISSED: ReadonlyMap<string, string> = new Map<string, string>([]);

describe('mutation suite: the default campaign of netsim fuzz', () => {
  it('should name only real variants as expected-missed, and leave most of them caught', () => {
    const names = new Set(MUTANTS.map((m) => m.name));
    for (const n of EXPECTED_MISSED.keys()) expect(names, n).toContain(n);
    expect(MUTANTS.length).toBeGreaterThanOrEqual(20);
    for (const m of MUTANTS) expect(m.issue, m.name).toMatch(/^[\w.-]+\/[\w.-]+#\d+$/);
  });

  for (const m of MUTANTS) {
    const missing = EXPECTED_MISSED.get(m.name);
    if (missing === undefined) {
      it(`should catch ${m.name} (${m.issue})`, async () => {
        const r = await defaultCampaign(m.name);
        expect(r.caught, `${m.name}: ${m.bug} — no counterexample in the default campaign`).toBe(true);
      }, CAMPAIGN_TIMEOUT_MS);
    } else {
      it(`does not catch ${m.name} yet (needs ${missing}); take it off the list once caught`, async () => {
        const r = await defaultCampaign(m.name);
        expect(r.caught, `${m.name} is now caught at run ${r.atRun ?? 0} (${r.summary ?? ''}): remove it from EXPECTED_MISSED`).toBe(false);
      }, CAMPAIGN_TIMEOUT_MS);
    }
  }

  for (const fixed of ['npl:fixed', 'flannel:fixed', 'kube-proxy:fixed']) {
    it(`should raise no false alarm on ${fixed}`, async () => {
      const r = await defaultCampaign(fixed);
      expect(r.caught, `${fixed}: ${r.summary ?? ''}`).toBe(false);
    }, CAMPAIGN_TIMEOUT_MS);
  }
});
