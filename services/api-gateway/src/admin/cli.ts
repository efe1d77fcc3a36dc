import { commonConfig, databaseOptions, envReader, loadConfig } from '@po/config';
import { createDb } from '@po/db';
import { HelpRequested, parseAdmin, runAdmin } from './commands.js';

// Operator command: one JSON object on stdout and exit 0, or a message on stderr and exit 1.
// `--help` on any command prints its help on stdout and exits 0, without touching the database.
const argv = process.argv.slice(2);
try {
  parseAdmin(argv);
} catch (err) {
  if (err instanceof HelpRequested) {
    process.stdout.write(err.text);
    process.exit(0);
  }
  // Usage errors are reported below, the same way as the database's.
}
const config = loadConfig((env) => {
  const read = envReader(env);
  const common = commonConfig(read, 0);
  read.done();
  return common;
});
const db = createDb(config.databaseUrl, { ...databaseOptions(config, 'admin'), max: 1 });
try {
  const output = await runAdmin(db, argv);
  process.stdout.write(`${JSON.stringify(output)}\n`);
  process.exitCode = 0;
} catch (err) {
  process.stderr.write(`admin: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
} finally {
  await db.$disconnect();
}
