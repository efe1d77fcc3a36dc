// PUT /schedules/{name} (api-spec "Schedule resources", "Schedule statuses"; addendum §1, §3,
// §5.5, §14.1, §14.2, §14.3, §14.4, §14.7).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, problemDetailsSchema, scheduleSchema, type FieldError } from '@po/contracts';
import { jitterOffsetMs } from '@po/domain';
import { startGateway, type Gateway, type Reply } from '../../testing/harness.js';

const T0 = new Date('2030-03-04T10:00:00.000Z');
let now = T0;
const at = (ms: number) => new Date(T0.getTime() + ms);
let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway({ clock: () => now });
});
afterAll(async () => {
  await gw?.close();
});

const scheduleShape = compile(scheduleSchema, { normalise: false });
const problemShape = compile(problemDetailsSchema, { normalise: false });
function expectSchedule(reply: Reply, status: number) {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
  const checked = scheduleShape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  return reply.body;
}
function expectProblem(reply: Reply, status: number, code: string, fields?: string[]) {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const checked = problemShape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  expect(reply.body).toMatchObject({ status, code });
  if (fields)
    expect([...new Set((reply.body.errors as FieldError[]).map((e) => e.field))].sort()).toEqual(
      [...fields].sort(),
    );
}

const definition = {
  name: 'nightly report',
  stages: [{ stageName: 'collect', stageHandlerName: 'collector', input: '{"a":1}' }],
};
const interval = (extra: Record<string, unknown> = {}) => ({
  kind: 'Interval',
  intervalSeconds: 60,
  definition,
  ...extra,
});
let seq = 0;
const fresh = (prefix = 'sched') => `${prefix}-${++seq}`;
const put = (name: string, body: unknown, key?: string) =>
  gw.call('PUT', `/schedules/${encodeURIComponent(name)}`, { json: body, ...(key ? { key } : {}) });

describe('PUT /schedules/{name}: a new name', () => {
  it('creates an Active schedule, version 1, with the defaults, planned from now (201)', async () => {
    now = T0;
    const name = fresh();
    const body = expectSchedule(await put(name, interval()), 201);
    expect(body).toMatchObject({
      name,
      applicationId: gw.appA.id,
      status: 'Active',
      kind: 'Interval',
      cronExpression: null,
      intervalSeconds: 60,
      runAt: null,
      timeZone: 'UTC',
      overlapPolicy: 'Skip',
      catchupPolicy: 'None',
      catchupMax: 10,
      jitterSeconds: 0,
      definitionVersion: 1,
      createdAt: T0.toISOString(),
      updatedAt: T0.toISOString(),
      nextRunAt: at(60_000).toISOString(),
      lastRunAt: null,
      lastRunStatus: null,
      lastPipelineId: null,
      health: {
        windowSize: 20,
        total: 0,
        completed: 0,
        failed: 0,
        cancelled: 0,
        running: 0,
        skipped: 0,
        lastFailureAt: null,
        state: 'idle',
      },
    });
  });

  it('stores the definition as validated, without apiKey and unknown members', async () => {
    const body = expectSchedule(
      await put(
        fresh(),
        interval({ definition: { ...definition, apiKey: 'pos_secret', extra: 1, traceId: null } }),
      ),
      201,
    );
    expect(body.definition).toEqual(definition);
    expect(JSON.stringify(body)).not.toContain('pos_secret');
  });

  it('plans a Cron schedule in its time zone and a Once schedule at runAt', async () => {
    now = T0; // 2030-03-04 10:00Z = 11:00 in Berlin
    const cron = expectSchedule(
      await put(fresh(), {
        kind: 'Cron',
        cronExpression: '30 12 * * *',
        timeZone: 'Europe/Berlin',
        definition,
      }),
      201,
    );
    expect(cron.nextRunAt).toBe('2030-03-04T11:30:00.000Z');
    expect(cron.intervalSeconds).toBeNull();
    const once = expectSchedule(
      await put(fresh(), { kind: 'Once', runAt: '2030-03-04T12:00:00+01:00', definition }),
      201,
    );
    expect(once.runAt).toBe('2030-03-04T11:00:00.000Z');
    expect(once.nextRunAt).toBe('2030-03-04T11:00:00.000Z');
    expect(once.cronExpression).toBeNull();
  });

  it('shows the jittered fire time in nextRunAt: the earliest tick + SHA-256 offset of §14.4 (decision 0088)', async () => {
    now = T0;
    const body = expectSchedule(await put(fresh(), interval({ jitterSeconds: 3600 })), 201);
    // Jitter (1 h) longer than the period (1 min): a later tick can fire first. No tick after
    // T0 + 61 min can beat the first tick's latest fire time (T0 + 1 min + 1 h).
    const fires = Array.from({ length: 61 }, (_, k) => at((k + 1) * 60_000)).map(
      (tick) => tick.getTime() + jitterOffsetMs(body.id, tick, 3600),
    );
    expect(body.nextRunAt).toBe(new Date(Math.min(...fires)).toISOString());
  });

  it('accepts every form of the cron dialect', async () => {
    for (const cronExpression of [
      '@hourly',
      '@DAILY',
      '@midnight',
      '@every 90s',
      '@every 1h30m',
      '*/15 * * * *',
      '0 9-17/2 * * MON-FRI',
      '5,10 0 1 jan,JUL *',
      '0 0 * * 7',
      '10/20 * * * *',
      '0 12 1-31/10 * sun',
    ]) {
      expect(
        (await put(fresh(), { kind: 'Cron', cronExpression, definition })).status,
        cronExpression,
      ).toBe(201);
    }
  });
});

