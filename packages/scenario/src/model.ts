/**
 * A scenario file as data: the engine's {@link SimScenario} plus what a file adds — a name, the
 * invariants to check (by kind, with options) and the expected outcome.
 */
import type { TableName } from '@netsim/netfilter';
import type { JsonObject, SimScenario } from '@netsim/sim';

/** A built-in invariant of `@netsim/sim`, by kind, with its options (durations in ms). */
export type InvariantSpec =
  | { readonly kind: 'no-stale-dnat'; readonly chains: readonly string[]; readonly table?: TableName; readonly settleMs?: number }
  | { readonly kind: 'chain-never-empty'; readonly chain: string; readonly table?: TableName; readonly requiredTarget?: TargetKindName; readonly name?: string }
  | { readonly kind: 'annotations-agree'; readonly annotation: string; readonly chain: string; readonly table?: TableName; readonly settleMs?: number }
  | { readonly kind: 'no-duplicate-rules'; readonly table?: TableName; readonly chains?: readonly string[]; readonly settleMs?: number }
  | { readonly kind: 'probes-succeed'; readonly settleMs?: number }
  /** A built-in, controller-agnostic check, defined from the world and the controllers' declarations. */
  | { readonly kind: 'builtin'; readonly check: BuiltinCheck; readonly settleMs?: number }
  /** An invariant a `--controllers` module registers by name (its `invariants` export). */
  /** A user's invariant registered by name; `options` go to its factory (`(options) => invariant`). */
  | { readonly kind: 'custom'; readonly name: string; readonly options?: JsonObject };

/** The built-in checks by their file names. */
export type BuiltinCheck = 'stale-dnat' | 'duplicate-rules' | 'owned-chains' | 'mappings-served' | 'datapath-probes' | 'agents-live' | 'resync-fixpoint';

/** Rule targets a chain may be required to hold (`requiredTarget`). */
export type TargetKindName = 'ACCEPT' | 'DROP' | 'RETURN' | 'REJECT' | 'DNAT' | 'SNAT' | 'MASQUERADE' | 'MARK' | 'CONNMARK' | 'LOG' | 'NFLOG' | 'NOTRACK' | 'CT' | 'TRACE';

export type InvariantKind = InvariantSpec['kind'];

/**
 * What must happen: every invariant holds to the horizon (`ok`), or the named invariant is
 * violated (optionally within a time window, with a message containing a piece of text), or the
 * run ends with a finding of that kind (a controller error, a livelock); and optionally, lines the
 * story must contain (what happened on the way, such as a probe failing while an agent restarts).
 */
export type Expectation = (
  | { readonly outcome: 'ok' }
  | { readonly outcome: 'violation'; readonly invariant: string; readonly betweenMs?: readonly [number, number]; readonly message?: string }
  | { readonly outcome: 'finding'; readonly kind: string; readonly betweenMs?: readonly [number, number]; readonly message?: string }
) & {
  /** Texts that must each appear in some line of the run's story (e.g. a probe failing during a window). */
  readonly storyIncludes?: readonly string[];
  /** Texts that must appear in no line of the story (e.g. a probe that must never fail). */
  readonly storyExcludes?: readonly string[];
};

/** A loaded scenario file. */
export interface ScenarioFile {
  /** The scenario's name (a DNS-1123 label, usually the file name without `.yaml`). */
  readonly name: string;
  readonly description?: string;
  /** What the engine runs. */
  readonly scenario: SimScenario;
  readonly invariants: readonly InvariantSpec[];
  readonly expect: Expectation;
}
