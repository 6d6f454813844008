/**
 * The default seed of a conformance campaign run without `--seed`: the one wall-clock read of the
 * campaign CLIs. Each prints it first and derives every case from it, so `--seed` replays the run;
 * nothing else in a campaign reads the clock.
 */
export function defaultCampaignSeed(): number {
  return Date.now() % 1_000_000_007; // eslint-disable-line no-restricted-properties -- tidy-allow: a campaign's default seed, printed first
}
