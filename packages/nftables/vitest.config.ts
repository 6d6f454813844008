import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@netsim/nftables',
    include: ['test/**/*.test.ts'],
  },
});
