import { defineConfig } from 'prisma/config';

// No env() here: it throws when DATABASE_URL is unset at build time. Migrations run through
// scripts/migrate.mjs (wasm engine), which reads DATABASE_URL itself.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
});
