import { readdirSync, existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

// Tests import workspace packages from source, so unit and integration tests need no build.
const alias = Object.fromEntries(
  readdirSync(resolve('libs'))
    .filter((name) => existsSync(resolve('libs', name, 'src', 'index.ts')))
    .map((name) => [`@po/${name}`, resolve('libs', name, 'src', 'index.ts')]),
);

const E2E_SOLO = ['e2e/frozen-transaction.e2e.test.ts', 'e2e/noisy-neighbour.e2e.test.ts'];

export default defineConfig({
  resolve: { alias },
  test: {
    projects: [
      {
        resolve: { alias },
        test: {
          name: 'unit',
          // Pure in-process tests: a worker thread per file starts faster than a child process
          // (unit project 50 s -> 43 s on the 2-core CI box, decision 0096).
          pool: 'threads',
          include: ['{libs,services}/*/src/**/*.test.ts'],
          exclude: ['**/*.int.test.ts', '**/node_modules/**', '**/dist/**'],
        },
      },
      {
        resolve: { alias },
        test: {
          name: 'integration',
          include: ['{libs,services}/*/src/**/*.int.test.ts', '{libs,services}/*/scripts/**/*.int.test.ts'],
          globalSetup: ['libs/testing/src/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
          // Two files at a time even on two cores (vitest's default there is one): much of an
          // integration file's time is spent waiting on PostgreSQL, Redis and timers, and each file
          // has its own database and queue prefix. 192 s -> 136 s on the CI box (decision 0096). A
          // project with its own maxWorkers needs its own group; unit runs first.
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        resolve: { alias },
        test: {
          name: 'e2e',
          include: ['e2e/**/*.e2e.test.ts'],
          exclude: [
            'e2e/redis-outage.e2e.test.ts',
            'e2e/redis-freeze.e2e.test.ts',
            'e2e/redis-flush.e2e.test.ts',
            'e2e/redis-cluster.e2e.test.ts',
            'e2e/redis-sentinel.e2e.test.ts',
            ...E2E_SOLO,
            '**/node_modules/**',
          ],
          globalSetup: ['libs/testing/src/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // Two files at a time, each with its cluster, database and queue prefix of its own: most
          // of a file's time is spent waiting on timers, leases and visibility timeouts. With the
          // e2e-outage project beside it that is three clusters, well within PostgreSQL's 100
          // connections (DATABASE_POOL_MAX 4 per service). Decision 0126 (amended) has the figures.
          maxWorkers: 2,
          sequence: { groupOrder: 2 },
        },
      },
      {
        resolve: { alias },
        test: {
          // Files that time a service against its own deadlines (a frozen transaction's lock and
          // idle timeouts, a quiet application's latency under a neighbour's flood): they run after
          // the e2e project, one at a time, not beside two other clusters (they failed there).
          name: 'e2e-solo',
          include: E2E_SOLO,
          globalSetup: ['libs/testing/src/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
      {
        resolve: { alias },
        test: {
          // Three minutes of handlers around a 90-second Redis outage, a minute around a 20-second
          // Redis freeze and up to a lease (60 s) after a FLUSHALL, nearly all of it waiting: the test
          // command runs them beside the other e2e files rather than after them, one after the other
          // (each runs a cluster of its own).
          name: 'e2e-outage',
          include: ['e2e/redis-outage.e2e.test.ts', 'e2e/redis-freeze.e2e.test.ts', 'e2e/redis-flush.e2e.test.ts', 'e2e/redis-cluster.e2e.test.ts', 'e2e/redis-sentinel.e2e.test.ts'],
          globalSetup: ['libs/testing/src/global-setup.ts'],
          testTimeout: 300_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
