import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@netsim/controllers',
    include: ['test/**/*.test.ts'],
  },
});
