import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { refusedInTable, TableDraft } from '../src/draft.ts';
import { targetModule } from '../src/targets.ts';
import { Failure } from '../src/failure.ts';
import { emptyTable } from '../src/ruleset.ts';
import type { Ipv4, Rule, Target } from '../src/types.ts';

const USER = ['U0', 'U1', 'U2', 'U3', 'U4', 'U5'];
const CHAINS = ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING', ...USER];

/** A rule of the generated nat table: a jump to a user chain, or a target limited to some hooks. */
type Step = { readonly chain: number; readonly kind: 'jump' | 'goto'; readonly to: number } | { readonly chain: number; readonly kind: 'DNAT' | 'MASQUERADE' | 'ACCEPT' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ chain: fc.nat(CHAINS.length - 1), kind: fc.constantFrom('jump' as const, 'goto' as const), to: fc.nat(USER.length - 1) }),
  fc.record({ chain: fc.nat(CHAINS.length - 1), kind: fc.constantFrom('DNAT' as const, 'MASQUERADE' as const, 'ACCEPT' as const) }),
);

function target(d: TableDraft, s: Step): Target {
  switch (s.kind) {
    case 'jump':
    case 'goto':
      return d.jumpTo(USER[s.to] as string, s.kind === 'goto') as Target;
    case 'DNAT':
      return { kind: 'DNAT', to: { minIp: 0xc6130002 as Ipv4, maxIp: 0xc6130002 as Ipv4 }, random: false, persistent: false };
    case 'MASQUERADE':
      return { kind: 'MASQUERADE', random: false, randomFully: false };
    case 'ACCEPT':
      return { kind: 'ACCEPT' };
  }
}

/** Appends the steps to a fresh nat draft; whether every append passed the kernel's checks. */
function build(steps: readonly Step[], defer: boolean): { draft: TableDraft; accepted: boolean } {
  const d = TableDraft.of(emptyTable('nat'));
  d.flushAll();
  for (const name of USER) d.declareUserChain(name);
  d.deferHookChecks = defer;
  for (const s of steps) {
    const rule: Rule = { matches: [], target: target(d, s) };
    try {
      d.append(CHAINS[s.chain] as string, rule);
    } catch (e) {
      if (e instanceof Failure) return { draft: d, accepted: false };
      throw e;
    }
  }
  return { draft: d, accepted: true };
}

describe('TableDraft.validateAll', () => {
  it('should accept a table exactly when appending its rules one by one with the kernel checks succeeds', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 24 }), (steps) => {
        const perRule = build(steps, false).accepted;
        const deferred = build(steps, true);
        expect(deferred.accepted).toBe(true);
        expect(deferred.draft.validateAll()).toBe(perRule);
      }),
      { seed: 11, numRuns: 400 },
    );
  });

  it('should refuse a loop reachable from a built-in chain and a DNAT reached from POSTROUTING through user chains', () => {
    const loop: Step[] = [
      { chain: 0, kind: 'jump', to: 0 },
      { chain: 4, kind: 'jump', to: 1 },
      { chain: 5, kind: 'goto', to: 0 },
    ];
    expect(build(loop, true).draft.validateAll()).toBe(false);
    // The same loop, not reachable from any built-in chain, is allowed (as the kernel allows it).
    expect(build(loop.slice(1), true).draft.validateAll()).toBe(true);
    const dnat: Step[] = [
      { chain: 3, kind: 'jump', to: 0 },
      { chain: 4, kind: 'jump', to: 1 },
      { chain: 5, kind: 'DNAT' },
    ];
    expect(build(dnat, true).draft.validateAll()).toBe(false);
    expect(build([{ chain: 0, kind: 'jump', to: 0 }, ...dnat.slice(1)], true).draft.validateAll()).toBe(true);
  });
});

describe('refusedInTable', () => {
  it('should take jumps and verdicts without a lookup because no target module has their names, and refuse DNAT outside nat', () => {
    for (const kind of ['jump', 'goto', 'ACCEPT', 'DROP', 'RETURN']) expect(targetModule(kind), kind).toBeUndefined();
    const dnat: Rule = { matches: [], proto: { proto: 6, negate: false }, target: { kind: 'DNAT', to: { minIp: 0x0a000001 as Ipv4, maxIp: 0x0a000001 as Ipv4 }, random: false, persistent: false } };
    expect(refusedInTable(dnat, 'filter')).toBe(true);
    expect(refusedInTable(dnat, 'nat')).toBe(false);
    expect(refusedInTable({ matches: [], target: { kind: 'jump', chain: 'X' } }, 'raw')).toBe(false);
    expect(refusedInTable({ matches: [] }, 'mangle')).toBe(false);
  });
});
