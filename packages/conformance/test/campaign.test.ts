/**
 * The default conformance run: fixed seeds, a bounded number of cases per profile, every case
 * run on the real kernel and with netsim. A disagreement fails the run unless it is a known one
 * (see src/known.ts); known ones are printed with their reason.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { campaignCases, checkCase, runCampaign, type CampaignResult } from '../src/campaign.ts';
import { Lab } from '../src/lab.ts';
import { formatDisagreement } from '../src/runner.ts';

const env = inject('conformanceEnv');
const legacyEnv = inject('conformanceLegacy');

/** Cases per profile in the default run (about a quarter of a second each). */
const DEFAULT_RUNS = { forward: 60, reject: 30, local: 30 } as const;
const SEEDS = { forward: 20260101, reject: 20260102, local: 20260103 } as const;

function report(r: CampaignResult, profile: string): string[] {
  return r.disagreements.map((d) => {
    const v = d.checked.verdict;
    const label = v.kind === 'known' ? `known ${v.known.id}` : 'NEW';
    return `[${label}] ${formatDisagreement(d.case, d.checked.result, `pnpm conformance --seed ${r.seed} --profiles ${profile} --replay ${d.index}`)}`;
  });
}

describe.skipIf(!env.ok)('conformance: netsim against the kernel (default run)', () => {
  let lab: Lab;
  let legacy: Lab | undefined;
  beforeAll(() => {
    lab = Lab.create();
    legacy = legacyEnv.ok ? Lab.create({ backend: 'legacy' }) : undefined;
  });
  afterAll(() => {
    lab.destroy();
    legacy?.destroy();
  });

  for (const profile of ['forward', 'reject', 'local'] as const) {
    it(`should agree with the kernel on ${DEFAULT_RUNS[profile]} generated ${profile} cases (seed ${SEEDS[profile]})`, () => {
      const r = runCampaign(lab, { seed: SEEDS[profile], runs: DEFAULT_RUNS[profile], profiles: [profile], shrink: false }, legacy);
      const lines = report(r, profile);
      const fresh = r.disagreements.filter((d) => d.checked.verdict.kind === 'new');
      if (r.disagreements.length > 0) console.log(`conformance ${profile}: ${r.agreed}/${r.runs} agreed\n${lines.join('\n\n')}`);
      expect(r.runs).toBe(DEFAULT_RUNS[profile]);
      expect(fresh.map((d) => d.index)).toEqual([]);
      expect(r.undecided).toEqual([]);
      expect(r.agreed + r.disagreements.length).toBe(r.runs);
    });
  }

  it('should replay case i of a seed as exactly the case the campaign ran', () => {
    const cases = campaignCases(SEEDS.forward, 5, ['forward']);
    const again = campaignCases(SEEDS.forward, 5, ['forward']);
    expect(again).toEqual(cases);
    const one = runCampaign(lab, { seed: SEEDS.forward, runs: 5, profiles: ['forward'], replay: 3, shrink: false });
    expect(one.runs).toBe(1);
    const direct = checkCase(lab, cases[3] as (typeof cases)[number]);
    expect(one.agreed === 1).toBe(direct.verdict.kind === 'agree');
  });
});
