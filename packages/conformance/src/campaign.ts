/**
 * Many cases from one seed: generate, run each on the kernel and with netsim, classify every
 * disagreement (known, with its reason, or new), and shrink each new one to a small case that
 * still disagrees the same way. The i-th case of a seed is always the same case, so
 * `--seed S --replay I` runs it again alone.
 */
import fc from 'fast-check';
import { nfCaseArb, PROFILES, type NfCase, type Profile } from './generate.ts';
import { knownCandidates, type KnownDisagreement } from './known.ts';
import type { Lab } from './lab.ts';
import { renderRestore } from './render.ts';
import { runNfCase, type CaseResult } from './runner.ts';

export type Verdict =
  | { readonly kind: 'agree' }
  /** netsim cannot evaluate something in the case (the generator never makes such cases). */
  | { readonly kind: 'undecided'; readonly reason: string }
  /** `confirmed`: iptables-legacy agreed with netsim on the same case. */
  | { readonly kind: 'known'; readonly known: KnownDisagreement; readonly confirmed: boolean }
  | { readonly kind: 'new' };

export interface Checked {
  readonly result: CaseResult;
  readonly verdict: Verdict;
}

/** Runs a case and classifies the outcome (see `known.ts`). `legacy` is an iptables-legacy lab, if any. */
export function checkCase(lab: Lab, c: NfCase, legacy?: Lab): Checked {
  const result = runNfCase(lab, c);
  if (result.undecided !== null) return { result, verdict: { kind: 'undecided', reason: result.undecided } };
  if (result.diffs.length === 0) return { result, verdict: { kind: 'agree' } };
  const candidates = knownCandidates(c, result.diffs);
  if (candidates.length === 0) return { result, verdict: { kind: 'new' } };
  if (legacy === undefined) return { result, verdict: { kind: 'known', known: candidates[0] as KnownDisagreement, confirmed: false } };
  const onLegacy = runNfCase(legacy, c);
  const known = candidates.find((k) => k.legacyAgrees === (onLegacy.diffs.length === 0 && onLegacy.undecided === null));
  return { result, verdict: known === undefined ? { kind: 'new' } : { kind: 'known', known, confirmed: true } };
}

export interface Disagreement {
  readonly index: number;
  readonly case: NfCase;
  readonly checked: Checked;
  /** The smallest case found that still disagrees in a new way (new disagreements only). */
  readonly shrunk?: { readonly case: NfCase; readonly checked: Checked };
}

export interface CampaignOptions {
  readonly seed: number;
  readonly runs: number;
  readonly profiles?: readonly Profile[];
  /** Shrink new disagreements (default true); at most `shrinkBudget` extra cases each (default 200). */
  readonly shrink?: boolean;
  readonly shrinkBudget?: number;
  /** Run only this case index of the seed. */
  readonly replay?: number;
  /** Called after each case (for progress output). */
  readonly onCase?: (index: number, checked: Checked) => void;
}

export interface CampaignResult {
  readonly seed: number;
  readonly runs: number;
  readonly agreed: number;
  /** Cases netsim could not decide (it does not evaluate something in them), by index. */
  readonly undecided: readonly number[];
  /** Every disagreement, known and new, in case order. */
  readonly disagreements: readonly Disagreement[];
}

/** The cases of a seed, in order (the same list every time). */
export function campaignCases(seed: number, runs: number, profiles: readonly Profile[] = PROFILES): NfCase[] {
  return fc.sample(nfCaseArb(profiles), { seed, numRuns: runs });
}

/**
 * Replays case `index` of `seed` with fast-check and shrinks it while it still disagrees in a new
 * way. Bounded by `budget` case runs: past it every candidate counts as agreeing, which ends the
 * search at the smallest case found so far.
 */
export function shrinkCase(lab: Lab, opts: { seed: number; index: number; profiles: readonly Profile[]; budget: number; original: NfCase; legacy?: Lab }): NfCase | undefined {
  const wanted = renderRestore(opts.original.ruleset) + JSON.stringify(opts.original.injection);
  let runs = 0;
  let replayed = false;
  const out = fc.check(
    fc.property(nfCaseArb(opts.profiles), (c) => {
      runs++;
      if (runs === 1) {
        replayed = renderRestore(c.ruleset) + JSON.stringify(c.injection) === wanted;
        if (!replayed) return true;
      }
      if (runs > opts.budget) return true;
      return checkCase(lab, c, opts.legacy).verdict.kind !== 'new';
    }),
    { seed: opts.seed, path: String(opts.index) },
  );
  if (!replayed || !out.failed || out.counterexample === null) return undefined;
  return out.counterexample[0];
}

/** Runs a campaign in `lab` (and `legacy`, an iptables-legacy lab, to confirm known disagreements). */
export function runCampaign(lab: Lab, opts: CampaignOptions, legacy?: Lab): CampaignResult {
  const profiles = opts.profiles ?? PROFILES;
  const total = opts.replay === undefined ? opts.runs : opts.replay + 1;
  const cases = campaignCases(opts.seed, total, profiles);
  const disagreements: Disagreement[] = [];
  const undecided: number[] = [];
  let agreed = 0;
  let ran = 0;
  cases.forEach((c, index) => {
    if (opts.replay !== undefined && index !== opts.replay) return;
    const checked = checkCase(lab, c, legacy);
    ran++;
    opts.onCase?.(index, checked);
    if (checked.verdict.kind === 'agree') {
      agreed++;
      return;
    }
    if (checked.verdict.kind === 'undecided') {
      undecided.push(index);
      return;
    }
    let shrunk: Disagreement['shrunk'];
    if (checked.verdict.kind === 'new' && opts.shrink !== false) {
      const small = shrinkCase(lab, { seed: opts.seed, index, profiles, budget: opts.shrinkBudget ?? 200, original: c, ...(legacy === undefined ? {} : { legacy }) });
      if (small !== undefined) shrunk = { case: small, checked: checkCase(lab, small, legacy) };
    }
    disagreements.push({ index, case: c, checked, ...(shrunk === undefined ? {} : { shrunk }) });
  });
  return { seed: opts.seed, runs: ran, agreed, undecided, disagreements };
}