describe('PUT /schedules/{name}: an existing name', () => {
  it('unchanged body → 200, nothing stored (updatedAt, version, nextRunAt kept)', async () => {
    now = T0;
    const name = fresh();
    const created = expectSchedule(
      await put(name, interval({ overlapPolicy: 'Queue', runAt: null })),
      201,
    );
    now = at(30_000);
    // Member order, null-vs-omitted and an omitted overlapPolicy (kept) do not count as changes.
    const again = expectSchedule(
      await put(name, {
        definition: { stages: definition.stages, name: definition.name, traceId: null },
        intervalSeconds: 60,
        kind: 'Interval',
        cronExpression: null,
      }),
      200,
    );
    expect(again).toEqual(created);
  });

  it('only definition.traceId differs → stored, updatedAt set, version and nextRunAt kept', async () => {
    now = T0;
    const name = fresh();
    const created = expectSchedule(await put(name, interval()), 201);
    now = at(30_000);
    const traced = expectSchedule(
      await put(name, interval({ definition: { ...definition, traceId: 'trace-1' } })),
      200,
    );
    expect(traced).toMatchObject({
      definitionVersion: 1,
      nextRunAt: created.nextRunAt,
      updatedAt: now.toISOString(),
      createdAt: created.createdAt,
    });
    expect(traced.definition.traceId).toBe('trace-1');
  });

  it('any other difference → version + 1, re-planned from now', async () => {
    now = T0;
    const name = fresh();
    expectSchedule(await put(name, interval({ catchupMax: 5 })), 201);
    now = at(30_000);
    const changed = expectSchedule(await put(name, interval()), 200); // omitted catchupMax takes the default 10
    expect(changed).toMatchObject({
      definitionVersion: 2,
      catchupMax: 10,
      updatedAt: now.toISOString(),
      nextRunAt: at(90_000).toISOString(),
    });
    now = at(40_000);
    const redefined = expectSchedule(
      await put(name, interval({ definition: { ...definition, name: 'renamed' } })),
      200,
    );
    expect(redefined).toMatchObject({ definitionVersion: 3, nextRunAt: at(100_000).toISOString() });
    const rekinded = expectSchedule(
      await put(name, { kind: 'Cron', cronExpression: '0 * * * *', definition }),
      200,
    );
    expect(rekinded).toMatchObject({
      definitionVersion: 4,
      intervalSeconds: null,
      cronExpression: '0 * * * *',
      nextRunAt: '2030-03-04T11:00:00.000Z',
    });
  });

  it('compares runAt as an instant and accepts a stored runAt that is now past', async () => {
    now = T0;
    const name = fresh();
    const created = expectSchedule(
      await put(name, { kind: 'Once', runAt: '2030-03-04T11:00:00Z', definition }),
      201,
    );
    now = at(2 * 3600_000); // runAt has passed
    const same = expectSchedule(
      await put(name, { kind: 'Once', runAt: '2030-03-04T13:00:00.000+02:00', definition }),
      200,
    );
    // Nothing stored; only nextRuns moved on: it lists instants after now (decision 0093).
    expect(created.nextRuns).toEqual(['2030-03-04T11:00:00.000Z']);
    expect(same).toEqual({ ...created, nextRuns: [] });
    expectProblem(
      await put(name, { kind: 'Once', runAt: '2030-03-04T11:30:00Z', definition }),
      400,
      'validation_failed',
      ['/runAt'],
    );
  });

  it('matches names case-insensitively and keeps the stored spelling', async () => {
    now = T0;
    const created = expectSchedule(await put('Daily-Export', interval()), 201);
    const upper = expectSchedule(
      await put('DAILY-EXPORT', interval({ intervalSeconds: 120 })),
      200,
    );
    expect(upper).toMatchObject({ id: created.id, name: 'Daily-Export', definitionVersion: 2 });
    expect(expectSchedule(await gw.call('GET', '/schedules/daily-export'), 200).id).toBe(
      created.id,
    );
  });

  it('Archived → Active with a re-plan; Paused stays Paused on a change', async () => {
    now = T0;
    const name = fresh();
    expectSchedule(await put(name, interval()), 201);
    expectSchedule(await gw.call('POST', `/schedules/${name}/archive`), 200);
    now = at(10_000);
    const back = expectSchedule(await put(name, interval()), 200);
    expect(back).toMatchObject({
      status: 'Active',
      definitionVersion: 1,
      nextRunAt: at(70_000).toISOString(),
      updatedAt: now.toISOString(),
    });

    expectSchedule(await gw.call('POST', `/schedules/${name}/pause`), 200);
    const paused = expectSchedule(await put(name, interval({ intervalSeconds: 30 })), 200);
    expect(paused).toMatchObject({ status: 'Paused', definitionVersion: 2, nextRunAt: null });
  });
});
