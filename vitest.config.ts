import { readdirSync, existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

// Tests import workspace packages from source, so unit and integration tests need no build.
const alias = Object.fromEntries(
  readdirSync(resolve('libs'))
    .filter((name) => existsSync(resolve('libs', name, 'src', 'index.ts')))
    .map((name) => [`@po/${name}`, resolve('libs', name, 'src', 'index.ts')]),
);

export default defineConfig({
  resolve: { alias },
  test: {
    projects: [
      {
        resolve: { alias },
        test: {
          name: 'unit',
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
        },
      },
      {
        resolve: { alias },
        test: {
          name: 'e2e',
          include: ['e2e/**/*.e2e.test.ts'],
          globalSetup: ['libs/testing/src/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
