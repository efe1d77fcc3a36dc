// PUT /schedules/{name}: every 400 of addendum §14.1 and §14.2 with its field, the definition
// rules of pipeline creation under /definition (§6), path and body errors (§1, §3).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, problemDetailsSchema, type FieldError } from '@po/contracts';
import { startGateway, type Gateway, type Reply } from '../../testing/harness.js';

const T0 = new Date('2030-03-04T10:00:00.000Z');
let now = T0;
let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway({ clock: () => now });
});
afterAll(async () => {
  await gw?.close();
});

const problemShape = compile(problemDetailsSchema, { normalise: false });
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

describe('PUT /schedules/{name}: validation (400 with the field of each violation)', () => {
  const cases: [string, unknown, string[]][] = [
    ['body not an object', [1], ['']],
    ['kind missing', { intervalSeconds: 60, definition }, ['/kind']],
    ['kind misspelled', { kind: 'interval', intervalSeconds: 60, definition }, ['/kind']],
    ['definition missing', { kind: 'Interval', intervalSeconds: 60 }, ['/definition']],
    ['Cron without cronExpression', { kind: 'Cron', definition }, ['/cronExpression']],
    [
      'Cron with intervalSeconds and runAt',
      {
        kind: 'Cron',
        cronExpression: '@hourly',
        intervalSeconds: 60,
        runAt: '2031-01-01T00:00:00Z',
        definition,
      },
      ['/intervalSeconds', '/runAt'],
    ],
    ['Interval without intervalSeconds', { kind: 'Interval', definition }, ['/intervalSeconds']],
    ['Interval below 10 s', interval({ intervalSeconds: 9 }), ['/intervalSeconds']],
    ['Interval above one year', interval({ intervalSeconds: 31_536_001 }), ['/intervalSeconds']],
    ['Interval as a string', interval({ intervalSeconds: '60' }), ['/intervalSeconds']],
    ['Interval not integral', interval({ intervalSeconds: 60.5 }), ['/intervalSeconds']],
    ['Interval with cronExpression', interval({ cronExpression: '@hourly' }), ['/cronExpression']],
    ['Once without runAt', { kind: 'Once', definition }, ['/runAt']],
    ['Once in the past', { kind: 'Once', runAt: '2030-03-04T09:59:59Z', definition }, ['/runAt']],
    ['Once at now', { kind: 'Once', runAt: '2030-03-04T10:00:00Z', definition }, ['/runAt']],
    [
      'runAt without offset',
      { kind: 'Once', runAt: '2031-01-01T00:00:00', definition },
      ['/runAt'],
    ],
    [
      'Once with intervalSeconds',
      { kind: 'Once', runAt: '2031-01-01T00:00:00Z', intervalSeconds: 60, definition },
      ['/intervalSeconds'],
    ],
    ['unknown time zone', interval({ timeZone: 'Mars/Olympus_Mons' }), ['/timeZone']],
    ['offset is not a zone id', interval({ timeZone: '+01:00' }), ['/timeZone']],
    ['timeZone not a string', interval({ timeZone: 1 }), ['/timeZone']],
    ['overlapPolicy case', interval({ overlapPolicy: 'skip' }), ['/overlapPolicy']],
    ['catchupPolicy unknown', interval({ catchupPolicy: 'Some' }), ['/catchupPolicy']],
    ['catchupMax 0', interval({ catchupMax: 0 }), ['/catchupMax']],
    ['catchupMax 1001', interval({ catchupMax: 1001 }), ['/catchupMax']],
    ['jitterSeconds -1', interval({ jitterSeconds: -1 }), ['/jitterSeconds']],
    ['jitterSeconds 3601', interval({ jitterSeconds: 3601 }), ['/jitterSeconds']],
    [
      'definition name empty',
      interval({ definition: { ...definition, name: '' } }),
      ['/definition/name'],
    ],
    [
      'definition without stages',
      interval({ definition: { name: 'x', stages: [] } }),
      ['/definition/stages'],
    ],
    [
      '101 stages',
      interval({
        definition: {
          name: 'x',
          stages: Array.from({ length: 101 }, (_, i) => ({
            stageName: `s${i}`,
            stageHandlerName: 'h',
          })),
        },
      }),
      ['/definition/stages'],
    ],
    [
      'stage without handler',
      interval({ definition: { name: 'x', stages: [{ stageName: 'a' }] } }),
      ['/definition/stages/0/stageHandlerName'],
    ],
    [
      'stage input over 262144 bytes',
      interval({
        definition: {
          name: 'x',
          stages: [{ stageName: 'a', stageHandlerName: 'h', input: 'é'.repeat(131_073) }],
        },
      }),
      ['/definition/stages/0/input'],
    ],
    [
      'traceId over 36',
      interval({ definition: { ...definition, traceId: 'x'.repeat(37) } }),
      ['/definition/traceId'],
    ],
    [
      'dependsOn names no earlier stage (creation rule of planPipeline)',
      interval({
        definition: {
          name: 'x',
          stages: [
            { stageName: 'a', stageHandlerName: 'h', options: { dependsOn: ['b'] } },
            { stageName: 'b', stageHandlerName: 'h' },
          ],
        },
      }),
      ['/definition/stages/0/options/dependsOn/0'],
    ],
    [
      'all violations together',
      {
        kind: 'Cron',
        cronExpression: '* * * * * *',
        catchupMax: 0,
        definition: {
          name: '',
          stages: [{ stageName: 'a', stageHandlerName: 'h', options: { dependsOn: ['zz'] } }],
        },
      },
      ['/cronExpression', '/catchupMax', '/definition/name'],
    ],
  ];
  it.each(cases)('%s', async (_label, body, fields) => {
    now = T0;
    expectProblem(await put(fresh(), body), 400, 'validation_failed', fields);
  });

  it('reports the cross-stage rules together with the plan rules', async () => {
    const body = {
      kind: 'Cron',
      cronExpression: '61 * * * *',
      definition: {
        name: 'x',
        stages: [{ stageName: 'a', stageHandlerName: 'h', options: { dependsOn: ['zz'] } }],
      },
    };
    expectProblem(await put(fresh(), body), 400, 'validation_failed', [
      '/cronExpression',
      '/definition/stages/0/options/dependsOn/0',
    ]);
  });

  it.each([
    '* * * * * *',
    '0 0 * * * * *',
    '0 0 ? * *',
    '0 0 L * *',
    '0 0 1W * *',
    '0 0 * * 1#2',
    '@yearly',
    '@weekly',
    '@reboot',
    '@annually',
    '60 * * * *',
    '* 24 * * *',
    '* * 0 * *',
    '* * 32 * *',
    '* * * 13 *',
    '* * * * 8',
    '*/0 * * * *',
    '5-1 * * * *',
    `${'0,'.repeat(100)}0 * * * *`,
    '0 0 30 2 *',
    '@every 9s',
    '@every 8785h',
    '@every 5x',
    'not cron',
  ])('rejects the cron expression %j at /cronExpression', async (cronExpression) => {
    expectProblem(
      await put(fresh(), { kind: 'Cron', cronExpression, definition }),
      400,
      'validation_failed',
      ['/cronExpression'],
    );
  });

  it('rejects malformed JSON at "" and a bad name at `name`', async () => {
    expectProblem(
      await gw.call('PUT', '/schedules/x', { raw: '{"kind":' }),
      400,
      'validation_failed',
      [''],
    );
    expectProblem(await put('n'.repeat(201), interval()), 400, 'validation_failed', ['name']);
    expectProblem(
      await gw.call('PUT', '/schedules/a%01b', { json: interval() }),
      400,
      'validation_failed',
      ['name'],
    );
    expect((await put('é'.repeat(200), interval())).status).toBe(201);
  });

  it('answers 401 without a valid key, before validating', async () => {
    expectProblem(
      await gw.call('PUT', '/schedules/x', { json: {}, key: null }),
      401,
      'unauthorized',
    );
    expectProblem(
      await gw.call('PUT', '/schedules/x', { json: {}, key: 'pos_wrong' }),
      401,
      'unauthorized',
    );
  });
});
