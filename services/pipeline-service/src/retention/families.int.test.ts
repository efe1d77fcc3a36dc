// Retention of worker events, worker sessions (and idle workers), schedule runs and system logs
// (issue 10 item 6, decision 0083), each by its own setting, over real PostgreSQL.
import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteOldSystemLogs, sqlOf } from '@po/db';
import { createLogger } from '@po/telemetry';
import { createTestDatabase, type TestDatabase } from '@po/testing';
import { retentionRound, type RetentionDeps, type RetentionOptions } from './cleanup.js';

let database: TestDatabase;
let deps: RetentionDeps;
let applicationId: number;
const logLines: string[] = [];

const DEFAULTS: RetentionOptions = {
  days: { pipelines: 30, workerEvents: 7, workerSessions: 7, scheduleRuns: 30, systemLogs: 30 },
  batchSize: 500,
  intervalMs: 60_000,
};
const FOREVER: RetentionOptions = {
  ...DEFAULTS,
  days: { pipelines: 0, workerEvents: 0, workerSessions: 0, scheduleRuns: 0, systemLogs: 0 },
};

beforeAll(async () => {
  database = await createTestDatabase();
  applicationId = (await database.db.application.create({ data: { name: 'families' } })).id;
  const logger = createLogger({
    service: 'pipeline-service',
    destination: new Writable({
      write(chunk: Buffer, _e, done) {
        logLines.push(chunk.toString());
        done();
      },
    }),
  });
  deps = { db: database.db, logger, clock: () => new Date() };
});

afterAll(async () => {
  await database.drop();
});

const db = () => database.db;
const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000);
const hash = () => randomBytes(32).toString('hex');

async function worker(touchedDaysAgo: number): Promise<string> {
  const id = randomUUID();
  await db().worker.create({ data: { id, applicationId, instanceId: `i-${id}`, handlers: ['h'] } });
  // After the create: Prisma's @updatedAt would overwrite a value given to it.
  await db()
    .$executeRaw`UPDATE workers SET updated_at = ${daysAgo(touchedDaysAgo)} WHERE id = ${id}`;
  return id;
}

const session = (workerId: string, s: { expiresDaysAgo: number; supersededDaysAgo?: number }) =>
  db().workerSession.create({
    data: {
      tokenHash: hash(),
      workerId,
      applicationId,
      createdAt: daysAgo(s.expiresDaysAgo + 1),
      expiresAt: daysAgo(s.expiresDaysAgo),
      supersededAt: s.supersededDaysAgo === undefined ? null : daysAgo(s.supersededDaysAgo),
    },
  });

async function event(workerId: string, createdDaysAgo: number): Promise<bigint> {
  // `at` is the worker's clock and says nothing: retention goes by the server's created_at.
  const row = await db().workerEvent.create({
    data: {
      workerId,
      applicationId,
      kind: 'log',
      at: new Date(),
      createdAt: daysAgo(createdDaysAgo),
    },
  });
  return row.id;
}

async function systemLog(createdDaysAgo: number, created = new Date()): Promise<bigint> {
  const row = await db().systemLog.create({
    data: { applicationId: null, message: 'm', created, createdAt: daysAgo(createdDaysAgo) },
  });
  return row.id;
}

const exists = {
  event: async (id: bigint) => (await db().workerEvent.count({ where: { id } })) === 1,
  session: async (tokenHash: string) =>
    (await db().workerSession.count({ where: { tokenHash } })) === 1,
  worker: async (id: string) => (await db().worker.count({ where: { id } })) === 1,
  log: async (id: bigint) => (await db().systemLog.count({ where: { id } })) === 1,
  run: async (id: bigint) => (await db().scheduleRun.count({ where: { id } })) === 1,
};

describe('worker events (RETENTION_WORKER_EVENTS_DAYS, default 7)', () => {
  it('deletes events recorded more than 7 days ago and keeps newer ones', async () => {
    const w = await worker(0);
    const old = await event(w, 8);
    const young = await event(w, 6);
    await retentionRound(deps, DEFAULTS);
    expect(await exists.event(old)).toBe(false);
    expect(await exists.event(young)).toBe(true);
  });
});

