// Issue 27, "every wait is bounded": a result-consumer replica frozen (SIGSTOP) in the middle of an
// engine transaction that holds row locks of two applications' pipelines. PostgreSQL ends the
// frozen transaction at idle_in_transaction_session_timeout, no statement of anyone else waits on
// its locks longer than lock_timeout, the other replica and services keep completing pipelines
// meanwhile, and once resumed the frozen process carries on by itself: every pipeline completes,
// each result applied once.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_ADMIN_URL } from '@po/testing';
import { startCluster, type Cluster } from './support/cluster.js';
import { call } from './support/http.js';
import { STREAM_HANDLERS, createStream, errorLines, streamProblems, unreadyServices } from './support/pipeline-stream.js';
import { localPortsOf } from './support/postgres-backends.js';

const IDLE_IN_TRANSACTION_MS = 2000;
const LOCK_MS = 1000;

describe('a service frozen in the middle of its transaction', () => {
  let cluster: Cluster;
  const keys: string[] = [];
  const keyOf = new Map<number, string>();

  beforeAll(async () => {
    cluster = await startCluster({
      replicas: { 'scheduler-service': 0, 'result-consumer': 2, 'pipeline-service': 2 },
      env: {
        DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: String(IDLE_IN_TRANSACTION_MS),
        DATABASE_LOCK_TIMEOUT_MS: String(LOCK_MS),
        DATABASE_STATEMENT_TIMEOUT_MS: '5000',
        GATEWAY_VISIBILITY_TIMEOUT: '5',
        DISPATCH_SWEEP_INTERVAL_MS: '200',
      },
    });
    for (const app of ['frozen-a', 'frozen-b']) {
      const { apiKey: key, applicationId } = await cluster.createApp(app);
      keys.push(key);
      keyOf.set(applicationId, key);
      cluster.startWorker(`worker-${app}`, {
        PO_BASE_URL: cluster.apiUrl,
        PO_WORKER_BASE_URL: cluster.workerUrl,
        PO_API_KEY: key,
        PO_INSTANCE_ID: app,
        PO_HANDLERS: STREAM_HANDLERS,
        PO_CONCURRENCY: '8',
      });
    }
    // Which rows a backend holds locked (the frozen transaction's pipelines).
    await cluster.database.db.$executeRawUnsafe('CREATE EXTENSION IF NOT EXISTS pgrowlocks');
  }, 120_000);

  afterAll(async () => {
    const frozen = cluster?.process('result-consumer-1');
    if (frozen?.pid && frozen.running) process.kill(frozen.pid, 'SIGCONT');
    const errors = cluster ? errorLines(cluster) : [];
    if (errors.length) console.log(`[frozen] ${errors.length} error lines from the services, the first:\n${errors.slice(0, 5).join('\n')}`);
    await cluster?.stop();
  }, 60_000);

  it('its locks last until idle_in_transaction_session_timeout, no one waits on them past lock_timeout, and the rest carry on', async () => {
    const database = new URL(cluster.database.url).pathname.slice(1);
    const admin = new pg.Client({ connectionString: TEST_DATABASE_ADMIN_URL });
    await admin.connect();
    const frozen = cluster.process('result-consumer-1');
    const pid = frozen.pid!;
    try {
      const creating = Promise.all(keys.map((key, i) => createStream(cluster, key, `frozen-${i}`, 80, 60)));
      await sleep(1500);

      // Stop it until it is caught inside a transaction that holds pipeline rows locked; outside
      // one, let it run a little and try again.
      type Held = { backend: number; pipeline_id: bigint; application_id: number; stage_id: bigint };
      let held: Held | undefined;
      for (let attempt = 0; attempt < 400 && held === undefined; attempt += 1) {
        process.kill(pid, 'SIGSTOP');
        [held] = await cluster.database.db.$queryRawUnsafe<Held[]>(
          `SELECT a.pid AS backend, p.id AS pipeline_id, p.application_id, (SELECT min(s.id) FROM stages s WHERE s.pipeline_id = p.id) AS stage_id
           FROM pg_stat_activity a, pgrowlocks('pipelines') l JOIN pipelines p ON p.ctid = l.locked_row
           WHERE a.datname = current_database() AND a.client_port = ANY($1::int[]) AND a.xact_start IS NOT NULL AND a.pid = ANY(l.pids)
           LIMIT 1`,
          [...localPortsOf(pid)],
        );
        if (held === undefined) {
          process.kill(pid, 'SIGCONT');
          await sleep(5 + Math.random() * 40);
        }
      }
      expect(held, 'result-consumer-1 was never caught holding pipeline locks').toBeDefined();
      const backend = held!.backend;
      const frozenAt = Date.now();
      const completed = async () =>
        Number((await cluster.database.db.$queryRawUnsafe<{ n: bigint }[]>(`SELECT count(*) AS n FROM pipelines WHERE status = 'Completed'`))[0]!.n);
      const completedAtFreeze = await completed();

      // A request on a pipeline the frozen transaction holds (resuming one of its stages, which locks
      // the pipeline first, as the engine does) waits at most lock_timeout, then answers 503.
      const resumeStarted = Date.now();
      const resuming = call(cluster.apiUrl, 'POST', `/stages/${held!.stage_id}/resume`, {
        json: { approved: true },
        headers: { 'x-api-key': keyOf.get(held!.application_id)! },
      }).then((reply) => ({ reply, ms: Date.now() - resumeStarted }));

      // While it is frozen: how long anyone waits on a lock, and when its backend is gone.
      let longestLockWaitMs = 0;
      let endedAfterMs: number | undefined;
      while (Date.now() - frozenAt < IDLE_IN_TRANSACTION_MS + 4000) {
        const { rows } = await admin.query<{ waited_ms: number | null; frozen_alive: boolean }>(
          `SELECT (SELECT max(extract(epoch FROM clock_timestamp() - query_start) * 1000) FROM pg_stat_activity
                    WHERE datname = $1 AND wait_event_type = 'Lock')::float8 AS waited_ms,
                  EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $2) AS frozen_alive`,
          [database, backend],
        );
        longestLockWaitMs = Math.max(longestLockWaitMs, rows[0]!.waited_ms ?? 0);
        if (!rows[0]!.frozen_alive && endedAfterMs === undefined) endedAfterMs = Date.now() - frozenAt;
        await sleep(50);
      }
      const completedWhileFrozen = (await completed()) - completedAtFreeze;
      const { reply: resume, ms: resumeMs } = await resuming;
      process.kill(pid, 'SIGCONT');
      console.log(
        `[frozen] backend ${backend} ended ${endedAfterMs} ms after the freeze; a request on its pipeline answered ${resume.status} after ${resumeMs} ms; longest lock wait seen ${Math.round(longestLockWaitMs)} ms; ${completedWhileFrozen} pipelines completed while frozen`,
      );
      expect(resume.status).toBe(503);
      expect(resumeMs).toBeGreaterThanOrEqual(LOCK_MS - 100);
      expect(resumeMs).toBeLessThan(LOCK_MS + 700);

      expect(endedAfterMs, 'the frozen transaction was not ended by idle_in_transaction_session_timeout').toBeDefined();
      expect(endedAfterMs!).toBeLessThan(IDLE_IN_TRANSACTION_MS + 1500);
      expect(longestLockWaitMs).toBeLessThan(LOCK_MS + 500);
      expect(completedWhileFrozen).toBeGreaterThan(0);

      const ids = await creating;
      const problems = (await Promise.all(ids.map((batch, i) => streamProblems(cluster, keys[i]!, batch, 60_000)))).flat();
      expect({ created: ids.map((b) => b.length), problems, unready: await unreadyServices(cluster) }).toEqual({ created: [80, 80], problems: [], unready: [] });
      expect(frozen.running).toBe(true);
    } finally {
      await admin.end();
    }
  });
});
