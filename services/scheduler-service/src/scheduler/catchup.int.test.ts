// Catch-up and the misfire grace (addendum §14.6), pause/resume (§14.7), Once and Cron planning
// (§14.3) and jitter (§14.4), driven by the scheduler's pass with a fake clock.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jitterOffsetMs } from '@po/domain';
import { T0, startScheduler, type SchedulerHarness } from '../testing/harness.js';

let h: SchedulerHarness;
beforeAll(async () => {
  h = await startScheduler({ misfireGraceSeconds: 60 });
});
afterAll(async () => {
  await h?.close();
});
// Each test starts at T0 with only its own schedules Active.
beforeEach(() => {
  h.clock.now = T0;
});
afterEach(async () => {
  await h.db.schedule.updateMany({
    data: { status: 'Archived', nextTickAt: null, nextRunAt: null },
  });
});

const MINUTE = 60_000;
const HOUR = 3_600_000;
const tickTimes = async (scheduleId: number) =>
  (await h.runs(scheduleId)).map((r) => [r.trigger, r.scheduledFor.toISOString()]);

describe('catch-up after an outage (the clock jumps 1 h)', () => {
  const outage = async (catchupPolicy: string, catchupMax = 10) => {
    const s = await h.createSchedule({
      kind: 'Interval',
      intervalSeconds: 600,
      catchupPolicy,
      catchupMax,
      overlapPolicy: 'Allow',
    });
    const start = h.clock.now.getTime();
    h.advance(HOUR + 90_000); // ticks at +10 min .. +60 min were due while no scheduler ran
    await h.pass();
    return { s, tick: (k: number) => new Date(start + k * 600_000).toISOString() };
  };

  it('None: creates nothing for the missed ticks; the next tick is the first after now', async () => {
    const { s, tick } = await outage('None');
    expect(await h.runs(s.id)).toEqual([]);
    expect((await h.schedule(s.id)).nextRunAt!.toISOString()).toBe(tick(7));
    expect(h.logLines.some((l) => l.includes('"missed":6'))).toBe(true);
  });

  it('writes a schedule.run_missed webhook event in the firing transaction; ticks within the grace write none', async () => {
    await h.db.$executeRaw`INSERT INTO webhooks (application_id, name, url, events, secret)
      VALUES (${h.applicationId}, 'missed', 'http://hooks.example/missed', ARRAY['schedule.run_missed'], 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0')`;
    const events = () =>
      h.db.$queryRaw<
        { body: string }[]
      >`SELECT body FROM webhook_deliveries WHERE application_id = ${h.applicationId} ORDER BY created_at`;
    try {
      const onTime = await h.createSchedule({
        kind: 'Interval',
        intervalSeconds: 600,
        overlapPolicy: 'Allow',
      });
      h.advance(600_000 + 30_000); // within the 60 s grace
      await h.pass();
      expect((await h.runs(onTime.id)).map((r) => r.trigger)).toEqual(['Scheduled']);
      expect(await events()).toEqual([]);
      await h.db.schedule.updateMany({
        data: { status: 'Archived', nextTickAt: null, nextRunAt: null },
      });

      // A Replace schedule fires in the guarded path (its own Prisma transaction), the other in the batch.
      const replace = await h.createSchedule({
        kind: 'Interval',
        intervalSeconds: 600,
        overlapPolicy: 'Replace',
        catchupPolicy: 'All',
        catchupMax: 2,
      });
      const { s } = await outage('One');
      const bySchedule = new Map(
        (await events()).map((e) => [
          JSON.parse(e.body).data.scheduleId as number,
          JSON.parse(e.body),
        ]),
      );
      expect(bySchedule.get(s.id)).toMatchObject({
        type: 'schedule.run_missed',
        data: { scheduleId: s.id, scheduleName: s.name, missedTicks: 6, catchupRuns: 1 },
      });
      expect(bySchedule.get(replace.id)).toMatchObject({
        type: 'schedule.run_missed',
        data: {
          scheduleId: replace.id,
          scheduleName: replace.name,
          missedTicks: 6,
          catchupRuns: 2,
        },
      });
      expect(await events()).toHaveLength(2);
    } finally {
      await h.db.$executeRaw`DELETE FROM webhooks WHERE application_id = ${h.applicationId}`;
    }
  });

  it('One: one Catchup run, for the latest missed tick', async () => {
    const { s, tick } = await outage('One');
    expect(await tickTimes(s.id)).toEqual([['Catchup', tick(6)]]);
    expect((await h.runs(s.id))[0]).toMatchObject({
      status: 'Created',
      pipelineStatus: 'NotStarted',
    });
    expect((await h.schedule(s.id)).nextRunAt!.toISOString()).toBe(tick(7));
  });

  it('All: runs for the latest catchupMax missed ticks, oldest first', async () => {
    const { s, tick } = await outage('All', 4);
    expect(await tickTimes(s.id)).toEqual([3, 4, 5, 6].map((k) => ['Catchup', tick(k)]));
    expect((await h.schedule(s.id)).nextRunAt!.toISOString()).toBe(tick(7));
  });

  it('All with room for every missed tick', async () => {
    const { s, tick } = await outage('All', 1000);
    expect(await tickTimes(s.id)).toEqual([1, 2, 3, 4, 5, 6].map((k) => ['Catchup', tick(k)]));
  });

  it('catch-up runs pass through overlap: under Skip only the first creates', async () => {
    const s = await h.createSchedule({
      kind: 'Interval',
      intervalSeconds: 600,
      catchupPolicy: 'All',
      overlapPolicy: 'Skip',
    });
    h.advance(HOUR + 90_000);
    await h.pass();
    expect((await h.runs(s.id)).map((r) => [r.trigger, r.status, r.reason])).toEqual([
      ['Catchup', 'Created', null],
      ...Array.from({ length: 5 }, () => ['Catchup', 'Skipped', 'overlap']),
    ]);
  });

  it('a year-long outage of a 10-second schedule costs the same: counted, not walked', async () => {
    const s = await h.createSchedule({
      kind: 'Interval',
      intervalSeconds: 10,
      catchupPolicy: 'All',
      catchupMax: 3,
      overlapPolicy: 'Allow',
    });
    const start = h.clock.now.getTime();
    h.advance(365 * 24 * HOUR + 5000);
    const now = h.clock.now.getTime();
    const started = performance.now();
    await h.pass();
    expect(performance.now() - started).toBeLessThan(5000);
    const ticks = Array.from(
      { length: Math.floor((now - start) / 10_000) },
      (_, i) => start + (i + 1) * 10_000,
    );
    const missed = ticks.filter((t) => now - t > 60_000);
    const withinGrace = ticks.filter((t) => now - t <= 60_000);
    expect(withinGrace).toHaveLength(6);
    expect(await tickTimes(s.id)).toEqual([
      ...missed.slice(-3).map((t) => ['Catchup', new Date(t).toISOString()]),
      ...withinGrace.map((t) => ['Scheduled', new Date(t).toISOString()]),
    ]);
    expect(h.logLines.some((l) => l.includes(`"missed":${missed.length}`))).toBe(true);
  });
});