describe('worker sessions (RETENTION_WORKER_SESSIONS_DAYS, default 7)', () => {
  it('deletes sessions that expired or were superseded more than 7 days ago; keeps live and recently ended ones', async () => {
    const w = await worker(0);
    const expired = await session(w, { expiresDaysAgo: 8 });
    const superseded = await session(w, { expiresDaysAgo: -300, supersededDaysAgo: 8 });
    const recentlyExpired = await session(w, { expiresDaysAgo: 6 });
    const live = await session(w, { expiresDaysAgo: -1 });
    await retentionRound(deps, DEFAULTS);
    expect(await exists.session(expired.tokenHash)).toBe(false);
    expect(await exists.session(superseded.tokenHash)).toBe(false);
    expect(await exists.session(recentlyExpired.tokenHash)).toBe(true);
    expect(await exists.session(live.tokenHash)).toBe(true);
    expect(await exists.worker(w)).toBe(true);
  });

  it('deletes a worker untouched for 7 days once it has no session and no event left; keeps one that still has either', async () => {
    const idle = await worker(9);
    await session(idle, { expiresDaysAgo: 8 });
    await event(idle, 8);
    const withEvent = await worker(9);
    await event(withEvent, 1);
    const withSession = await worker(9);
    await session(withSession, { expiresDaysAgo: -1 });
    const recent = await worker(1);

    await retentionRound(deps, DEFAULTS);

    expect(await exists.worker(idle)).toBe(false);
    expect(await exists.worker(withEvent)).toBe(true);
    expect(await exists.worker(withSession)).toBe(true);
    expect(await exists.worker(recent)).toBe(true);
  });
});

describe('system logs (RETENTION_SYSTEM_LOGS_DAYS, default 30)', () => {
  it("deletes lines stored more than 30 days ago, by the server's time, not the caller's `created`", async () => {
    const old = await systemLog(31);
    const young = await systemLog(29, new Date('2001-01-01T00:00:00Z'));
    await retentionRound(deps, DEFAULTS);
    expect(await exists.log(old)).toBe(false);
    expect(await exists.log(young)).toBe(true);
  });
});

describe('webhook deliveries (with the pipelines: RETENTION_PIPELINES_DAYS, default 30)', () => {
  it('deletes ended deliveries created more than 30 days ago; keeps newer ones and any still Pending', async () => {
    const app = (await db().application.create({ data: { name: 'hooks' } })).id;
    const [hook] = await db().$queryRaw<
      { id: bigint }[]
    >`INSERT INTO webhooks (application_id, name, url, events, secret)
      VALUES (${app}, 'h', 'http://hooks.example/h', ARRAY['pipeline.failed'], 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0') RETURNING id`;
    const delivery = async (id: string, status: string, createdDaysAgo: number) =>
      db()
        .$executeRaw`INSERT INTO webhook_deliveries (id, application_id, webhook_id, event_type, body, status, created_at)
        VALUES (${id}, ${app}, ${hook!.id}, 'pipeline.failed', '{}', ${status}, ${daysAgo(createdDaysAgo)})`;
    await delivery('msg_old_delivered', 'Delivered', 31);
    await delivery('msg_old_failed', 'Failed', 31);
    await delivery('msg_old_pending', 'Pending', 31);
    await delivery('msg_young', 'Delivered', 29);
    await retentionRound(deps, DEFAULTS);
    const left = await db().$queryRaw<
      { id: string }[]
    >`SELECT id FROM webhook_deliveries WHERE application_id = ${app} ORDER BY id`;
    expect(left.map((r) => r.id)).toEqual(['msg_old_pending', 'msg_young']);
  });
});

