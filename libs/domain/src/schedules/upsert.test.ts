import { describe, expect, it } from 'vitest';
import type { ScheduleSettings, ScheduleUpsertBody } from './upsert.js';
import { compareSchedules, normaliseUpsert } from './upsert.js';

const definition = {
  name: 'nightly',
  traceId: 'trace-1',
  stages: [{ name: 'extract', input: '{"a":1}', dependsOn: [] }],
  policies: [{ kind: 'x', options: { b: 2, a: 1 } }],
};
const body = (extra: Partial<ScheduleUpsertBody> = {}): ScheduleUpsertBody => ({
  kind: 'Cron',
  cronExpression: '0 2 * * *',
  definition,
  ...extra,
});
const stored: ScheduleSettings = normaliseUpsert(
  body({
    timeZone: 'Europe/Berlin',
    overlapPolicy: 'Queue',
    catchupPolicy: 'All',
    catchupMax: 5,
    jitterSeconds: 30,
  }),
  null,
);

describe('normaliseUpsert (§14.7)', () => {
  it('a new schedule takes the defaults', () => {
    expect(normaliseUpsert(body(), null)).toEqual({
      kind: 'Cron',
      cronExpression: '0 2 * * *',
      intervalSeconds: null,
      runAt: null,
      timeZone: 'UTC',
      overlapPolicy: 'Skip',
      catchupPolicy: 'None',
      catchupMax: 10,
      jitterSeconds: 0,
      definition,
    });
  });

  it('omitted policies keep the stored values; omitted catchupMax, jitterSeconds, timeZone take defaults', () => {
    expect(normaliseUpsert(body(), stored)).toMatchObject({
      overlapPolicy: 'Queue',
      catchupPolicy: 'All',
      catchupMax: 10,
      jitterSeconds: 0,
      timeZone: 'UTC',
    });
    expect(
      normaliseUpsert(body({ overlapPolicy: 'Allow', catchupPolicy: 'One' }), stored),
    ).toMatchObject({
      overlapPolicy: 'Allow',
      catchupPolicy: 'One',
    });
  });

  it('fields that do not belong to the kind become null; runAt becomes an instant', () => {
    expect(
      normaliseUpsert(
        { kind: 'Interval', intervalSeconds: 60, cronExpression: null, definition },
        null,
      ),
    ).toMatchObject({
      cronExpression: null,
      intervalSeconds: 60,
      runAt: null,
    });
    const once = normaliseUpsert(
      { kind: 'Once', runAt: '2026-05-01T12:00:00.123456+02:00', definition },
      null,
    );
    expect(once).toMatchObject({ cronExpression: null, intervalSeconds: null });
    expect(once.runAt?.toISOString()).toBe('2026-05-01T10:00:00.123Z');
  });

  it('drops definition.apiKey and leaves the body alone', () => {
    const withKey = { ...definition, apiKey: 'secret' };
    const settings = normaliseUpsert(body({ definition: withKey }), null);
    expect(settings.definition).toEqual(definition);
    expect('apiKey' in settings.definition).toBe(false);
    expect(withKey.apiKey).toBe('secret');
  });
});

describe('compareSchedules (§14.7)', () => {
  const again = (extra: Partial<ScheduleUpsertBody> = {}): ScheduleSettings =>
    normaliseUpsert(
      body({ timeZone: 'Europe/Berlin', catchupMax: 5, jitterSeconds: 30, ...extra }),
      stored,
    );

  it('unchanged when the same body is applied again (policies omitted keep their values)', () => {
    expect(compareSchedules(again(), stored)).toBe('unchanged');
  });

  it('definition member order, null-vs-omitted and apiKey do not matter', () => {
    const reordered = {
      policies: [{ options: { a: 1, b: 2 }, kind: 'x' }],
      stages: [{ dependsOn: [], input: '{"a":1}', name: 'extract', description: null }],
      traceId: 'trace-1',
      name: 'nightly',
      apiKey: 'k',
      priority: null,
    };
    expect(compareSchedules(again({ definition: reordered }), stored)).toBe('unchanged');
  });

  it('trace_only when only definition.traceId differs (or appears, or goes)', () => {
    expect(
      compareSchedules(again({ definition: { ...definition, traceId: 'trace-2' } }), stored),
    ).toBe('trace_only');
    const { traceId: _t, ...withoutTrace } = definition;
    expect(compareSchedules(again({ definition: withoutTrace }), stored)).toBe('trace_only');
    expect(compareSchedules(again({ definition: { ...definition, traceId: null } }), stored)).toBe(
      'trace_only',
    );
  });

  it('changed when anything else differs, each setting on its own', () => {
    const variants: [string, ScheduleSettings][] = [
      ['kind', again({ kind: 'Interval', intervalSeconds: 60, cronExpression: null })],
      ['cronExpression', again({ cronExpression: '0 3 * * *' })],
      ['cronExpression whitespace', again({ cronExpression: '0  2 * * *' })],
      ['timeZone', again({ timeZone: 'UTC' })],
      ['overlapPolicy', again({ overlapPolicy: 'Skip' })],
      ['catchupPolicy', again({ catchupPolicy: 'None' })],
      ['catchupMax', again({ catchupMax: 6 })],
      ['jitterSeconds', again({ jitterSeconds: 0 })],
      ['definition member', again({ definition: { ...definition, name: 'other' } })],
      [
        'definition nested',
        again({
          definition: { ...definition, policies: [{ kind: 'x', options: { a: 1, b: 3 } }] },
        }),
      ],
      [
        'definition array order',
        again({ definition: { ...definition, stages: [...definition.stages, { name: 'load' }] } }),
      ],
      [
        'definition and traceId',
        again({ definition: { ...definition, name: 'other', traceId: 'trace-9' } }),
      ],
    ];
    for (const [what, next] of variants)
      expect(compareSchedules(next, stored), what).toBe('changed');
  });

  it('intervalSeconds and runAt: runAt is compared as an instant', () => {
    const interval = normaliseUpsert({ kind: 'Interval', intervalSeconds: 60, definition }, null);
    expect(
      compareSchedules(
        normaliseUpsert({ kind: 'Interval', intervalSeconds: 60, definition }, interval),
        interval,
      ),
    ).toBe('unchanged');
    expect(
      compareSchedules(
        normaliseUpsert({ kind: 'Interval', intervalSeconds: 61, definition }, interval),
        interval,
      ),
    ).toBe('changed');
    const once = normaliseUpsert({ kind: 'Once', runAt: '2026-05-01T10:00:00Z', definition }, null);
    const sameInstant = normaliseUpsert(
      { kind: 'Once', runAt: '2026-05-01T12:00:00.000+02:00', definition },
      once,
    );
    expect(compareSchedules(sameInstant, once)).toBe('unchanged');
    const later = normaliseUpsert(
      { kind: 'Once', runAt: '2026-05-01T10:00:00.001Z', definition },
      once,
    );
    expect(compareSchedules(later, once)).toBe('changed');
  });
});
