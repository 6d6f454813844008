/**
 * Each built-in invariant catches its class of bug, found by property search and shrunk, and a
 * correct controller passes them all under churn, watch faults, restarts and iptables faults.
 */
import { describe, expect, it } from 'vitest';
import type { ActionKind } from '@netsim/sim';
import { IPTABLES_FAULTS, POD_CHURN, RESTARTS, WATCH_FAULTS, checkProperty, controllerProperty, scenarioArbitrary, type CheckResult } from '../src/index.ts';
import { masqInvariants, nplInvariants, toyMasq, toyNpl, type MasqVariant, type NplVariant } from './fixtures/toys.ts';

function masqProperty(variant: MasqVariant, kinds: readonly ActionKind[]) {
  return controllerProperty({
    name: `toy masquerade (${variant})`,
    scenarios: scenarioArbitrary({ controller: { name: `masq-${variant}` }, cluster: { nodes: { min: 1, max: 2 }, initialPods: 0 }, timeline: { kinds, maxActions: 4 }, horizonMs: 20_000 }),
    controllers: { [`masq-${variant}`]: () => toyMasq(variant) },
    invariants: masqInvariants,
  });
}

function nplProperty(variant: NplVariant, kinds: readonly ActionKind[], maxActions = 8) {
  return controllerProperty({
    name: `toy npl (${variant})`,
    scenarios: scenarioArbitrary({
      controller: { name: `npl-${variant}` },
      cluster: { nodes: { min: 1, max: 1 }, initialPods: 1 },
      pods: { poolSize: 2, maxPorts: 3 },
      timeline: { kinds, maxActions },
      horizonMs: 20_000,
      settleMs: 3000,
    }),
    controllers: { [`npl-${variant}`]: () => toyNpl(variant) },
    invariants: nplInvariants,
  });
}

function violated(r: CheckResult<unknown>): string {
  return r.ok ? 'held' : r.outcome.status === 'violation' ? r.outcome.violation.invariant : r.outcome.status;
}


/** Property searches run many simulations; the bound is generous because the machine may be shared (not a speed assertion). */
const PROPERTY_TIMEOUT_MS = 60_000;
describe('toy controllers wrong on purpose', () => {
  it('masquerade: flush before refill is caught in the window it empties the chain', async () => {
    const r = await checkProperty(masqProperty('flush-before-refill', RESTARTS), { seed: 1, numRuns: 20 });
    expect(violated(r)).toBe('TOY-POSTRTG never empty once programmed');
    if (r.ok) return;
    // No fault needed: the periodic resync flushes a programmed chain.
    expect(r.scenario.timeline).toEqual([]);
    expect(r.story.join('\n')).toMatch(/iptables -t nat -N TOY-POSTRTG --wait → exit 1: iptables: Chain already exists\.\n.*iptables -t nat -F TOY-POSTRTG --wait\n.*VIOLATION of "TOY-POSTRTG never empty once programmed": TOY-POSTRTG on node-1 is empty \(it had 2 rules\)/);
  }, PROPERTY_TIMEOUT_MS);

  it('masquerade: deleting the rules on SIGTERM is caught at the restart', async () => {
    const r = await checkProperty(masqProperty('drop-on-restart', RESTARTS), { seed: 1, numRuns: 50 });
    expect(violated(r)).toBe('TOY-POSTRTG never empty once programmed');
    if (r.ok) return;
    expect(r.scenario.timeline.map((t) => t.action.kind)).toEqual(['agent.restart']);
    expect(r.story.join('\n')).toMatch(/gets SIGTERM[\s\S]*-D TOY-POSTRTG[\s\S]*VIOLATION/);
  }, PROPERTY_TIMEOUT_MS);

  it('npl: ignoring DeletedFinalStateUnknown leaves stale DNAT after a watch gap', async () => {
    const r = await checkProperty(nplProperty('ignore-tombstones', ['pod.create', 'pod.delete', 'watch.gap']), { seed: 1, numRuns: 200 });
    expect(violated(r)).toBe('no stale DNAT');
    if (r.ok) return;
    const kinds = r.scenario.timeline.map((t) => t.action.kind);
    expect(kinds).toContain('watch.gap');
    expect(kinds).toContain('pod.delete');
    expect(r.story.join('\n')).toMatch(/onDelete default\/web-\d uid [0-9a-f]{4} \(DeletedFinalStateUnknown\)/);
  }, PROPERTY_TIMEOUT_MS);

  it('npl: appending without checking is caught as duplicate rules', async () => {
    const r = await checkProperty(nplProperty('duplicate-rules', POD_CHURN), { seed: 1, numRuns: 20 });
    expect(violated(r)).toBe('no duplicate rules');
  }, PROPERTY_TIMEOUT_MS);

  it('npl: publishing ports without rules is caught as annotations disagreeing with rules', async () => {
    const r = await checkProperty(nplProperty('annotation-mismatch', POD_CHURN), { seed: 1, numRuns: 50 });
    expect(violated(r)).toBe('annotations agree with rules');
  }, PROPERTY_TIMEOUT_MS);
});

describe('correct toy controllers', () => {
  it('masquerade: keeps its chain programmed through restarts, crashes and iptables faults', async () => {
    const r = await checkProperty(masqProperty('correct', [...RESTARTS, ...IPTABLES_FAULTS]), { seed: 1, numRuns: 40 });
    expect(r).toMatchObject({ ok: true });
  }, PROPERTY_TIMEOUT_MS);

  it('npl: keeps DNAT, annotations and rules in agreement through churn, watch faults and restarts', async () => {
    const r = await checkProperty(nplProperty('correct', [...POD_CHURN, ...WATCH_FAULTS, ...RESTARTS]), { seed: 1, numRuns: 60 });
    if (!r.ok) throw new Error(r.report);
    expect(r.ok).toBe(true);
  }, PROPERTY_TIMEOUT_MS);
});