describe('schedule runs (RETENTION_SCHEDULE_RUNS_DAYS, default 30)', () => {
  it('deletes old runs but keeps what the scheduler and the schedule reads need', async () => {
    const anchor = new Date();
    const schedule = await db().schedule.create({
      data: {
        applicationId,
        name: 'hourly',
        nameKey: 'hourly',
        kind: 'Interval',
        intervalSeconds: 3600,
        definition: {},
        planAnchor: anchor,
      },
    });
    const live = await db().pipeline.create({
      data: {
        applicationId,
        name: 'live',
        traceId: randomUUID(),
        status: 'Running',
        scheduleId: schedule.id,
      },
    });
    const runs: bigint[] = [];
    const add = async (r: {
      createdDaysAgo: number;
      status?: string;
      tick?: Date | null;
      pipelineId?: bigint;
    }) => {
      const tick =
        r.tick === undefined
          ? new Date(anchor.getTime() - (1000 - runs.length) * 3_600_000)
          : r.tick;
      const row = await db().scheduleRun.create({
        data: {
          scheduleId: schedule.id,
          applicationId,
          trigger: tick === null ? 'Manual' : 'Scheduled',
          status: r.status ?? 'Skipped',
          scheduledFor: tick ?? daysAgo(r.createdDaysAgo),
          tick,
          pipelineId: r.pipelineId ?? null,
          createdAt: daysAgo(r.createdDaysAgo),
        },
      });
      runs.push(row.id);
      return row.id;
    };
    const oldSkipped = await add({ createdDaysAgo: 40 });
    const oldManual = await add({ createdDaysAgo: 40, tick: null, status: 'Failed' });
    const oldQueued = await add({ createdDaysAgo: 40, status: 'Queued' });
    const oldWithLivePipeline = await add({
      createdDaysAgo: 40,
      status: 'Created',
      pipelineId: live.id,
    });
    // A tick the plan has not passed yet (its unique (schedule, tick) must keep refusing a second run).
    const oldUnpassedTick = await add({
      createdDaysAgo: 40,
      tick: new Date(anchor.getTime() + 3_600_000),
    });
    const young = await add({ createdDaysAgo: 29 });
    // The newest 20 runs stay whatever their age: last-run fields and health read them.
    const window: bigint[] = [];
    for (let i = 0; i < 20; i++) window.push(await add({ createdDaysAgo: 35 }));

    await retentionRound(deps, DEFAULTS);

    expect(await exists.run(oldSkipped)).toBe(false);
    expect(await exists.run(oldManual)).toBe(false);
    expect(await exists.run(oldQueued)).toBe(true);
    expect(await exists.run(oldWithLivePipeline)).toBe(true);
    expect(await exists.run(oldUnpassedTick)).toBe(true);
    expect(await exists.run(young)).toBe(true);
    for (const id of window) expect(await exists.run(id)).toBe(true);
  });
});

describe('0 days keeps a family forever', () => {
  it('with every setting at 0 nothing is deleted, however old', async () => {
    const w = await worker(400);
    const s = await session(w, { expiresDaysAgo: 400 });
    const e = await event(w, 400);
    const log = await systemLog(400);
    const report = await retentionRound(deps, FOREVER);
    expect(report.size).toBe(0);
    expect([
      await exists.worker(w),
      await exists.session(s.tokenHash),
      await exists.event(e),
      await exists.log(log),
    ]).toEqual([true, true, true, true]);

    // One family at 0 is kept while the others are cleaned.
    await retentionRound(deps, { ...DEFAULTS, days: { ...DEFAULTS.days, systemLogs: 0 } });
    expect(await exists.log(log)).toBe(true);
    expect(await exists.event(e)).toBe(false);
  });
});

describe('batches (RETENTION_BATCH_SIZE)', () => {
  it('a batch deletes at most the batch size; the round repeats full batches and stops after a short one, and logs the counts', async () => {
    await retentionRound(deps, DEFAULTS);
    const ids = [];
    for (let i = 0; i < 7; i++) ids.push(await systemLog(31 + i));

    const one = await deleteOldSystemLogs(sqlOf(db()), daysAgo(30), 3);
    expect(one).toEqual({ deleted: { system_logs: 3 }, taken: 3 });
    // Oldest first.
    expect(await exists.log(ids[6]!)).toBe(false);
    expect(await exists.log(ids[3]!)).toBe(true);

    logLines.length = 0;
    const report = await retentionRound(deps, { ...DEFAULTS, batchSize: 3 });
    // 4 left: a full batch of 3, then a short one of 1.
    expect(report.get('systemLogs')).toEqual({ deleted: { system_logs: 4 }, batches: 2 });
    for (const id of ids) expect(await exists.log(id)).toBe(false);
    expect(
      logLines.some(
        (l) => l.includes('retention deleted old rows') && l.includes('"system_logs":4'),
      ),
    ).toBe(true);
  });
});
