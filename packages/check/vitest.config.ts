import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@netsim/check',
    include: ['test/**/*.test.ts'],
  },
});
