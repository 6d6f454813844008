import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { checkModuleState, checkSource, librarySourceFiles, tidy } from '../tidy.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('tidy: determinism ban in library sources', () => {
  it('should find no wall clock, unseeded randomness or real timers in any package src/', () => {
    const violations = tidy(root).map((v) => `${v.file}:${v.line}: ${v.what} (${v.instead}): ${v.text}`);
    expect(violations).toEqual([]);
  });

  it('should actually scan the library sources (not an empty list)', () => {
    const files = librarySourceFiles(root);
    expect(files.some((f) => f.endsWith('packages/netfilter/src/index.ts'))).toBe(true);
    expect(files.some((f) => f.includes('/cli/'))).toBe(false);
  });

  it('should flag each banned form and name the replacement', () => {
    const src = [
      'const a = Math.random();',
      'const b = Date.now();',
      'const c = new Date();',
      'const d = performance.now();',
      'setTimeout(() => 1, 5);',
      'setInterval(f, 1);',
      'setImmediate(f);',
      'crypto.randomUUID();',
      'process.hrtime.bigint();',
      'setImmediate(f); // tidy-allow: the engine detects a controller awaiting real I/O',
    ].join('\n');
    const found = checkSource('x.ts', src);
    expect(found.map((v) => v.what)).toEqual([
      'Math.random',
      'Date.now',
      'new Date',
      'performance.now',
      'setTimeout',
      'setInterval',
      'setImmediate',
      'crypto randomness',
      'process.hrtime',
    ]);
    expect(found[0]?.instead).toContain('seeded PRNG');
  });

  it('should flag module-level mutable state and let read-only tables and justified caches pass', () => {
    const src = [
      'let counter = 0;',
      'export var legacy = 1;',
      'const seen = new Set<string>();',
      'const byName = new Map<string, number>();',
      'const memo = new WeakMap<object, number>();',
      'const queue = [1, 2];',
      'const bag = { n: 0 };',
      'const PROTOS: ReadonlySet<number> = new Set([6, 17]);',
      'const NAMES: readonly string[] = ["a"];',
      'const LEVELS = ["x", "y"] as const;',
      'const TABLE: { readonly [k: string]: number } = { a: 1 };',
      'const cache = new WeakMap<object, string>(); // tidy-allow: memo of a pure function',
      'function f(): void { let local = 0; local++; const m = new Map(); m.clear(); }',
    ].join('\n');
    const found = checkModuleState('x.ts', src);
    expect(found.map((v) => `${v.line} ${v.what}`)).toEqual([
      '1 module-level let/var',
      '2 module-level let/var',
      '3 module-level mutable Set',
      '4 module-level mutable Map',
      '5 module-level mutable WeakMap',
      '6 module-level mutable array',
      '7 module-level object literal without a type',
    ]);
    expect(found[0]?.instead).toContain('keep state in the world');
  });
});
