import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { checkSource, librarySourceFiles, tidy } from '../tidy.ts';

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
});
