/**
 * The nft format campaign: generated `nft -f` inputs ({@link nftCase}) through the real nft and
 * through netsim, compared byte for byte (every file's exit status and stderr, then `nft list
 * ruleset`). One network namespace serves the whole campaign; each case starts from an empty
 * ruleset.
 */
import { nftCase, type NftCase } from './nftGenerate.ts';
import { compareNftRuns, nftNamespace, runNetsimNft, runRealNft, type NftDifference } from './nftLive.ts';

export interface NftCaseResult {
  readonly case: NftCase;
  readonly differences: readonly NftDifference[];
  /** Whether the real nft accepted every file. */
  readonly applied: boolean;
}

export interface NftCampaignResult {
  readonly seed: number;
  readonly runs: number;
  /** Cases where the real nft applied every file. */
  readonly applied: number;
  /** Cases where a file failed (and netsim must fail the same way). */
  readonly failed: number;
  readonly agreed: number;
  readonly disagreements: readonly NftCaseResult[];
}

/** One case through both sides. */
export function checkNftCase(c: NftCase, netns?: string): NftCaseResult {
  const real = runRealNft(c.files, netns !== undefined ? { netns } : {});
  const sim = runNetsimNft(c.files);
  return { case: c, differences: compareNftRuns(c.files, real, sim), applied: real.steps.every((s) => s.rc === 0) };
}

/**
 * Cases `seed`, `seed + 1`, … `seed + runs - 1`, each compared; `onCase` sees each result (for
 * progress output).
 *
 * @example
 * const r = runNftFormatCampaign({ runs: 50, seed: 1 });
 * console.log(`${r.agreed}/${r.runs} identical`);
 */
export function runNftFormatCampaign(opts: { readonly runs: number; readonly seed: number; readonly onCase?: (r: NftCaseResult, i: number) => void }): NftCampaignResult {
  const ns = nftNamespace();
  let applied = 0;
  let agreed = 0;
  const disagreements: NftCaseResult[] = [];
  try {
    for (let i = 0; i < opts.runs; i++) {
      const r = checkNftCase(nftCase(opts.seed + i), ns.name);
      if (r.applied) applied++;
      if (r.differences.length === 0) agreed++;
      else disagreements.push(r);
      opts.onCase?.(r, i);
    }
  } finally {
    ns.close();
  }
  return { seed: opts.seed, runs: opts.runs, applied, failed: opts.runs - applied, agreed, disagreements };
}

/** A way the real nft and netsim differ on purpose or knowingly, recognised by what the real side printed. */
export interface KnownNftDifference {
  readonly id: string;
  readonly why: string;
  readonly matches: (d: NftDifference) => boolean;
}

export const KNOWN_NFT_DIFFERENCES: readonly KnownNftDifference[] = [
  {
    id: 'nft-raw-merged-payload',
    why: 'nft merges an equality on a `th` port with one on an adjacent field of another header (`th dport 22 … udp length 60`) and lists the result as a raw payload match (`@th,16,32 0x16003c`); netsim lists the two matches as written.',
    matches: (d) => d.where === 'nft list ruleset' && /@th,\d+,\d+ /.test(d.real),
  },
];

/** The known difference that explains every difference of a case, if there is one. */
export function knownNftDifference(r: NftCaseResult): KnownNftDifference | undefined {
  if (r.differences.length === 0) return undefined;
  return KNOWN_NFT_DIFFERENCES.find((k) => r.differences.every((d) => k.matches(d)));
}
