import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseSave } from '@netsim/netfilter';
import { everyTablePresent, fixtureBehaviour, fixtureFormatCheck, loadFixtures, MAX_UNDECIDED_PER_30 } from '../src/fixtures.ts';
import { Lab } from '../src/lab.ts';
import { formatDisagreement } from '../src/runner.ts';

const env = inject('conformanceEnv');

describe('fixtures (real iptables-save dumps)', () => {
  it('should find every shared dump', () => {
    expect(loadFixtures().map((f) => f.name)).toEqual(['docker-host-topos1.rules', 'upstream-nft-save-0010.rules']);
  });

  it('should make every table present for the lab, where the dump leaves some out', () => {
    const rs = everyTablePresent(parseSave(loadFixtures()[0]?.text ?? ''));
    expect(Object.values(rs.tables).every((t) => t.absent !== true)).toBe(true);
  });
});

describe.skipIf(!env.ok)('fixtures on the kernel', () => {
  let lab: Lab;
  beforeAll(() => {
    lab = Lab.create();
  });
  afterAll(() => {
    lab.destroy();
  });

  for (const f of loadFixtures()) {
    it(`should re-save ${f.name} exactly as netsim formats it`, () => {
      const r = fixtureFormatCheck(f);
      expect(r.loadError).toBeNull();
      expect(r.unexplained).toEqual([]);
    });

    it(`should agree with the kernel on 30 generated packets through ${f.name}`, () => {
      const b = fixtureBehaviour(lab, f, { seed: 20260105, runs: 30 });
      const bad = b.results.filter((x) => x.result.diffs.length > 0);
      const undecided = b.results.filter((x) => x.result.undecided !== null).length;
      console.log(`fixture ${f.name}: ${b.results.length - bad.length - undecided} agreed, ${undecided} undecided (modules netsim does not evaluate), ${bad.length} disagreed`);
      expect(bad.map((x) => formatDisagreement(x.case, x.result, `fixture ${f.name}`))).toEqual([]);
      // Undecided packets compare nothing: too many and the fixture proves too little.
      expect(undecided).toBeLessThanOrEqual(MAX_UNDECIDED_PER_30);
    });
  }
});
