import fc from 'fast-check';
import { freeze } from 'immer';
import { describe, expect, it } from 'vitest';
import { deepEqual } from '../src/index.ts';
import { freezeCopy } from '../src/json.ts';

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

describe('freezeCopy', () => {
  /**
   * The contract, node by node: a frozen input part is reused as it is (nothing below it is
   * looked at, as immer's deep freeze does); any other object or array becomes a frozen copy.
   */
  const checkNode = (from: unknown, to: unknown): void => {
    if (typeof from !== 'object' || from === null) {
      expect(to).toBe(from);
      return;
    }
    if (Object.isFrozen(from)) {
      expect(to).toBe(from);
      return;
    }
    expect(to).not.toBe(from);
    expect(Object.isFrozen(to)).toBe(true);
    expect(Array.isArray(to)).toBe(Array.isArray(from));
    for (const k of Object.keys(from)) checkNode((from as Record<string, unknown>)[k], (to as Record<string, unknown>)[k]);
  };

  it('should give deep-frozen data equal to its input, key order included, reusing exactly the parts already frozen', () => {
    fc.assert(
      fc.property(data, (v) => {
        const snapshot = JSON.stringify(v);
        const copy = freezeCopy(v);
        expect(JSON.stringify(copy)).toBe(snapshot);
        expect(copy).toEqual(v);
        checkNode(v, copy);
        // The input is left as it was: a copy, not a freeze in place.
        expect(JSON.stringify(v)).toBe(snapshot);
      }),
      { seed: 5, numRuns: 300 },
    );
  });

  it('should freeze what immer freezes: the result of a write reads the same and refuses the same mutations', () => {
    const input = { a: { b: [1, { c: 2 }] }, d: 'x' };
    const viaImmer = freeze(structuredClone(input), true);
    const viaCopy = freezeCopy(structuredClone(input));
    expect(viaCopy).toEqual(viaImmer);
    expect(() => {
      (viaCopy.a.b[1] as { c: number }).c = 3;
    }).toThrow(TypeError);
  });

  it('should keep class instances as they are', () => {
    class Box {
      n = 1;
    }
    const box = new Box();
    const v = freezeCopy({ box, list: [box] });
    expect(v.box).toBe(box);
    expect(v.list[0]).toBe(box);
    expect(Object.isFrozen(box)).toBe(false);
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
