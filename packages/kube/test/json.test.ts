import fc from 'fast-check';
import { freeze } from 'immer';
import { describe, expect, it } from 'vitest';
import { deepEqual } from '../src/index.ts';
import { deepFreeze } from '../src/json.ts';

/** Whether each object and array inside `v` is frozen, in a fixed walk order. */
function frozenMap(v: unknown, out: boolean[] = []): boolean[] {
  if (typeof v !== 'object' || v === null) return out;
  out.push(Object.isFrozen(v));
  for (const k of Object.keys(v)) frozenMap((v as Record<string, unknown>)[k], out);
  return out;
}

/** Plain data where some parts may already be frozen (shallowly), as a write shares parts of the previous state. */
const data = fc.jsonValue({ maxDepth: 4 }).chain((v) => fc.array(fc.boolean(), { maxLength: 40 }).map((marks) => {
  const copy = structuredClone(v);
  let i = 0;
  const mark = (x: unknown): void => {
    if (typeof x !== 'object' || x === null) return;
    for (const k of Object.keys(x)) mark((x as Record<string, unknown>)[k]);
    if (marks[i++] === true) Object.freeze(x);
  };
  mark(copy);
  return copy;
}));

describe('deepFreeze', () => {
  it('should freeze exactly what immer\'s deep freeze freezes, skipping frozen parts', () => {
    fc.assert(
      fc.property(data, (v) => {
        const a = structuredClone(v);
        const b = structuredClone(v);
        // structuredClone drops freezing: redo it identically on both copies.
        const refreeze = (src: unknown, x: unknown, y: unknown): void => {
          if (typeof src !== 'object' || src === null) return;
          for (const k of Object.keys(src)) refreeze((src as Record<string, unknown>)[k], (x as Record<string, unknown>)[k], (y as Record<string, unknown>)[k]);
          if (Object.isFrozen(src)) {
            Object.freeze(x);
            Object.freeze(y);
          }
        };
        refreeze(v, a, b);
        expect(deepFreeze(a)).toBe(a);
        freeze(b, true);
        expect(frozenMap(a)).toEqual(frozenMap(b));
        expect(a).toEqual(v);
      }),
      { seed: 5, numRuns: 300 },
    );
  });

  it('should freeze nested objects and arrays and leave class instances alone', () => {
    class Box {
      n = 1;
    }
    const v = { a: { b: [1, { c: 2 }] }, box: new Box() };
    deepFreeze(v);
    expect([Object.isFrozen(v), Object.isFrozen(v.a), Object.isFrozen(v.a.b), Object.isFrozen(v.a.b[1]), Object.isFrozen(v.box)]).toEqual([true, true, true, true, false]);
  });
});

describe('deepEqual', () => {
  it('should agree with comparing canonical JSON, with undefined keys as absent', () => {
    const canon = (x: unknown): string => JSON.stringify(x, (_k, val: unknown) => (typeof val === 'object' && val !== null && !Array.isArray(val) ? Object.fromEntries(Object.entries(val).sort(([p], [q]) => (p < q ? -1 : 1))) : val));
    const small = fc.letrec((tie) => ({
      v: fc.oneof({ depthSize: 'small' }, fc.constantFrom(1, 2, 'x', true, null), fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(fc.constantFrom('a', 'b', 'c'), fc.oneof(tie('v'), fc.constant(undefined)), { maxKeys: 3 })),
    })).v;
    fc.assert(
      fc.property(small, small, (a, b) => {
        expect(deepEqual(a, b)).toBe(canon(a) === canon(b));
        expect(deepEqual(a, structuredClone(a))).toBe(true);
      }),
      { seed: 6, numRuns: 1000 },
    );
  });
});
