import { commonConfig, databaseOptions, envReader, loadConfig } from '@po/config';
import { createDb } from '@po/db';
import { createRedis, createStageResultDeadLetters } from '@po/queues';
import { HelpRequested, parseAdmin, runAdmin, type AdminQueues } from './commands.js';

// Operator command: one JSON object on stdout and exit 0, or a message on stderr and exit 1.
// `--help` on any command prints its help on stdout and exits 0, without touching the database.
const argv = process.argv.slice(2);
let needsRedis = false;
try {
  needsRedis = parseAdmin(argv).kind.startsWith('results ');
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
// Redis only for the commands on its queues: the others work without it.
const redis = needsRedis ? createRedis(config.redis, 'producer') : undefined;
let queues: AdminQueues | undefined;
try {
  if (redis) {
    // A first connection that fails ends the command, where a service would retry it forever.
    await new Promise((resolve, reject) => {
      redis.once('ready', resolve);
      redis.once('error', reject);
    });
    queues = { deadLetters: createStageResultDeadLetters(redis, config.queuePrefix) };
  }
  const output = await runAdmin(db, argv, new Date(), queues);
  process.stdout.write(`${JSON.stringify(output)}\n`);
  process.exitCode = 0;
} catch (err) {
  process.stderr.write(`admin: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
} finally {
  await queues?.deadLetters.close();
  redis?.disconnect();
  await db.$disconnect();
}
