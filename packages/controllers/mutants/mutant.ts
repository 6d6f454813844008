/**
 * What a one-bug variant of a reference controller is: the fixed controller with exactly one
 * flaw switched on, the bug class it stands for, and the tracker issue that class comes from.
 */
import type { ControllerRegistry } from '@netsim/sim';

/** A controller family, as `netsim fuzz` picks its default campaign (the name before `:`). */
export type MutantFamily = 'npl' | 'flannel' | 'kube-proxy';

/** One variant of the mutation suite. */
export interface Mutant {
  /** The registry name, `<family>:<flaw>`: `netsim fuzz --controller` takes it. */
  readonly name: string;
  readonly family: MutantFamily;
  /** The flaw switched on in the fixed controller. */
  readonly flaw: string;
  /** The bug, in one sentence. */
  readonly bug: string;
  /** The tracker issue the bug class comes from, as `owner/repo#number`. */
  readonly issue: string;
  /** That issue's title. */
  readonly issueTitle: string;
  readonly create: ControllerRegistry[string];
}
