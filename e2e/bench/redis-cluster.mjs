// A Redis Cluster of the bench's own (BENCH_REDIS=cluster): `masters` primaries without replicas
// on free ports of 127.0.0.1, no persistence, each in a temporary directory; stop() kills them
// and removes the directories. The figures read per primary (INFO stats and cpu) say what each
// master carries of a stage: the ceiling of one Redis, and how it divides over masters.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

const run = promisify(execFile);

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

export async function startBenchRedisCluster(masters = 3) {
  const nodes = [];
  const stop = async () => {
    for (const n of nodes) if (n.child.exitCode === null) n.child.kill('SIGKILL');
    await sleep(100);
    for (const n of nodes) rmSync(n.dir, { recursive: true, force: true });
  };
  process.on('exit', () => nodes.forEach((n) => n.child.exitCode === null && n.child.kill('SIGKILL')));
  try {
    for (let i = 0; i < masters; i += 1) {
      const port = await freePort();
      const dir = mkdtempSync(join(tmpdir(), 'po-bench-rcluster-'));
      const child = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--cluster-enabled', 'yes',
          '--cluster-config-file', join(dir, 'nodes.conf'), '--appendonly', 'no', '--save', '', '--daemonize', 'no'],
        { stdio: 'ignore' },
      );
      nodes.push({ port, dir, child });
    }
    for (const n of nodes) await until(`node ${n.port}`, async () => (await ask(n.port, (r) => r.ping())) === 'PONG');
    await run('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes']);
    for (const n of nodes)
      await until(`cluster state ok on ${n.port}`, async () => /cluster_state:ok/.test((await ask(n.port, (r) => r.cluster('INFO'))) ?? ''));
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    /** REDIS_CLUSTER_NODES for the services. */
    seeds: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    ports: nodes.map((n) => n.port),
    stop,
  };
}

async function ask(port, fn) {
  const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return await fn(r);
  } catch {
    return null;
  } finally {
    r.disconnect();
  }
}

async function until(what, check, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench: Redis Cluster: timed out waiting for ${what}`);
    await sleep(100);
  }
}
