import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@netsim/scenario',
    include: ['test/**/*.test.ts'],
  },
});
