import { describe, expect, it } from 'vitest';
import { checkExpectation, describeExpectation, replay } from '../src/index.ts';
import { toyControllers } from './fixtures/toy.ts';
import { toyFile } from './fixtures/toyScenario.ts';

describe('replay', () => {
  it('should meet a violation expectation when the faulty controller leaves stale DNAT in the window', async () => {
    const r = await replay(toyFile(), { controllers: toyControllers });
    expect(r).toMatchObject({ met: true, seed: 7, expected: 'violation "no stale DNAT" in 7s..10s' });
    expect(r.observed).toMatch(/^violation "no stale DNAT" at \d+ms$/);
    expect(r.mismatch).toBeUndefined();
    expect(r.story.join('\n')).toMatch(/VIOLATION of "no stale DNAT": DNAT tcp --dport 61000 → 198\.18\.0\.\d+:8080 in TOY-DNAT on node-1 is stale/);
  });

  it('should not meet it with the fixed controller, and say why', async () => {
    const f = toyFile();
    const r = await replay({ ...f, scenario: { ...f.scenario, controller: { name: 'toy-dnat:fixed' } } }, { controllers: toyControllers });
    expect(r.met).toBe(false);
    expect(r.observed).toBe('invariants hold');
    expect(r.mismatch).toBe('expected violation "no stale DNAT" in 7s..10s, but saw invariants hold');
  });

  it('should meet an ok expectation with the fixed controller', async () => {
    const f = toyFile();
    const r = await replay({ ...f, scenario: { ...f.scenario, controller: { name: 'toy-dnat:fixed' } }, expect: { outcome: 'ok' } }, { controllers: toyControllers });
    expect(r.met).toBe(true);
  });

  it('should run with another seed when asked', async () => {
    const r = await replay(toyFile(), { controllers: toyControllers, seed: 99 });
    expect(r.seed).toBe(99);
    expect(r.story[0]).toBe('1. t=0ms simulation starts: seed 99');
  });
});

describe('checkExpectation', () => {
  const violation = { status: 'violation', seed: 1, steps: 10, timeMs: 5000, choices: [], violation: { invariant: 'no stale DNAT', message: 'DNAT 61000 is stale', step: 10, timeMs: 5000 } } as const;

  it('should reject a violation outside the window or without the expected text', () => {
    expect(checkExpectation({ outcome: 'violation', invariant: 'no stale DNAT', betweenMs: [6000, 9000] }, violation as never)).toBe('it happened at 5000ms, outside 6s..9s');
    expect(checkExpectation({ outcome: 'violation', invariant: 'no stale DNAT', message: '61001' }, violation as never)).toBe('the message does not contain "61001": DNAT 61000 is stale');
    expect(checkExpectation({ outcome: 'violation', invariant: 'no stale DNAT', betweenMs: [4000, 5000], message: '61000' }, violation as never)).toBeUndefined();
  });

  it('should reject a violation of another invariant', () => {
    expect(checkExpectation({ outcome: 'violation', invariant: 'probes succeed' }, violation as never)).toBe('expected "probes succeed" to be violated, but "no stale DNAT" was first');
  });

  it('should require every storyIncludes piece in some story line', () => {
    const e = { outcome: 'violation', invariant: 'no stale DNAT', storyIncludes: ['probe npl-health', 'relists'] } as const;
    expect(checkExpectation(e, violation as never, ['1. t=0ms probe npl-health x fails', '2. t=5ms pods relists (1 items)'])).toBeUndefined();
    expect(checkExpectation(e, violation as never, ['1. t=0ms probe npl-health x fails'])).toBe('the story has no line containing "relists"');
    expect(describeExpectation(e)).toBe('violation "no stale DNAT" + 2 story lines');
  });

  it('should refuse a story that contains a storyExcludes piece, quoting the line', () => {
    const e = { outcome: 'violation', invariant: 'no stale DNAT', storyExcludes: ['fails'] } as const;
    expect(checkExpectation(e, violation as never, ['1. t=0ms probe x succeeds again'])).toBeUndefined();
    expect(checkExpectation(e, violation as never, ['1. t=0ms probe x fails: reset'])).toBe('the story should not contain "fails", but has: 1. t=0ms probe x fails: reset');
  });

  it('should describe a single instant as "at"', () => {
    expect(describeExpectation({ outcome: 'finding', kind: 'livelock', betweenMs: [40, 40] })).toBe('finding livelock at 40ms');
  });
});
