import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@netsim/scenario',
    include: ['test/**/*.test.ts'],
    // Fuzz campaigns and replays run many simulations: on a shared machine that is seconds (a bound, not a speed assertion).
    testTimeout: 60_000,
  },
});
