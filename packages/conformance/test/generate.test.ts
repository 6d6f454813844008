import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BUILTIN_CHAINS, TABLE_NAMES, type Ruleset } from '@netsim/netfilter';
import { LOCAL, nfCaseArb, rulesetArb } from '../src/generate.ts';
import { renderRestore } from '../src/render.ts';

function jumps(rs: Ruleset): { table: string; from: string; to: string }[] {
  const out: { table: string; from: string; to: string }[] = [];
  for (const t of TABLE_NAMES) {
    for (const [name, chain] of Object.entries(rs.tables[t].chains)) {
      for (const r of chain.rules) if (r.target?.kind === 'jump' || r.target?.kind === 'goto') out.push({ table: t, from: name, to: r.target.chain });
    }
  }
  return out;
}

describe('generate', () => {
  it('should give the same cases for the same seed', () => {
    const a = fc.sample(nfCaseArb(), { seed: 42, numRuns: 20 });
    const b = fc.sample(nfCaseArb(), { seed: 42, numRuns: 20 });
    expect(a.map((c) => renderRestore(c.ruleset))).toEqual(b.map((c) => renderRestore(c.ruleset)));
    expect(a.map((c) => c.injection)).toEqual(b.map((c) => c.injection));
  });

  it('should only jump to existing user chains that come later (no loops)', () => {
    for (const c of fc.sample(nfCaseArb(), { seed: 7, numRuns: 200 })) {
      for (const j of jumps(c.ruleset)) {
        const table = c.ruleset.tables[j.table as 'filter'];
        expect(table.chains[j.to]).toBeDefined();
        expect((BUILTIN_CHAINS[j.table as 'filter'] as readonly string[]).includes(j.to)).toBe(false);
        if (j.from.startsWith('NCF-')) expect(j.to > j.from).toBe(true);
      }
    }
  });

  it('should keep the reject profile free of NAT and of rules on the paths its answers take', () => {
    for (const rs of fc.sample(rulesetArb('reject'), { seed: 3, numRuns: 100 })) {
      for (const chain of Object.values(rs.tables.nat.chains)) expect(chain.rules).toEqual([]);
      for (const t of TABLE_NAMES) {
        for (const h of ['OUTPUT', 'POSTROUTING']) expect(rs.tables[t].chains[h]?.rules ?? []).toEqual([]);
      }
    }
  });

  it('should never send TCP to the node itself nor NAT to the node', () => {
    for (const c of fc.sample(nfCaseArb(), { seed: 11, numRuns: 300 })) {
      if (c.injection.packet.proto === 6) expect(LOCAL).not.toContain(c.injection.packet.dst);
      for (const t of TABLE_NAMES) {
        for (const chain of Object.values(c.ruleset.tables[t].chains)) {
          for (const r of chain.rules) if (r.target?.kind === 'DNAT') expect(LOCAL).not.toContain(r.target.to?.minIp);
        }
      }
    }
  });

  it('should render every generated ruleset', () => {
    for (const c of fc.sample(nfCaseArb(), { seed: 5, numRuns: 200 })) expect(renderRestore(c.ruleset)).toMatch(/^\*raw\n/);
  });
});
