// Runs `prisma generate` offline. The CLI insists that a schema-engine binary exists even though
// generation never runs it; we point it at a stub that refuses to run (see docs/decisions).
import { spawnSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stub = join(root, 'scripts', 'schema-engine-stub.sh');
chmodSync(stub, 0o755);
const res = spawnSync('npx', ['--no-install', 'prisma', 'generate', '--schema', 'prisma/schema.prisma'], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: stub, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' },
});
process.exit(res.status ?? 1);
