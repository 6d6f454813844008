import { defineProject } from 'vitest/config';

// Repository-wide checks (determinism ban, lint configuration, package layering).
export default defineProject({
  test: {
    name: 'tools',
    include: ['test/**/*.test.ts'],
  },
});
