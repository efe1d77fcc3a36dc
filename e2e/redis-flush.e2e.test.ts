import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';
import { errorLines, unfinishedCount, unreadyServices } from './support/pipeline-stream.js';
import { RedisServer } from './support/redis-server.js';

const PIPELINES = 36;
const PACE_MS = 120;
/** The FLUSHALL comes this long after the first creation: creations keep coming across it. */
const FLUSH_AFTER_MS = 2500;
/** A 202'd result the FLUSHALL took is noticed when its lease lapses (60 s), then the stage runs again. */
const SETTLE_MS = 100_000;
const RETRIES = { maxRetries: 3, retryInterval: 1 };

interface Planned {
  stage: { stageName: string; stageHandlerName: string; input: string; options: Record<string, unknown> };
  output: string;
  /** The handler's log line on success: it arrives with the result, so it counts applications. */
  successLog: string;
  /** Results the stage's handler returns before it succeeds (flaky: one failure). */
  failures: number;
}

/**
 * Pipeline i: sleep, then (every 4th) flaky failing once with a 3-second retry — a delayed
 * pipeline.wake that lives only in Redis — or sleep, then echo. Every stage may retry, so a
 * result the FLUSHALL took after its 202 ends as LEASE_EXPIRED and runs again.
 */
function plan(i: number): Planned[] {
  const sleeper = (name: string): Planned => ({
    stage: { stageName: name, stageHandlerName: 'sleep', input: '{"ms":250}', options: RETRIES },
    output: '{"slept":250}',
    successLog: 'slept 250 ms',
    failures: 0,
  });
  const flaky: Planned = {
    stage: { stageName: 'middle', stageHandlerName: 'flaky', input: '{"failures":1}', options: { maxRetries: 3, retryInterval: 3 } },
    output: '{"attempt":2}',
    successLog: 'succeeded on attempt',
    failures: 1,
  };
  const echo: Planned = {
    stage: { stageName: 'last', stageHandlerName: 'echo', input: `last-${i}`, options: RETRIES },
    output: `last-${i}`,
    successLog: 'echoing',
    failures: 0,
  };
  return [sleeper('first'), i % 4 === 0 ? flaky : sleeper('middle'), echo];
}

/**
 * Issue 29 item 3, decision 0124: Redis loses everything (FLUSHALL) while pipelines run, on a Redis
 * of the test's own. What lived only there — StageNext messages of Pending stages, pipeline events
 * (a creation's, a retry's delayed wake-up), results accepted but not yet applied (result-consumer
 * is stopped from a second before until just after it) — is gone. The pipeline-service sees its
 * marker vanish and walks every waiting execution at once; lost events are due passes the sweep
 * runs; a lost result ends its execution by lease expiry (a lease after it was granted) and the
 * stage runs again. Every pipeline completes, and no result is applied twice.
 */
