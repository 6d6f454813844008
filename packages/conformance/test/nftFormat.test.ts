/**
 * The nft format campaign: generated inputs are deterministic and cover every broken-input kind;
 * against the real nft 1.0.6 (root, `ip netns`, nft installed — required when CI=true) a bounded
 * campaign prints and fails exactly as nft does. Longer campaigns: `pnpm conformance:nft`.
 */
import { describe, expect, inject, it } from 'vitest';
import { NFT_MUTATIONS, nftCase } from '../src/nftGenerate.ts';
import { KNOWN_NFT_DIFFERENCES, knownNftDifference, runNftFormatCampaign, type NftCaseResult } from '../src/nftFormat.ts';
import { compareNftRuns, formatNftDifference, nftRelease, runNetsimNft } from '../src/nftLive.ts';

const env = inject('conformanceEnv');
const release = env.ok ? nftRelease() : undefined;
const NFT_SEED = 1;
const NFT_RUNS = 50;

describe('generated nft inputs', () => {
  it('should derive every case from its seed alone', () => {
    expect(nftCase(17)).toEqual(nftCase(17));
    expect(nftCase(17)).not.toEqual(nftCase(18));
  });

  it('should make every kind of broken input, and valid ones in both forms and families', () => {
    const seen = new Set<string>();
    let valid = 0;
    const shapes = new Set<string>();
    for (let s = 1; s <= 600; s++) {
      const c = nftCase(s);
      if (c.mutation !== undefined) seen.add(c.mutation);
      else valid++;
      const text = c.files[0]?.text ?? '';
      shapes.add(`${text.startsWith('add table') ? 'commands' : 'block'}:${/(?:^|\n)(?:add )?table (ip|inet)/.exec(text)?.[1] ?? '?'}`);
    }
    expect([...seen].sort()).toEqual([...NFT_MUTATIONS].sort());
    expect(valid).toBeGreaterThan(300);
    expect([...shapes].sort()).toEqual(['block:inet', 'block:ip', 'commands:inet', 'commands:ip']);
  });

  it('should never crash netsim: every case applies or fails with nft-style messages', () => {
    for (let s = 1; s <= 300; s++) {
      const c = nftCase(s);
      const run = runNetsimNft(c.files);
      for (const step of run.steps) if (step.rc !== 0) expect(step.stderr).toMatch(/^[^\n]+:\d+:\d+-\d+: Error: /);
    }
  });

  it('should recognise a known difference only by what the real nft printed', () => {
    const c = nftCase(1);
    const base: NftCaseResult = { case: c, applied: true, differences: [] };
    expect(knownNftDifference(base)).toBeUndefined();
    const raw = { ...base, differences: [{ where: 'nft list ruleset', real: '\t\t@th,16,32 0x1604b3 meta l4proto udp drop\n', netsim: '\t\tth dport 22 udp length 1203 drop\n' }] };
    expect(knownNftDifference(raw)?.id).toBe('nft-raw-merged-payload');
    const other = { ...base, differences: [{ where: 'nft list ruleset', real: 'tcp dport 22\n', netsim: 'tcp dport 23\n' }] };
    expect(knownNftDifference(other)).toBeUndefined();
    expect(KNOWN_NFT_DIFFERENCES.map((k) => k.id)).toEqual(['nft-raw-merged-payload']);
  });

  it('should show a difference line by line', () => {
    const files = [{ name: 'a.nft', text: 'table ip t {\n}\n' }];
    const d = compareNftRuns(files, { steps: [{ rc: 0, stderr: '' }], listing: 'table ip t {\n}\n' }, { steps: [{ rc: 0, stderr: '' }], listing: 'table ip u {\n}\n' });
    expect(d.map(formatNftDifference)).toEqual(['nft list ruleset:\n- table ip t {\n+ table ip u {\n  }\n  \n']);
  });
});

describe.runIf(env.ok && process.env['CI'] === 'true')('nft in CI', () => {
  it('should have nft 1.0.6 installed (Debian 12 nftables), which the format campaign needs', () => {
    expect(release).toBe('1.0.6');
  });
});

describe.skipIf(!env.ok || release !== '1.0.6')('nft format campaign against the real nft 1.0.6', () => {
  it(`should print and fail exactly as nft does for ${NFT_RUNS} generated cases`, { timeout: 180_000 }, () => {
    const r = runNftFormatCampaign({ runs: NFT_RUNS, seed: NFT_SEED });
    const fresh = r.disagreements.filter((d) => knownNftDifference(d) === undefined);
    expect(fresh.map((d) => `case ${d.case.seed}\n${d.differences.map(formatNftDifference).join('')}`)).toEqual([]);
    // Both kinds of outcome are exercised.
    expect(r.applied).toBeGreaterThan(5);
    expect(r.failed).toBeGreaterThan(5);
  });
});
