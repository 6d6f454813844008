import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compile,
  createEvalState,
  evaluateHook,
  seededRandom31,
  type EvalContext,
  type EvalResult,
  type Match,
  type Packet,
  type Rule,
  type UnknownPolicy,
} from '../src/index.ts';
import { buildRuns, ruleKey } from '../src/dispatchIndex.ts';
import { rulesetArbitrary } from '../src/testing/index.ts';
import { hookArb, packetArb, packetsAimedAt, rulesetArb } from './evalArbitraries.ts';
import { comment, ctx, dport, expandSkips, pkt, random, rule, ruleset, traceLines } from './evalHelpers.ts';

/** kube-proxy's KUBE-SERVICES: one `-d VIP/32 -p tcp --dport P -j KUBE-SVC-i` per service, then nodeports. */
function services(n: number): Rule[] {
  const rules: Rule[] = [];
  for (let i = 0; i < n; i++) {
    rules.push(rule({ d: `10.96.${i >> 8}.${i & 255}/32`, p: 'tcp', m: [comment(`svc ${i}`), dport(80)], j: `SVC-${i}` }));
  }
  rules.push(rule({ m: [{ kind: 'addrtype', dst: { types: ['LOCAL'], negate: false }, limitIfaceIn: false, limitIfaceOut: false }], j: 'NODEPORTS' }));
  return rules;
}

describe('dispatch index: keys and runs', () => {
  it('should key rules by -d/32, -p and a single --dport, and refuse negated or ranged ones', () => {
    expect(ruleKey(rule({ d: '10.96.0.1/32', p: 'tcp', m: [dport(443)] }))?.shape).toBe(7);
    expect(ruleKey(rule({ p: 'udp', m: [dport(53, 'udp')] }))?.shape).toBe(6);
    expect(ruleKey(rule({ d: '10.96.0.1/32' }))?.shape).toBe(1);
    expect(ruleKey(rule({ d: '! 10.96.0.1/32', p: 'tcp' }))).toBeNull();
    expect(ruleKey(rule({ d: '10.96.0.0/24', p: 'tcp' }))).toBeNull();
    expect(ruleKey(rule({ p: 'tcp', m: [{ kind: 'tcp', dport: { range: { from: 1, to: 2 }, negate: false } }] }))).toBeNull();
    expect(ruleKey(rule({ p: 'tcp', m: [{ kind: 'tcp', dport: { range: { from: 1, to: 1 }, negate: true } }] }))).toBeNull();
  });

  it('should not key --dport when a statistic match comes before it (its draw happens even if the port differs)', () => {
    expect(ruleKey(rule({ p: 'tcp', m: [random(0.5), dport(80)] }))).toBeNull();
    expect(ruleKey(rule({ d: '10.96.0.1/32', p: 'tcp', m: [random(0.5), dport(80)] }))?.shape).toBe(3);
    expect(ruleKey(rule({ p: 'tcp', m: [dport(80), random(0.5)] }))?.shape).toBe(6);
  });

  it('should index only maximal runs of one shape that reach the minimum length', () => {
    const rules = [...services(10)];
    const runOf = buildRuns(rules, 8);
    expect(runOf[0]).toBe(runOf[9]);
    expect(runOf[0]).toMatchObject({ start: 0, end: 10 });
    expect(runOf[10]).toBeUndefined();
    expect(buildRuns(services(5), 8).every((r) => r === undefined)).toBe(true);
  });
});

describe('dispatch index: evaluation', () => {
  const rs = ruleset({
    nat: {
      PREROUTING: [rule({ j: 'SERVICES' })],
      SERVICES: services(1000),
      NODEPORTS: [rule({ p: 'tcp', m: [dport(30080)], j: 'ACCEPT' })],
      ...Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`SVC-${i}`, [rule({ j: 'ACCEPT' })]])),
    },
  });

  it('should jump straight to the one service rule that can match, recording the rest as skipped', () => {
    const r = evaluateHook(rs, 'PREROUTING', pkt({ dst: '10.96.1.44', dport: 80 }), ctx());
    // 10.96.1.44 is service 300: rules 1-300 skipped, rule 301 matched.
    expect(traceLines(r)).toEqual([
      'raw:PREROUTING:policy:ACCEPT',
      'mangle:PREROUTING:policy:ACCEPT',
      'nat:PREROUTING:1:match',
      'nat:SERVICES:1-300:skip',
      'nat:SERVICES:301:match',
      'nat:SVC-300:1:match',
    ]);
  });

  it('should skip the whole run when no service matches and go on to the rules after it', () => {
    const r = evaluateHook(rs, 'PREROUTING', pkt({ dst: '198.18.0.1', dport: 30080 }), ctx());
    expect(traceLines(r).slice(3)).toEqual(['nat:SERVICES:1-1000:skip', 'nat:SERVICES:1001:match', 'nat:NODEPORTS:1:match']);
  });

  it('should give the same result as a linear scan, once skips are expanded to nomatch entries', () => {
    const p = pkt({ dst: '10.96.1.44', dport: 80 });
    const indexed = evaluateHook(compile(rs), 'PREROUTING', p, ctx());
    const linear = evaluateHook(compile(rs, { index: false }), 'PREROUTING', p, ctx());
    expect(linear.trace.some((e) => e.kind === 'skip')).toBe(false);
    expect(expandSkips(indexed.trace)).toEqual(linear.trace);
    expect({ ...indexed, trace: [] }).toEqual({ ...linear, trace: [] });
  });
});

