import { chainNeverEmpty, hasTarget, type InvariantSource } from '@netsim/sim';
import { MASQ_CHAIN } from '../../src/index.ts';

export const MASQ_INVARIANT_NAME = `${MASQ_CHAIN} never empty once programmed`;

/** The built-in invariant that watches the masquerade chain (strict: one step empty is a violation). */
export const masqInvariants: readonly InvariantSource[] = [chainNeverEmpty({ chain: MASQ_CHAIN, required: hasTarget('MASQUERADE') })];

/** Probe results as the trace reports them (each change of a probe's state). */
export function probeChanges(events: readonly { readonly type: string; readonly t: number; readonly [k: string]: unknown }[]): string[] {
  return events.filter((e) => e.type === 'probe.result').map((e) => `t=${e.t} ${String(e['ok'])} ${typeof e['outcome'] === 'string' ? e['outcome'] : ''}`);
}
