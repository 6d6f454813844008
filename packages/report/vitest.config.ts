import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@netsim/report',
    include: ['test/**/*.test.ts'],
  },
});
