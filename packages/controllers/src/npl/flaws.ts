/**
 * One-bug switches on the fixed NodePortLocal agent. The public factory never sets one; the
 * mutation suite (`packages/controllers/mutants/`) builds the fixed agent with exactly one, to
 * prove that the default campaign catches bug classes nobody wrote a scenario for. Each switch
 * sits at the one place the bug lives, and its doc in the suite cites the tracker issue.
 */
export const NPL_FLAWS = [
  'cleanup-stops-early',
  'cached-ip-reused',
  'tombstone-dropped',
  'tombstone-crash',
  'annotation-not-removed',
  'annotation-not-updated',
  'udp-ignored',
  'no-retry',
  'retry-without-backoff',
  'flush-before-refill',
  'duplicate-jumps',
  'port-update-ignored',
  'selector-update-ignored',
  'named-port-ignored',
] as const;

/** A NodePortLocal flaw (see {@link NPL_FLAWS}). */
export type NplFlaw = (typeof NPL_FLAWS)[number];
