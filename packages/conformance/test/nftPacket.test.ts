import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { emptyRuleset, tryNftApply } from '@netsim/nftables';
import { which } from '../src/exec.ts';
import { Lab } from '../src/lab.ts';
import { classifyNftCase, formatNftDisagreement, nftCounters, nftPacketCaseArb, runNftPacketCampaign, runNftPacketCase } from '../src/nftPacket.ts';
import { parseIpv4 as ip } from '@netsim/netfilter';

const env = inject('conformanceEnv');
const NFT_RUNS = 40;
const NFT_SEED = 20261202;
const nftMissing = env.ok && which('nft') === undefined;

describe('nft packets: building blocks', () => {
  it("should read every rule's counter from an nft listing, numbered per chain", () => {
    const listing = 'table ip ncf {\n\tchain b0 {\n\t\ttype filter hook input priority filter; policy accept;\n\t\ttcp dport 22 counter packets 2 bytes 120 accept\n\t\tcounter packets 0 bytes 0\n\t}\n\tchain sub1 {\n\t\tcounter packets 1 bytes 60 return\n\t}\n}\n';
    expect(nftCounters(listing)).toEqual({ 'nft b0 #1': 2, 'nft sub1 #1': 1 });
  });

  it('should generate rulesets netsim loads, each rule counting, with base chains at several hooks and priorities', () => {
    const cases = fc.sample(nftPacketCaseArb(), { seed: NFT_SEED, numRuns: 60 });
    const loaded = cases.filter((c) => tryNftApply(emptyRuleset(), c.nft).ok);
    expect(loaded.length).toBeGreaterThan(40);
    expect(new Set(cases.flatMap((c) => [...c.nft.matchAll(/hook (\w+) priority (-?\d+|raw)/g)].map((m) => `${m[1]} ${m[2]}`))).size).toBeGreaterThan(15);
    expect(cases.some((c) => c.nft.includes('type nat hook prerouting priority -150'))).toBe(true);
    expect(cases.every((c) => c.nft.split('\n').filter((l) => /^\t\t(?!type )/.test(l)).every((l) => l.includes(' counter') || l.startsWith('\t\tcounter')))).toBe(true);
  });
});

describe.skipIf(!env.ok)('nft packets: @netsim/kernel against the kernel (nft -f)', () => {
  let lab: Lab;
  beforeAll(() => {
    // CI installs nftables: there a missing nft fails the run instead of skipping it.
    if (nftMissing && process.env['CI'] === 'true') throw new Error('@netsim/conformance: nft is required in CI (CI=true) but missing (apt-get install nftables)');
    if (!nftMissing) lab = Lab.create({ pinConntrack: false });
  });
  afterAll(() => {
    lab?.destroy();
  });

  it.skipIf(nftMissing)('should run an nft nat chain at the NAT core priority, as the kernel does', () => {
    const nft = `table ip ncf {
	chain natpre {
		type nat hook prerouting priority -150; policy accept;
		tcp dport 80 counter dnat to 198.18.0.5:8080
	}
	chain early {
		type filter hook prerouting priority -120; policy accept;
		ip daddr 198.18.0.5 counter
		ip daddr 198.18.3.3 counter
	}
	chain late {
		type filter hook prerouting priority -90; policy accept;
		ip daddr 198.18.0.5 counter
		ip daddr 198.18.3.3 counter
	}
}
`;
    const packet = { src: ip('192.0.2.2'), dst: ip('198.18.3.3'), proto: 6 as const, sport: 40000, dport: 80, tcpFlags: 2, icmpType: 0, icmpCode: 0, icmpId: 0 };
    const r = runNftPacketCase(lab, { profile: 'forward', nft, injection: { kind: 'ingress', peer: 'client', packet } });
    expect(r.kind === 'ran' ? r.diffs : r).toEqual([]);
    if (r.kind === 'ran') expect(r.steps[0]?.kernel.counters).toEqual({ 'nft early #2': 1, 'nft late #1': 1, 'nft natpre #1': 1 });
  });

  it.skipIf(nftMissing)(`should agree with the kernel on ${NFT_RUNS} generated rulesets and flows (seed ${NFT_SEED})`, () => {
    const r = runNftPacketCampaign(lab, { seed: NFT_SEED, runs: NFT_RUNS });
    const report = r.disagreements.map((d) => formatNftDisagreement(d.case, d.result, `pnpm conformance:nft-packets --seed ${NFT_SEED} --replay ${d.index}`)).join('\n\n');
    expect(report).toBe('');
    expect(r.undecided).toEqual([]);
    expect(r.agreed - r.refused).toBeGreaterThan(NFT_RUNS / 2);
    for (const d of r.disagreements) expect(classifyNftCase(d.result).kind).toBe('new');
  });
});
