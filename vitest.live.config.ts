import { defineConfig } from 'vitest/config';

/** Tests against the real Claude Code client: `npm run test:live` (they download it once when it is missing). */
export default defineConfig({
  test: {
    include: ['collector/test/live/**/*.live.ts'],
    testTimeout: 300_000,
    hookTimeout: 20 * 60_000,
    pool: 'forks',
    maxWorkers: 1,
  },
});
