// Issue 27: the five services, the admin command and the CLI behind PgBouncer 1.18 in transaction
// mode, with Prisma's convention: DATABASE_URL through PgBouncer with `pgbouncer=true`, and
// DATABASE_DIRECT_URL for what needs a session (LISTEN). PgBouncer has fewer server connections
// than the services have clients, so consecutive transactions of one client connection land on
// different server connections, and each server connection serves every service in turn.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, startPgBouncer, type PgBouncer, type TestDatabase } from '@po/testing';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';
import { STREAM_HANDLERS, createStream, errorLines, streamProblems, unreadyServices } from './support/pipeline-stream.js';

const run = promisify(execFile);

describe('behind PgBouncer in transaction mode (pgbouncer=true, DATABASE_DIRECT_URL)', () => {
  let bouncer: PgBouncer;
  let database: TestDatabase;
  let cluster: Cluster;
  let key: string;
  let applicationId: number;

  beforeAll(async () => {
    bouncer = await startPgBouncer({ poolMode: 'transaction', poolSize: 6 });
    database = await createTestDatabase();
    cluster = await startCluster({
      database,
      env: {
        GATEWAY_VISIBILITY_TIMEOUT: '5',
        DATABASE_URL: bouncer.url(new URL(database.url).pathname.slice(1)),
        DATABASE_DIRECT_URL: database.url,
      },
    });
    // The admin command goes through PgBouncer too (the cluster's environment).
    ({ apiKey: key, applicationId } = await cluster.createApp('pgbouncer'));
    for (const i of [1, 2]) {
      cluster.startWorker(`worker-${i}`, {
        PO_BASE_URL: cluster.apiUrl,
        PO_WORKER_BASE_URL: cluster.workerUrl,
        PO_API_KEY: key,
        PO_INSTANCE_ID: `pgbouncer-${i}`,
        PO_HANDLERS: STREAM_HANDLERS,
        PO_CONCURRENCY: '8',
      });
    }
  }, 120_000);

  afterAll(async () => {
    const errors = cluster ? errorLines(cluster) : [];
    if (errors.length) console.log(`[pgbouncer] ${errors.length} error lines from the services, the first:\n${errors.slice(0, 5).join('\n')}`);
    await cluster?.stop();
    await bouncer?.stop();
    await database?.drop();
  }, 60_000);

  it('workers bootstrap, and every pipeline runs to Completed with each result applied once', async () => {
    expect(cluster.env.DATABASE_URL).toContain('pgbouncer=true');
    const ids = await createStream(cluster, key, 'pgb', 40, 20);
    expect(await streamProblems(cluster, key, ids, 60_000)).toEqual([]);
    expect(await unreadyServices(cluster)).toEqual([]);
  });

  it('the API reads, searches, cancels and fires a schedule through it', async () => {
    const headers = { 'x-api-key': key };
    const created = await call(cluster.apiUrl, 'POST', '/pipelines/idempotent', {
      json: { idempotencyKey: 'pgb-read', name: 'pgb-read', stages: [{ stageName: 'wait', stageHandlerName: 'nobody-serves-this' }] },
      headers,
    });
    expect(created.status).toBe(201);
    const id = created.body.pipeline.id as number;
    expect((await call(cluster.apiUrl, 'GET', `/pipelines/${id}`, { headers })).body).toMatchObject({ id, name: 'pgb-read' });
    expect((await call(cluster.apiUrl, 'POST', '/pipelines/by-idempotency-key', { json: { idempotencyKey: 'pgb-read' }, headers })).body.id).toBe(id);
    const search = await call(cluster.apiUrl, 'GET', '/pipelines?name=pgb-read', { headers });
    expect(search.body.items.map((p: { id: number }) => p.id)).toEqual([id]);
    expect((await call(cluster.apiUrl, 'POST', `/pipelines/${id}/cancel`, { headers })).body.status).toBe('Cancelled');

    const schedule = await call(cluster.apiUrl, 'PUT', '/schedules/pgb-every-minute', {
      json: { kind: 'Cron', cronExpression: '* * * * *', definition: { name: 'from-schedule', stages: [{ stageName: 'one', stageHandlerName: 'echo', input: 'hi' }] } },
      headers,
    });
    expect(schedule.status).toBe(201);
    const fired = await call(cluster.apiUrl, 'POST', '/schedules/pgb-every-minute/trigger', { headers });
    expect(fired.status).toBe(201);
    const firedId = fired.body.pipeline.id as number;
    await waitFor('the triggered pipeline Completed', async () => {
      const p = await call(cluster.apiUrl, 'GET', `/pipelines/${firedId}`, { headers });
      return p.body.status === 'Completed' ? true : undefined;
    }, 20_000, 200);
  });

  it('the CLI works against it', async () => {
    const { stdout } = await run(process.execPath, ['libs/cli/bin/po.js', 'pipelines', 'list', '--output', 'json', '--limit', '5'], {
      env: { ...process.env, PO_API_URL: cluster.apiUrl, PO_API_KEY: key },
    });
    expect((JSON.parse(stdout) as { items?: unknown[] }).items ?? JSON.parse(stdout)).toHaveLength(5);
  });

  it('the key cache listens on the direct server: a disabled key is refused at once', async () => {
    const { stdout } = await run(process.execPath, ['services/api-gateway/dist/admin/cli.js', 'apps', 'keys', 'create', '--app', String(applicationId)], { env: cluster.env });
    const other = JSON.parse(stdout) as { keyId: number; apiKey: string };
    const read = () => call(cluster.apiUrl, 'GET', '/pipelines?limit=1', { headers: { 'x-api-key': other.apiKey } }).then((r) => r.status);
    expect(await read()).toBe(200);
    await run(process.execPath, ['services/api-gateway/dist/admin/cli.js', 'apps', 'keys', 'disable', '--key-id', String(other.keyId)], { env: cluster.env });
    // Cached for 10 s unless the NOTIFY reaches the cache: well before that, it is refused.
    await waitFor('the disabled key refused', async () => ((await read()) === 401 ? true : undefined), 3000, 50);
    const metrics = await fetch(`${cluster.process('api-gateway').metricsUrl}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/^po_db_session_connections 1$/m);
    expect(metrics).toMatch(/^po_db_pool_max_connections 4$/m);
    expect(metrics).toMatch(/^po_db_pool_connections\{state="in_use"\} \d+$/m);
    expect(metrics).toMatch(/^po_db_pool_waiting_requests \d+$/m);
  });

  it('no service logged a prepared-statement or startup-parameter error, nor did PgBouncer', () => {
    const lines = cluster.allLines().filter((l) => /prepared statement|unsupported startup parameter/i.test(l));
    expect(lines).toEqual([]);
    expect(bouncer.log()).not.toMatch(/unsupported startup parameter|prepared statement/i);
  });
});