describe('the misfire grace', () => {
  it('a tick handled within SCHEDULER_MISFIRE_GRACE_SECONDS fires normally; later it is missed', async () => {
    const onTime = await h.createSchedule({
      kind: 'Interval',
      intervalSeconds: 300,
      catchupPolicy: 'None',
    });
    const late = await h.createSchedule({
      kind: 'Interval',
      intervalSeconds: 400,
      catchupPolicy: 'None',
    });
    h.advance(300_000 + 60_000); // onTime's tick is exactly 60 s late: within the grace
    await h.pass();
    expect(await tickTimes(onTime.id)).toEqual([['Scheduled', onTime.nextTickAt!.toISOString()]]);
    h.clock.now = new Date(late.nextTickAt!.getTime() + 60_001); // late's tick is 60.001 s late
    await h.pass();
    expect(await h.runs(late.id)).toEqual([]);
    expect((await h.schedule(late.id)).nextTickAt).toEqual(
      new Date(late.nextTickAt!.getTime() + 400_000),
    );
  });

  it('several ticks within the grace all fire as Scheduled', async () => {
    const s = await h.createSchedule({
      kind: 'Interval',
      intervalSeconds: 10,
      overlapPolicy: 'Allow',
    });
    h.advance(45_000);
    await h.pass();
    expect((await tickTimes(s.id)).map(([trigger]) => trigger)).toEqual([
      'Scheduled',
      'Scheduled',
      'Scheduled',
      'Scheduled',
    ]);
  });
});

