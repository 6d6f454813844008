import { describe, expect, it } from 'vitest';
import { ESLint } from 'eslint';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

// ESLint's type-aware setup builds a TypeScript program on first use, which can take many seconds
// on a loaded 2-core machine; the timeout is a bound on that setup, not a speed assertion.
const LINT_SETUP_TIMEOUT_MS = 120_000;

describe('lint: determinism ban is configured for library sources', () => {
  it('should report each wall-clock, randomness and timer use in a package src file, naming the replacement', async () => {
    const eslint = new ESLint({ cwd: root });
    const code = [
      'export const a = Math.random();',
      'export const b = Date.now();',
      'export const c = new Date();',
      'export const d = performance.now();',
      'setTimeout(() => undefined, 1);',
      '',
    ].join('\n');
    // lintText with a path inside packages/*/src applies the library-source rules; the file need
    // not exist on disk because the type-aware rules are not needed for these syntactic bans.
    const [result] = await eslint.lintText(code, { filePath: `${root}packages/netfilter/src/index.ts` });
    const messages = (result?.messages ?? []).filter((m) => m.ruleId?.startsWith('no-restricted'));
    const lines = messages.map((m) => m.line).sort((x, y) => x - y);
    expect(lines).toEqual([1, 2, 3, 4, 4, 5]);
    expect(messages.find((m) => m.line === 1)?.message).toContain('seeded PRNG');
  }, LINT_SETUP_TIMEOUT_MS);

  it('should allow the wall clock in the CLI (progress bars), outside library sources', async () => {
    const eslint = new ESLint({ cwd: root });
    const [result] = await eslint.lintText('export const t = Date.now();\n', { filePath: `${root}packages/cli/src/bin.ts` });
    expect((result?.messages ?? []).filter((m) => m.ruleId?.startsWith('no-restricted'))).toEqual([]);
  }, LINT_SETUP_TIMEOUT_MS);
});
