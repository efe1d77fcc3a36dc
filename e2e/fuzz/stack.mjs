// The five services for `npm run fuzz` (no vitest here): a fresh database migrated from scratch,
// its own queue prefix, free ports, through deploy/local/stack.mjs like `npm run up`. Every log
// line goes to .local/fuzz-services.log; error lines are also kept in memory (a 5xx's cause).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { ROOT, startStack } from '../../deploy/local/stack.mjs';

const ADMIN_URL = process.env.TEST_DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const SERVICES = [
  'api-gateway',
  'worker-gateway',
  'pipeline-service',
  'scheduler-service',
  'result-consumer',
];

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function admin(sql) {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function startFuzzStack({
  logFile = join(ROOT, '.local', 'fuzz-services.log'),
  env: extra = {},
} = {}) {
  const name = `po_fuzz_${randomBytes(4).toString('hex')}`;
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const prefix = `pofuzz:${name}`;
  const env = {
    ...process.env,
    DATABASE_URL: url.toString(),
    REDIS_URL,
    QUEUE_PREFIX: prefix,
    HOST: '127.0.0.1',
    ...extra,
  };
  for (const k of Object.keys(env)) if (k.startsWith('OTEL_')) delete env[k];
  await admin(`CREATE DATABASE ${name}`);
  const cleanup = async () => {
    const redis = new Redis(REDIS_URL);
    let cursor = '0';
    do {
      const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = nextCursor;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== '0');
    await redis.quit();
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  };
  mkdirSync(join(ROOT, '.local'), { recursive: true });
  const out = createWriteStream(logFile);
  const errorLines = [];
  const log = (line) => {
    out.write(`${line}\n`);
    if (/"level":("error"|"fatal"|50|60)/.test(line) && errorLines.length < 20_000)
      errorLines.push(line);
  };
  let stack;
  try {
    execFileSync(process.execPath, ['libs/db/scripts/migrate.mjs', 'deploy'], {
      cwd: ROOT,
      env,
      stdio: 'ignore',
    });
    const ports = {};
    for (const s of SERVICES) ports[s] = await freePort();
    stack = await startStack({ services: SERVICES, env, log, ports, color: false });
  } catch (err) {
    out.end();
    await cleanup();
    throw err;
  }
  return {
    env,
    urls: stack.urls,
    logFile,
    errorLines: () => errorLines,
    exited: stack.exited,
    async stop() {
      try {
        await stack.stop();
      } finally {
        out.end();
        await cleanup();
      }
    },
  };
}
