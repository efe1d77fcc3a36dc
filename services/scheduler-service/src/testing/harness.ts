// Integration harness: a scheduler over its own database and queue prefix, driven by a fake clock.
// Schedules are written through @po/db the way the api-gateway writes them (the services never
// import each other); the scheduler itself runs exactly as in production, one pass per call.
import { Writable } from 'node:stream';
import {
  createApplication,
  createDb,
  insertSchedule,
  listRuns,
  skipQueuedRuns,
  updateSchedule,
  type Db,
  type ScheduleRecord,
  type ScheduleSettingsWrite,
} from '@po/db';
import type { PipelineStatus } from '@po/domain';
import { createPipelineEventsProducer, createRedis } from '@po/queues';
import { createLogger } from '@po/telemetry';
import { TEST_REDIS_URL, cleanupRedisPrefix, createTestDatabase, testQueuePrefix } from '@po/testing';
import type { SchedulerDeps } from '../scheduler/deps.js';
import { replanFrom } from '../scheduler/due-ticks.js';
import { runDuePass } from '../scheduler/pass.js';

export const T0 = new Date('2030-03-04T10:00:00.000Z');

const definition = { name: 'scheduled', stages: [{ stageName: 'work', stageHandlerName: 'worker', input: 'payload' }] };

export async function startScheduler(options: { misfireGraceSeconds?: number } = {}) {
  const database = await createTestDatabase();
  const prefix = testQueuePrefix('sched');
  const redis = createRedis(TEST_REDIS_URL, 'producer');
  const events = createPipelineEventsProducer(redis, prefix);
  const logLines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const clock = { now: T0 };
  const app = await createApplication(database.db, 'A');
  const replicas: Db[] = [];

  function depsOn(db: Db): SchedulerDeps {
    const logger = createLogger({ service: 'scheduler-service', level: 'info', destination });
    return { db, events, logger, clock: () => clock.now, misfireGraceSeconds: options.misfireGraceSeconds ?? 60 };
  }
  const deps = depsOn(database.db);
  let seq = 0;

  return {
    db: database.db,
    deps,
    clock,
    logLines,
    applicationId: app.id,
    advance(ms: number) {
      clock.now = new Date(clock.now.getTime() + ms);
    },
    /** One scheduler pass at the fake clock's now. */
    pass: (concurrency = 1) => runDuePass(deps, { concurrency }),
    /** Another scheduler replica: its own connection pool over the same database. */
    replica(): SchedulerDeps {
      const db = createDb(database.url, { max: 6 });
      replicas.push(db);
      return depsOn(db);
    },
    /** Creates an Active schedule planned from now, as PUT does. */
    async createSchedule(settings: Partial<ScheduleSettingsWrite> & { kind: ScheduleSettingsWrite['kind'] }): Promise<ScheduleRecord> {
      const now = clock.now;
      const inserted = await insertSchedule(database.db, {
        applicationId: app.id,
        name: `schedule-${++seq}`,
        now,
        cronExpression: null,
        intervalSeconds: null,
        runAt: null,
        timeZone: 'UTC',
        definition,
        overlapPolicy: 'Skip',
        catchupPolicy: 'None',
        catchupMax: 10,
        jitterSeconds: 0,
        planAnchor: now,
        nextTickAt: null,
        nextRunAt: null,
        handledThrough: null,
        ...settings,
      });
      return updateSchedule(database.db, inserted.id, replanFrom(inserted, now));
    },
    /** As POST pause: Paused, unplanned, Queued runs Skipped. */
    async pause(scheduleId: number) {
      await skipQueuedRuns(database.db, scheduleId, 'paused');
      return updateSchedule(database.db, scheduleId, { status: 'Paused', planAnchor: clock.now, nextTickAt: null, nextRunAt: null });
    },
    /** As POST resume of a Paused schedule: Active, re-planned from now. */
    async resume(schedule: ScheduleRecord) {
      return updateSchedule(database.db, schedule.id, { status: 'Active', ...replanFrom(schedule, clock.now) });
    },
    async schedule(scheduleId: number): Promise<ScheduleRecord> {
      const s = await database.db.schedule.findUniqueOrThrow({ where: { id: BigInt(scheduleId) } });
      return { ...s, id: Number(s.id) };
    },
    /** The schedule's runs, oldest first, with the live status of their pipelines. */
    async runs(scheduleId: number) {
      return (await listRuns(database.db, scheduleId, { take: 10_000 })).reverse();
    },
    async setPipelineStatus(pipelineId: number, status: PipelineStatus) {
      await database.db.pipeline.update({ where: { id: BigInt(pipelineId) }, data: { status, finishedAt: ['Completed', 'Failed', 'Cancelled'].includes(status) ? clock.now : null } });
    },
    async close() {
      await Promise.all(replicas.map((db) => db.$disconnect()));
      await events.close();
      await cleanupRedisPrefix(prefix);
      await redis.quit();
      await database.drop();
    },
  };
}

export type SchedulerHarness = Awaited<ReturnType<typeof startScheduler>>;
