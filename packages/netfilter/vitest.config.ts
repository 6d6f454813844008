import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@netsim/netfilter',
    include: ['test/**/*.test.ts'],
  },
});
