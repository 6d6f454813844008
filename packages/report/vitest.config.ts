import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@netsim/report',
    include: ['test/**/*.test.ts'],
    // CI and development machines run the whole suite on two cores: a test's budget is about
    // finishing, not speed (speed is measured in `pnpm bench`, never asserted here).
    testTimeout: 60_000,
  },
});
