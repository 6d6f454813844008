// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The determinism ban (see docs/determinism.md). Library code must take time from the simulated
 * clock and choices from the seeded PRNG; these globals would leak wall-clock time or unseeded
 * randomness into results. The tidy test (tools/test/tidy.test.ts) checks the same
 * list by text, so a disabled lint rule cannot hide a violation.
 */
const determinismRestrictedGlobals = [
  { name: 'setTimeout', message: 'Real timers break determinism: schedule on the simulated clock.' },
  { name: 'setInterval', message: 'Real timers break determinism: schedule on the simulated clock.' },
  { name: 'setImmediate', message: 'Real timers break determinism: schedule on the simulated clock.' },
  { name: 'clearTimeout', message: 'Real timers break determinism.' },
  { name: 'clearInterval', message: 'Real timers break determinism.' },
  { name: 'queueMicrotask', message: 'Schedule work through the engine, not the microtask queue.' },
  { name: 'performance', message: 'Wall-clock time breaks determinism: use the simulated clock.' },
];
const determinismRestrictedProperties = [
  { object: 'Math', property: 'random', message: 'Unseeded randomness: draw from the injected seeded PRNG (pure-rand).' },
  { object: 'Date', property: 'now', message: 'Wall-clock time: use the simulated clock.' },
  { object: 'performance', property: 'now', message: 'Wall-clock time: use the simulated clock.' },
  { object: 'process', property: 'hrtime', message: 'Wall-clock time: use the simulated clock.' },
  { object: 'crypto', property: 'randomUUID', message: 'Unseeded randomness: ids come from the simulation id source.' },
  { object: 'crypto', property: 'getRandomValues', message: 'Unseeded randomness: draw from the seeded PRNG.' },
];

export default tseslint.config(
  // tools/outside/project is a user's project: tools/outside/run.sh type-checks it there, against the installed tarballs.
  { ignores: ['**/node_modules/**', '**/dist/**', '.reports/**', 'coverage/**', 'tools/outside/project/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // Library sources: the determinism ban. CLI entry points, tests, benches and tools may read the
    // wall clock (for progress bars and timings), never to decide results.
    files: ['packages/*/src/**/*.ts'],
    ignores: ['packages/cli/src/**'],
    rules: {
      'no-restricted-globals': ['error', ...determinismRestrictedGlobals],
      'no-restricted-properties': ['error', ...determinismRestrictedProperties],
      'no-restricted-syntax': [
        'error',
        { selector: "NewExpression[callee.name='Date']", message: 'new Date() reads the wall clock: use the simulated clock.' },
        { selector: "CallExpression[callee.name='Date']", message: 'Date() reads the wall clock: use the simulated clock.' },
      ],
    },
  },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
);
