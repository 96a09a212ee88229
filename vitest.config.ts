import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['collector/**/*.test.ts', 'dashboard/**/*.test.ts', 'shared/**/*.test.ts', 'deploy/**/*.test.ts', 'bench/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    setupFiles: ['collector/test/setup/fast-check-seed.ts'],
    // Two cores: forks keep servers and SQLite files of one test file away from another's.
    pool: 'forks',
    maxWorkers: 2,
  },
});
