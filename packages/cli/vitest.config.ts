import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@netsim/cli',
    include: ['test/**/*.test.ts'],
    // Most cases start the bin as a child process (node + tsx) or run whole fuzz campaigns; on a
    // shared machine one can take well over vitest's 5 s default. Not a speed assertion.
    testTimeout: 60_000,
  },
});
