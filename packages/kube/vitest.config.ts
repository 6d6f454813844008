import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@netsim/kube',
    include: ['test/**/*.test.ts'],
  },
});
