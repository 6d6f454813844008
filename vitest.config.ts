import { defineConfig } from 'vitest/config';

// One vitest project per package (packages/*/vitest.config.ts). The JSON report feeds .ci/run's
// final "N passed, N failed" line, so the count always comes from the runner itself.
export default defineConfig({
  test: {
    projects: ['packages/*', 'tools'],
    passWithNoTests: true,
    reporters: ['default', ['json', { outputFile: '.reports/vitest.json' }]],
  },
});
