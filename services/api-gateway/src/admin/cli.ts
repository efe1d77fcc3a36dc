import { commonConfig, envReader, loadConfig } from '@po/config';
import { createDb } from '@po/db';
import { runAdmin } from './commands.js';

// Operator command: one JSON object on stdout and exit 0, or a message on stderr and exit 1.
const config = loadConfig((env) => {
  const read = envReader(env);
  const common = commonConfig(read, 0);
  read.done();
  return common;
});
const db = createDb(config.databaseUrl, { max: 1, ca: config.databaseCa });
try {
  const output = await runAdmin(db, process.argv.slice(2));
  process.stdout.write(`${JSON.stringify(output)}\n`);
  process.exitCode = 0;
} catch (err) {
  process.stderr.write(`admin: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
} finally {
  await db.$disconnect();
}