describe('pause and resume', () => {
  it('a paused schedule fires nothing; after resume no backlog is owed, whatever the catch-up policy', async () => {
    const s = await h.createSchedule({
      kind: 'Interval',
      intervalSeconds: 60,
      catchupPolicy: 'All',
      overlapPolicy: 'Allow',
    });
    h.advance(MINUTE);
    await h.pass();
    await h.pause(s.id);
    h.advance(HOUR);
    await h.pass();
    expect(await h.runs(s.id)).toHaveLength(1);
    const resumed = await h.resume(await h.schedule(s.id));
    expect(resumed.nextRunAt).toEqual(new Date(h.clock.now.getTime() + MINUTE));
    await h.pass();
    expect(await h.runs(s.id)).toHaveLength(1);
    h.advance(MINUTE);
    await h.pass();
    expect(await tickTimes(s.id)).toEqual([
      ['Scheduled', s.nextTickAt!.toISOString()],
      ['Scheduled', resumed.nextTickAt!.toISOString()],
    ]);
  });
});

describe('Once', () => {
  it('fires once at runAt; then nextRunAt is null and the status stays Active', async () => {
    const runAt = new Date(h.clock.now.getTime() + 90_000);
    const s = await h.createSchedule({ kind: 'Once', runAt });
    expect(s.nextRunAt).toEqual(runAt);
    h.advance(90_000);
    await h.pass();
    h.advance(HOUR);
    await h.pass();
    expect(await tickTimes(s.id)).toEqual([['Scheduled', runAt.toISOString()]]);
    expect(await h.schedule(s.id)).toMatchObject({
      status: 'Active',
      nextRunAt: null,
      nextTickAt: null,
    });
  });

  it('a missed Once follows the catch-up policy', async () => {
    const runAt = new Date(h.clock.now.getTime() + MINUTE);
    const none = await h.createSchedule({ kind: 'Once', runAt, catchupPolicy: 'None' });
    const one = await h.createSchedule({ kind: 'Once', runAt, catchupPolicy: 'One' });
    h.advance(HOUR);
    await h.pass();
    expect(await h.runs(none.id)).toEqual([]);
    expect(await tickTimes(one.id)).toEqual([['Catchup', runAt.toISOString()]]);
    expect((await h.schedule(none.id)).nextRunAt).toBeNull();
  });
});

describe('Cron and jitter', () => {
  it('fires a Cron schedule on its local minutes and moves to the next one', async () => {
    h.clock.now = new Date('2030-03-05T08:59:30.000Z'); // 09:59:30 in Berlin
    const s = await h.createSchedule({
      kind: 'Cron',
      cronExpression: '0 10 * * *',
      timeZone: 'Europe/Berlin',
    });
    expect(s.nextRunAt!.toISOString()).toBe('2030-03-05T09:00:00.000Z');
    h.advance(30_000);
    await h.pass();
    expect(await tickTimes(s.id)).toEqual([['Scheduled', '2030-03-05T09:00:00.000Z']]);
    expect((await h.schedule(s.id)).nextRunAt!.toISOString()).toBe('2030-03-06T09:00:00.000Z');
  });

  it('fires at tick + jitter and records the unjittered tick in scheduledFor', async () => {
    const s = await h.createSchedule({
      kind: 'Interval',
      intervalSeconds: 600,
      jitterSeconds: 300,
    });
    const tick = s.nextTickAt!;
    const offset = jitterOffsetMs(s.id, tick, 300);
    expect(s.nextRunAt).toEqual(new Date(tick.getTime() + offset));
    h.clock.now = new Date(tick.getTime() + offset - 1);
    await h.pass();
    expect(await h.runs(s.id)).toEqual([]);
    h.advance(1);
    await h.pass();
    expect(await tickTimes(s.id)).toEqual([['Scheduled', tick.toISOString()]]);
    const next = new Date(tick.getTime() + 600_000);
    expect((await h.schedule(s.id)).nextRunAt).toEqual(
      new Date(next.getTime() + jitterOffsetMs(s.id, next, 300)),
    );
  });
});
