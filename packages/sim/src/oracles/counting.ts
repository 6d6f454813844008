/** Invariants that count what they examined, so a campaign can tell one that checked nothing. */
import type { Invariant } from '../invariants.ts';

/** An invariant with a count of the things (rules, chains, mappings, agents) it looked at in this run. */
export interface CountingInvariant extends Invariant {
  examined(): number;
}

/** Whether an invariant counts what it examined. */
export function isCounting(inv: Invariant): inv is CountingInvariant {
  return typeof (inv as Partial<CountingInvariant>).examined === 'function';
}
