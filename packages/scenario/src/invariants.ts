/**
 * Scenario files name invariants by kind; this turns each into the `@netsim/sim` built-in it
 * stands for, and tells the name the invariant reports itself by (what `expect.invariant` and
 * the replay table show).
 */
import { annotationsAgreeWithRules, chainNeverEmpty, hasTarget, noDuplicateRules, noStaleDnat, probesSucceed, type InvariantSource } from '@netsim/sim';
import type { InvariantKind, InvariantSpec } from './model.ts';


/** The name the invariant reports in violations (`no stale DNAT`, `FLANNEL-POSTRTG never empty once programmed`). */
export function invariantName(spec: { readonly kind: InvariantKind; readonly chain?: string | undefined; readonly name?: string | undefined }): string {
  switch (spec.kind) {
    case 'no-stale-dnat':
      return 'no stale DNAT';
    case 'chain-never-empty':
      return spec.name ?? `${spec.chain ?? '?'} never empty once programmed`;
    case 'annotations-agree':
      return 'annotations agree with rules';
    case 'no-duplicate-rules':
      return 'no duplicate rules';
    case 'probes-succeed':
      return 'probes succeed';
  }
}

/**
 * The `@netsim/sim` invariant for a spec.
 *
 * @example
 * ```ts
 * const inv = buildInvariant({ kind: 'no-stale-dnat', chains: ['ANTREA-NODE-PORT-LOCAL'] });
 * await runScenario(file.scenario, { controllers, invariants: [inv] });
 * ```
 */
export function buildInvariant(spec: InvariantSpec): InvariantSource {
  switch (spec.kind) {
    case 'no-stale-dnat':
      return noStaleDnat({ chains: spec.chains, ...(spec.table !== undefined ? { table: spec.table } : {}), ...(spec.settleMs !== undefined ? { settleMs: spec.settleMs } : {}) });
    case 'chain-never-empty':
      return chainNeverEmpty({
        chain: spec.chain,
        ...(spec.table !== undefined ? { table: spec.table } : {}),
        ...(spec.requiredTarget !== undefined ? { required: hasTarget(spec.requiredTarget) } : {}),
        ...(spec.name !== undefined ? { name: spec.name } : {}),
      });
    case 'annotations-agree':
      return annotationsAgreeWithRules({ annotation: spec.annotation, chain: spec.chain, ...(spec.table !== undefined ? { table: spec.table } : {}), ...(spec.settleMs !== undefined ? { settleMs: spec.settleMs } : {}) });
    case 'no-duplicate-rules':
      return noDuplicateRules({ ...(spec.table !== undefined ? { table: spec.table } : {}), ...(spec.chains !== undefined ? { chains: spec.chains } : {}), ...(spec.settleMs !== undefined ? { settleMs: spec.settleMs } : {}) });
    case 'probes-succeed':
      return probesSucceed(spec.settleMs !== undefined ? { settleMs: spec.settleMs } : {});
  }
}
