// `npm run bench` (schedules part): BENCH_SCHEDULES (1000) Once schedules, all due in the same
// second, against the services started as processes; reports the lag from each planned fire time
// (run.scheduledFor, jitter 0) to the creation of its pipeline (pipeline.createdAt).
// Not a test: it asserts nothing, it measures. BENCH_SCHEDULE_LEAD_SECONDS (15): how far ahead
// the common runAt is placed, so every PUT is done before it.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { percentile, startBenchCluster } from './cluster.mjs';

const SCHEDULES = Number(process.env.BENCH_SCHEDULES ?? 1000);
const LEAD_SECONDS = Number(process.env.BENCH_SCHEDULE_LEAD_SECONDS ?? 15);
const CREATORS = 16;

export async function benchSchedules(log = console.log) {
  const cluster = await startBenchCluster({ label: 'schedules' });
  const db = new pg.Client({ connectionString: cluster.env.DATABASE_URL });
  await db.connect();
  try {
    // A whole second, so "all due in the same second" holds to the millisecond.
    const runAt = new Date(Math.ceil((Date.now() + LEAD_SECONDS * 1000) / 1000) * 1000);
    const definition = { name: 'bench-scheduled', stages: [{ stageName: 'only', stageHandlerName: 'bench-idle', input: 'x' }] };
    let next = 0;
    const failures = [];
    await Promise.all(
      Array.from({ length: CREATORS }, async () => {
        while (next < SCHEDULES) {
          const i = next++;
          const res = await fetch(`${cluster.apiUrl}/schedules/bench-${i}`, {
            method: 'PUT',
            headers: { 'content-type': 'application/json', 'x-api-key': cluster.apiKey },
            body: JSON.stringify({ kind: 'Once', runAt: runAt.toISOString(), definition }),
          });
          if (res.status !== 201) failures.push(`${res.status} ${await res.text()}`);
        }
      }),
    );
    if (failures.length > 0) throw new Error(`schedule creation failed: ${failures.slice(0, 3).join(' | ')}`);
    const createdBeforeRunAt = Date.now() < runAt.getTime();

    // Wait for every run (a minute past runAt at most), then read the lags.
    const deadline = runAt.getTime() + 60_000;
    let fired = 0;
    while (Date.now() < deadline) {
      fired = Number((await db.query(`SELECT count(*) AS n FROM schedule_runs WHERE trigger <> 'Manual'`)).rows[0].n);
      if (fired >= SCHEDULES) break;
      await sleep(250);
    }
    const { rows } = await db.query(`
      SELECT r.status, r.scheduled_for, p.created_at
      FROM schedule_runs r LEFT JOIN pipelines p ON p.id = r.pipeline_id
      WHERE r.trigger <> 'Manual'`);
    const lags = rows.filter((r) => r.created_at !== null).map((r) => r.created_at.getTime() - r.scheduled_for.getTime());
    const result = {
      schedules: SCHEDULES,
      runs: rows.length,
      pipelinesCreated: lags.length,
      createdBeforeRunAt,
      fireToPipelineCreatedMs: { p50: percentile(lags, 50), p99: percentile(lags, 99), max: lags.length > 0 ? Math.max(...lags) : null },
    };
    log(JSON.stringify({ bench: 'schedules', ...result }));
    return result;
  } finally {
    await db.end();
    await cluster.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchSchedules();
