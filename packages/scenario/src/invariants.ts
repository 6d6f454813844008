/**
 * Scenario files name invariants by kind; this turns each into the `@netsim/sim` built-in it
 * stands for (or a user's invariant registered by name), and tells the name the invariant reports
 * itself by (what `expect.invariant` and the replay table show).
 */
import {
  AGENTS_LIVE,
  RESYNC_FIXPOINT,
  DATAPATH_PROBES,
  MAPPINGS_SERVED,
  NO_DUPLICATE_RULES,
  NO_STALE_DNAT,
  OWNED_CHAINS,
  agentsStayLive,
  resyncChangesNothing,
  annotationsAgreeWithRules,
  chainNeverEmpty,
  datapathProbes,
  hasTarget,
  noDuplicateRules,
  noDuplicateRulesAnywhere,
  noStaleDnat,
  ownedChainsStayProgrammed,
  probesSucceed,
  publishedMappingsServed,
  staleDnatAnywhere,
  type Invariant,
  type InvariantSource,
  type JsonObject,
} from '@netsim/sim';
import type { BuiltinCheck, InvariantKind, InvariantSpec } from './model.ts';

/**
 * Users' invariants by the name a scenario file's `kind: custom` entry gives: an invariant, a
 * factory of one per run, or a factory that takes the entry's `options` (`(options) => invariant`,
 * called once per run with `{}` when the entry gives none).
 */
export type InvariantRegistry = { readonly [name: string]: InvariantSource | ((options: JsonObject) => Invariant) };

const BUILTIN_NAMES: { readonly [C in BuiltinCheck]: string } = {
  'stale-dnat': NO_STALE_DNAT,
  'duplicate-rules': NO_DUPLICATE_RULES,
  'owned-chains': OWNED_CHAINS,
  'mappings-served': MAPPINGS_SERVED,
  'datapath-probes': DATAPATH_PROBES,
  'agents-live': AGENTS_LIVE,
  'resync-fixpoint': RESYNC_FIXPOINT,
};

/** Every built-in check, as scenario invariant specs: what `netsim fuzz` checks by default. */
export const BUILTIN_SPECS: readonly InvariantSpec[] = (Object.keys(BUILTIN_NAMES) as BuiltinCheck[]).map((check) => ({ kind: 'builtin', check }));

/** The name the invariant reports in violations (`no stale DNAT`, `FLANNEL-POSTRTG never empty once programmed`). */
export function invariantName(spec: { readonly kind: InvariantKind; readonly chain?: string | undefined; readonly name?: string | undefined; readonly check?: BuiltinCheck | undefined }): string {
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
    case 'builtin':
      return spec.check !== undefined ? BUILTIN_NAMES[spec.check] : '?';
    case 'custom':
      return spec.name ?? '?';
  }
}

/**
 * The `@netsim/sim` invariant for a spec; `custom` ones come from `registry`.
 *
 * @example
 * ```ts
 * const inv = buildInvariant({ kind: 'no-stale-dnat', chains: ['ANTREA-NODE-PORT-LOCAL'] });
 * await runScenario(file.scenario, { controllers, invariants: [inv] });
 * ```
 */
export function buildInvariant(spec: InvariantSpec, registry: InvariantRegistry = {}): InvariantSource {
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
    case 'builtin': {
      const s = spec.settleMs !== undefined ? { settleMs: spec.settleMs } : {};
      switch (spec.check) {
        case 'stale-dnat':
          return staleDnatAnywhere(s);
        case 'duplicate-rules':
          return noDuplicateRulesAnywhere(s);
        case 'owned-chains':
          return ownedChainsStayProgrammed();
        case 'mappings-served':
          return publishedMappingsServed(s);
        case 'datapath-probes':
          return datapathProbes(s);
        case 'agents-live':
          return agentsStayLive(s);
        case 'resync-fixpoint':
          return resyncChangesNothing(s);
      }
      break;
    }
    case 'custom': {
      const src = registry[spec.name];
      if (src === undefined) throw new Error(`invariant "${spec.name}" is not registered (a --controllers module registers invariants by name in its "invariants" export; registered: ${Object.keys(registry).sort().join(', ') || 'none'})`);
      // The name in the file is the name the invariant reports, whatever the module called it.
      const options = spec.options ?? {};
      return () => {
        const inv = typeof src === 'function' ? src(options) : src;
        return { ...inv, name: spec.name, check: (v) => inv.check(v) };
      };
    }
  }
}
