import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@netsim/conformance',
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/globalSetup.ts'],
    // Kernel cases run real tools in network namespaces: seconds, not milliseconds.
    testTimeout: 150_000,
    hookTimeout: 60_000,
  },
});