describe('Redis FLUSHALL while pipelines run', () => {
  let redis: RedisServer;
  let cluster: Cluster;
  let key: string;

  beforeAll(async () => {
    redis = await RedisServer.start();
    cluster = await startCluster({ redisUrl: redis.url, replicas: { 'scheduler-service': 0 } });
    ({ apiKey: key } = await cluster.createApp('redis-flush'));
    cluster.startWorker('worker', {
      PO_BASE_URL: cluster.apiUrl,
      PO_WORKER_BASE_URL: cluster.workerUrl,
      PO_API_KEY: key,
      PO_INSTANCE_ID: 'redis-flush',
      PO_HANDLERS: 'sleep,flaky,echo',
      PO_CONCURRENCY: '4',
    });
  }, 60_000);

  afterAll(async () => {
    const errors = cluster ? errorLines(cluster) : [];
    if (errors.length) console.log(`[redis-flush] ${errors.length} error lines from the services, the first:\n${errors.slice(0, 5).join('\n')}`);
    await cluster?.stop();
    await redis?.destroy();
  }, 60_000);

  it('every pipeline completes, each stage once: lost messages republished at once, lost events and results recovered', async () => {
    const headers = { 'x-api-key': key };
    const started = Date.now();
    let flushedAt = 0;
    const flush = (async () => {
      // From a second before the FLUSHALL, results the gateway accepts (202) wait unapplied in Redis.
      await sleep(FLUSH_AFTER_MS - 1000);
      const consumer = cluster.process('result-consumer');
      await consumer.stop();
      await sleep(Math.max(0, started + FLUSH_AFTER_MS - Date.now()));
      const client = new Redis(redis.url);
      try {
        await client.flushall();
        flushedAt = Date.now();
      } finally {
        client.disconnect();
      }
      consumer.start();
      await consumer.waitReady();
      const [counts] = await cluster.database.db.$queryRaw<{ pending: bigint; running: bigint }[]>`
        SELECT COUNT(*) FILTER (WHERE status = 'Pending') AS pending, COUNT(*) FILTER (WHERE status = 'Running') AS running FROM stages`;
      return counts!;
    })();
    const ids: number[] = [];
    for (let i = 0; i < PIPELINES; i += 1) {
      const [id] = await Promise.all([
        waitFor(`creation of flush-${i}`, async () => {
          const r = await call(cluster.apiUrl, 'POST', '/pipelines/idempotent', {
            json: { idempotencyKey: `flush-${i}`, name: `flush-${i}`, stages: plan(i).map((p) => p.stage) },
            headers,
          });
          return r.status === 200 || r.status === 201 ? (r.body.pipeline.id as number) : undefined;
        }, 30_000, 200),
        sleep(PACE_MS),
      ]);
      ids.push(id);
    }
    const atFlush = await flush;

    await waitFor('every pipeline terminal', async () => ((await unfinishedCount(cluster)) === 0 ? true : undefined), SETTLE_MS, 500).catch(() => undefined);
    const settledSeconds = Math.round((Date.now() - flushedAt) / 100) / 10;

    const problems: string[] = [];
    const finals = await Promise.all(ids.map(async (id) => (await call(cluster.apiUrl, 'GET', `/pipelines/${id}`, { headers })).body));
    const rows = await cluster.database.db.$queryRaw<{ stage_id: bigint; ends: (string | null)[] }[]>`
      SELECT s.id AS stage_id, array_agg(e.end_reason ORDER BY e.dispatched_at) AS ends
      FROM stages s JOIN stage_executions e ON e.stage_id = s.id GROUP BY s.id`;
    const ends = new Map(rows.map((r) => [Number(r.stage_id), r.ends]));
    let expired = 0;
    finals.forEach((p, i) => {
      const where = `pipeline ${ids[i]} (#${i})`;
      if (p.status !== 'Completed') {
        problems.push(`${where} is ${p.status}: ${p.stages.map((s: { name: string; status: string; attempt: number }) => `${s.name}:${s.status}#${s.attempt}`).join(' ')}`);
        return;
      }
      plan(i).forEach((want, position) => {
        const s = p.stages[position];
        const at = `${where} stage ${want.stage.stageName}`;
        const applied = s.logs.filter((l: { message: string }) => l.message.startsWith(want.successLog)).length;
        const e = ends.get(s.id) ?? [];
        expired += e.filter((end) => end === 'LEASE_EXPIRED').length;
        if (s.output !== want.output) problems.push(`${at}: output ${JSON.stringify(s.output)}, expected ${JSON.stringify(want.output)}`);
        if (applied !== 1) problems.push(`${at}: successful result applied ${applied} times (handler log lines)`);
        // One execution per attempt (a republished message is the same execution), each ended once:
        // by a result, or by lease expiry when Redis lost its 202'd result; the last by the success.
        if (e.length !== s.attempt) problems.push(`${at}: ${e.length} executions for attempt ${s.attempt}`);
        if (e.at(-1) !== 'result' || e.some((end) => end !== 'result' && end !== 'LEASE_EXPIRED')) problems.push(`${at}: executions ended ${JSON.stringify(e)}`);
        if (e.filter((end) => end === 'result').length > want.failures + 1) problems.push(`${at}: ${JSON.stringify(e)}: more results than the handler returned`);
      });
    });
    const serviceLines = cluster.allLines();
    const republished = serviceLines
      .filter((l) => l.includes('republished lost StageNext messages'))
      .reduce((n, l) => n + Number(/"republished":(\d+)/.exec(l)?.[1] ?? 0), 0);
    const lossSeen = serviceLines.some((l) => l.includes('Redis lost writes'));
    console.log(
      `[redis-flush] FLUSHALL ${Math.round((flushedAt - started) / 100) / 10} s in, with ${atFlush.pending} stages Pending and ${atFlush.running} Running; ` +
        `${republished} messages republished; every pipeline terminal ${settledSeconds} s after it; ${expired} executions ended by lease expiry (202'd results the FLUSHALL took)`,
    );

    expect({ problems, lossSeen, republishedSome: republished > 0, unready: await unreadyServices(cluster) }).toEqual({
      problems: [],
      lossSeen: true,
      republishedSome: true,
      unready: [],
    });
  }, 150_000);
});
