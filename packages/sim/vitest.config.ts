import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@netsim/sim',
    include: ['test/**/*.test.ts'],
  },
});
