import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@netsim/cli',
    include: ['test/**/*.test.ts'],
  },
});
