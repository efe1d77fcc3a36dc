// `nextRuns` of a Schedule (issue 13): the next five instants it fires at, in UTC, jitter applied
// as the scheduler applies it; [] when Paused, Archived or nothing is left.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, scheduleSchema, type Schedule } from '@po/contracts';
import { startGateway, type Gateway } from '../../testing/harness.js';

// Thursday 26 March 2026; Europe/Berlin moves to summer time on Sunday the 29th.
const NOW = new Date('2026-03-26T12:00:30.000Z');
const definition = { name: 'p', stages: [{ stageName: 's', stageHandlerName: 'h' }] };
const shape = compile(scheduleSchema, { normalise: false });

let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway({ clock: () => NOW });
});
afterAll(async () => {
  await gw?.close();
});

async function put(name: string, body: Record<string, unknown>): Promise<Schedule> {
  const reply = await gw.call('PUT', `/schedules/${name}`, { json: { definition, ...body } });
  expect(reply.status, reply.text).toBe(201);
  return reply.body as Schedule;
}

async function get(name: string): Promise<Schedule> {
  const reply = await gw.call('GET', `/schedules/${name}`);
  expect(reply.status, reply.text).toBe(200);
  const checked = shape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  return reply.body as Schedule;
}

describe('nextRuns', () => {
  it('a Cron schedule fires at its local time in its zone, across a DST change', async () => {
    const created = await put('berlin-nine', { kind: 'Cron', cronExpression: '0 9 * * *', timeZone: 'Europe/Berlin' });
    const expected = ['2026-03-27T08:00:00.000Z', '2026-03-28T08:00:00.000Z', '2026-03-29T07:00:00.000Z', '2026-03-30T07:00:00.000Z', '2026-03-31T07:00:00.000Z'];
    expect(created.nextRuns).toEqual(expected);
    const read = await get('berlin-nine');
    expect(read.nextRuns).toEqual(expected);
    expect(read.nextRunAt).toBe(expected[0]);
  });

  it('an Interval schedule fires every interval from when it was planned', async () => {
    await put('hourly', { kind: 'Interval', intervalSeconds: 3600 });
    expect((await get('hourly')).nextRuns).toEqual([1, 2, 3, 4, 5].map((k) => new Date(NOW.getTime() + k * 3_600_000).toISOString()));
  });

  it('with jitter larger than the period, the instants are in the order they fire, the first being nextRunAt', async () => {
    await put('jittery', { kind: 'Interval', intervalSeconds: 60, jitterSeconds: 600 });
    const s = await get('jittery');
    const times = s.nextRuns.map((t) => Date.parse(t));
    expect(times).toHaveLength(5);
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(s.nextRuns[0]).toBe(s.nextRunAt);
    for (const t of times) {
      expect(t).toBeGreaterThan(NOW.getTime());
      expect(t).toBeLessThanOrEqual(NOW.getTime() + (5 * 60 + 600) * 1000);
    }
  });

  it('a Once schedule has its one instant', async () => {
    const runAt = '2026-04-01T06:30:00.000Z';
    await put('once', { kind: 'Once', runAt });
    expect((await get('once')).nextRuns).toEqual([runAt]);
  });

  it('is empty while Paused and when Archived; resume plans again', async () => {
    await put('pausable', { kind: 'Interval', intervalSeconds: 600 });
    const paused = await gw.call('POST', '/schedules/pausable/pause');
    expect(paused.body.nextRuns).toEqual([]);
    expect((await get('pausable')).nextRuns).toEqual([]);
    const resumed = await gw.call('POST', '/schedules/pausable/resume');
    expect(resumed.body.nextRuns).toHaveLength(5);
    const archived = await gw.call('POST', '/schedules/pausable/archive');
    expect(archived.body.nextRuns).toEqual([]);
  });

  it('the items of GET /schedules carry it too', async () => {
    const list = await gw.call('GET', '/schedules?limit=100');
    expect(list.status).toBe(200);
    const byName = Object.fromEntries((list.body.items as Schedule[]).map((s) => [s.name, s.nextRuns]));
    expect(byName['once']).toEqual(['2026-04-01T06:30:00.000Z']);
    expect(byName['berlin-nine']).toHaveLength(5);
    expect(byName['pausable']).toEqual([]);
  });
});
