import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@netsim/kernel',
    include: ['test/**/*.test.ts'],
  },
});
