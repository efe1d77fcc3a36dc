// The image's entry point: `docker run IMAGE <program> [args…]` runs one program in this process
// (no child process, so SIGTERM reaches the service's own shutdown handler).
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PROGRAMS = {
  'api-gateway': 'services/api-gateway/dist/main.js',
  'worker-gateway': 'services/worker-gateway/dist/main.js',
  'pipeline-service': 'services/pipeline-service/dist/main.js',
  'scheduler-service': 'services/scheduler-service/dist/main.js',
  'result-consumer': 'services/result-consumer/dist/main.js',
  migrate: 'libs/db/scripts/migrate.mjs', // migrate [deploy|status|check|resolve …]
  admin: 'services/api-gateway/dist/admin/cli.js', // admin apps create --name NAME
};

const [name, ...args] = process.argv.slice(2);
const script = PROGRAMS[name];
if (!script) {
  process.stderr.write(`usage: <program> [args…]; programs: ${Object.keys(PROGRAMS).join(', ')}\n`);
  process.exit(64);
}
const file = join(ROOT, script);
process.argv = [process.argv[0], file, ...args];
await import(pathToFileURL(file).href);
