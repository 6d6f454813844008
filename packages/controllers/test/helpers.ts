/**
 * Shared fixtures for the controller tests: the NPL-enabled Service, the invariants each
 * controller is checked against, and small readers of a node's rules.
 */
import { formatSave, type Ruleset } from '@netsim/netfilter';
import { annotationsAgreeWithRules, noDuplicateRules, noStaleDnat, type InvariantSource, type ServiceSpec } from '@netsim/sim';
import { NPL_ANNOTATION, NPL_CHAIN, NPL_ENABLED_ANNOTATION } from '../src/index.ts';

/** Container ports 8080..8087/TCP. */
export const EIGHT_PORTS = Array.from({ length: 8 }, (_, i) => ({ port: 8080 + i, protocol: 'TCP' as const }));

/** A ClusterIP Service with NodePortLocal enabled, selecting `app: web`, targeting 8080..8087. */
export const nplService: ServiceSpec = {
  name: 'web',
  selector: { app: 'web' },
  annotations: { [NPL_ENABLED_ANNOTATION]: 'true' },
  ports: EIGHT_PORTS.map((p, i) => ({ name: `p${i}`, port: 80 + i, targetPort: p.port, protocol: p.protocol })),
};

/** The built-in invariants that watch NodePortLocal. */
export const nplInvariants: readonly InvariantSource[] = [
  noStaleDnat({ chains: [NPL_CHAIN] }),
  annotationsAgreeWithRules({ annotation: NPL_ANNOTATION, chain: NPL_CHAIN }),
  noDuplicateRules({ chains: [NPL_CHAIN] }),
];

/** The `-A` lines of one chain in `iptables-save` form. */
export function chainLines(rs: Ruleset, table: 'nat' | 'filter', chain: string): string[] {
  return formatSave(rs)
    .split('\n')
    .filter((l) => l.startsWith(`-A ${chain} `));
}

/** The argv of an `iptables` trace event, or '' for other events. */
export function argvOf(e: { readonly type: string; readonly [k: string]: unknown }): string {
  const v = e['argv'];
  return e.type === 'iptables.exec' && typeof v === 'string' ? v : '';
}

/** A string field of a trace event ('' when absent or not a string). */
export function fieldOf(e: { readonly [k: string]: unknown } | undefined, name: string): string {
  const v = e?.[name];
  return typeof v === 'string' ? v : '';
}