/**
 * The default run is CI-sized and seeded. A longer campaign:
 * `NETSIM_EVAL_RUNS=50000 NETSIM_EVAL_SEED=7 pnpm vitest run --project @netsim/netfilter dispatchIndex`.
 */
const RUNS = Number(process.env.NETSIM_EVAL_RUNS ?? 400);
const SEED = Number(process.env.NETSIM_EVAL_SEED ?? 20240611);

describe('dispatch index: property', () => {
  function run(compiled: ReturnType<typeof compile>, packets: readonly Packet[], hook: Parameters<typeof evaluateHook>[1], unknown: UnknownPolicy, seed: number) {
    let draws = 0;
    const random = seededRandom31(seed);
    const c: EvalContext = {
      ...ctx(),
      random31: () => {
        draws++;
        return random();
      },
      state: createEvalState(),
    };
    const results: EvalResult[] = packets.map((p) => evaluateHook(compiled, hook, p, c, { unknown }));
    return { results, draws };
  }

  it('should evaluate exactly like a linear scan for generated rulesets and packet sequences', () => {
    let sawSkip = 0;
    let sawCandidate = 0;
    fc.assert(
      fc.property(
        rulesetArb,
        fc.array(packetArb, { minLength: 1, maxLength: 6 }),
        hookArb,
        fc.constantFrom<UnknownPolicy>('stop', 'assume-match', 'assume-nomatch'),
        fc.integer(),
        (rs, packets, hook, unknown, seed) => {
          const indexed = run(compile(rs, { indexMinRun: 2 }), packets, hook, unknown, seed);
          const linear = run(compile(rs, { index: false }), packets, hook, unknown, seed);
          expect(indexed.draws).toBe(linear.draws);
          indexed.results.forEach((ri, i) => {
            const rl = linear.results[i] as EvalResult;
            if (ri.trace.some((e) => e.kind === 'skip')) sawSkip++;
            expect(expandSkips(ri.trace)).toEqual(rl.trace);
            expect({ ...ri, trace: [] }).toEqual({ ...rl, trace: [] });
          });
          sawCandidate += indexed.results.filter((r) => r.trace.some((e, j) => e.kind === 'skip' && r.trace[j + 1]?.kind === 'rule')).length;
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
    // Coverage marks: the index really skipped rules and really landed on candidates.
    expect(sawSkip).toBeGreaterThan(50);
    expect(sawCandidate).toBeGreaterThan(10);
  }, Math.max(10_000, RUNS * 10));

  it('should evaluate exactly like a linear scan for the shared canonical-ruleset arbitrary, every module and target included', () => {
    let sawRules = 0;
    let sawMatch = 0;
    fc.assert(
      fc.property(
        rulesetArbitrary({ maxRules: 8 }).chain((rs) =>
          fc.tuple(fc.constant(rs), fc.array(packetsAimedAt(rs), { minLength: 1, maxLength: 4 }), hookArb, fc.constantFrom<UnknownPolicy>('stop', 'assume-match', 'assume-nomatch'), fc.integer()),
        ),
        ([rs, packets, hook, unknown, seed]) => {
          const indexed = run(compile(rs, { indexMinRun: 2 }), packets, hook, unknown, seed);
          const linear = run(compile(rs, { index: false }), packets, hook, unknown, seed);
          expect(indexed.draws).toBe(linear.draws);
          indexed.results.forEach((ri, i) => {
            const rl = linear.results[i] as EvalResult;
            sawRules += rl.trace.filter((e) => e.kind === 'rule').length;
            if (rl.trace.some((e) => e.kind === 'rule' && e.outcome === 'match')) sawMatch++;
            expect(expandSkips(ri.trace)).toEqual(rl.trace);
            expect({ ...ri, trace: [] }).toEqual({ ...rl, trace: [] });
          });
        },
      ),
      { seed: SEED, numRuns: Math.ceil(RUNS / 4) },
    );
    // Coverage marks. These canonical rulesets pile conditions on each rule, so most of the walk is
    // `nomatch` paths through every module kind; the arbitraries above cover matching paths.
    expect(sawRules).toBeGreaterThan(500);
    expect(sawMatch).toBeGreaterThan(0);
  }, Math.max(10_000, RUNS * 10));

  it('should never let the index hide a statistic draw or an nth count', () => {
    const nth: Match = { kind: 'statistic', mode: 'nth', every: 2, packet: 0, negate: false };
    const runRules: Rule[] = [80, 81, 82, 83].map((port) => rule({ p: 'tcp', m: [nth, dport(port)], j: { kind: 'MARK', value: port, mask: 0 } }));
    const rs = ruleset({ mangle: { PREROUTING: runRules } });
    const packets = [80, 81, 80, 83].map((d) => pkt({ dport: d }));
    const a = run(compile(rs, { indexMinRun: 2 }), packets, 'PREROUTING', 'stop', 1);
    const b = run(compile(rs, { index: false }), packets, 'PREROUTING', 'stop', 1);
    expect(a.results.map((r) => r.mark)).toEqual(b.results.map((r) => r.mark));
    expect(a.results.some((r) => r.trace.some((e) => e.kind === 'skip'))).toBe(false);
  });
});
