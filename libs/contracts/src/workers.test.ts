import { describe, expect, it } from 'vitest';
import {
  eventsRequestValidator,
  parseStageQueueName,
  stageQueueName,
  validateAck,
  validateBootstrap,
  validateHeartbeat,
  validateLease,
  validatePull,
  validateResultSubmit,
  validateShutdown,
} from './index.js';
import type { Validator } from './index.js';
import { chars, errorsOf, items, valueOf, withAt } from './validation.test-support.js';

type Row = [string, string, unknown, unknown, string, string];

/** The body at the limit passes; the one past it fails with exactly one error at `field`. */
function expectLimit(validate: Validator<unknown>, base: object, row: Row): void {
  const [, member, atLimit, pastLimit, field, message] = row;
  expect(validate(withAt(base, member, atLimit)).ok).toBe(true);
  expect(errorsOf(validate(withAt(base, member, pastLimit)))).toEqual([{ field, message }]);
}

describe('worker bootstrap (addendum §5.3)', () => {
  const base = { instanceId: 'host-1#42' };

  it('instanceId is required', () => {
    expect(errorsOf(validateBootstrap({}))).toEqual([
      { field: '/instanceId', message: 'is required' },
    ]);
  });

  // prettier-ignore
  it.each<Row>([
    ['instanceId is at most 200 characters', '/instanceId', chars(200), chars(201), '/instanceId', 'must have at most 200 characters'],
    ['instanceId is at least 1 character', '/instanceId', 'i', '', '/instanceId', 'must have at least 1 character'],
    ['workerName is at most 200 characters', '/workerName', chars(200), chars(201), '/workerName', 'must have at most 200 characters'],
    ['handlers are at most 100', '/handlers', items(100, (i) => `h${i}`), items(101, (i) => `h${i}`), '/handlers', 'must have at most 100 items'],
    ['each handler is at most 300 characters', '/handlers', [chars(300)], ['ok', chars(301)], '/handlers/1', 'must have at most 300 characters'],
    ['each handler is at least 1 character', '/handlers', ['h'], [''], '/handlers/0', 'must have at least 1 character'],
    ['sdkVersion is at most 100 characters', '/sdkVersion', chars(100), chars(101), '/sdkVersion', 'must have at most 100 characters'],
    ['hostname is at most 255 characters', '/hostname', chars(255), chars(256), '/hostname', 'must have at most 255 characters'],
    // {"k":"…"} adds 8 bytes around the string.
    ['metadata is at most 16384 bytes serialized', '/metadata', { k: chars(16_376) }, { k: chars(16_377) }, '/metadata', 'must be at most 16384 bytes'],
    ['metadata is an object', '/metadata', {}, [], '/metadata', 'must be an object'],
  ])('%s', (...row) => expectLimit(validateBootstrap, base, row));

  it('metadata is free-form: nulls and any members are kept', () => {
    const metadata = { region: null, tags: ['a', null], nested: { x: null } };
    expect(valueOf(validateBootstrap({ ...base, metadata, workerName: null }))).toEqual({
      ...base,
      metadata,
    });
  });
});

describe('worker heartbeat and shutdown (addendum §5.4)', () => {
  it('heartbeat: workerId is required, counters are integers >= 0', () => {
    expect(errorsOf(validateHeartbeat({ inFlight: 1 }))).toEqual([
      { field: '/workerId', message: 'is required' },
    ]);
    expect(
      valueOf(validateHeartbeat({ workerId: 'w', inFlight: 0, processed: 10, failed: null })),
    ).toEqual({ workerId: 'w', inFlight: 0, processed: 10 });
    expect(
      errorsOf(validateHeartbeat({ workerId: 'w', inFlight: -1, processed: 1.5, failed: '2' })),
    ).toEqual([
      { field: '/inFlight', message: 'must be at least 0' },
      { field: '/processed', message: 'must be an integer' },
      { field: '/failed', message: 'must be an integer' },
    ]);
  });

  it('shutdown: workerId is required, reason at most 1000 characters', () => {
    expect(validateShutdown({ workerId: 'w', reason: chars(1000) }).ok).toBe(true);
    expect(errorsOf(validateShutdown({ workerId: 'w', reason: chars(1001) }))).toEqual([
      { field: '/reason', message: 'must have at most 1000 characters' },
    ]);
    expect(errorsOf(validateShutdown({ reason: 'bye' }))).toEqual([
      { field: '/workerId', message: 'is required' },
    ]);
  });
});

describe('worker events (addendum §5.4)', () => {
  const event = { kind: 'stage_started', stageId: 4 };
  const validateEvents = eventsRequestValidator(100);
  const body = (events: unknown) => ({ workerId: 'w', events });

  it('the default batch takes 1..100 events; an empty or larger batch is an error at /events', () => {
    expect(validateEvents(body(items(100, () => event))).ok).toBe(true);
    expect(errorsOf(validateEvents(body(items(101, () => event))))).toEqual([
      { field: '/events', message: 'must have at most 100 items' },
    ]);
    expect(errorsOf(validateEvents(body([])))).toEqual([
      { field: '/events', message: 'must have at least 1 item' },
    ]);
    expect(errorsOf(validateEvents({ events: [event] }))).toEqual([
      { field: '/workerId', message: 'is required' },
    ]);
  });

  it('the batch size follows WORKER_EVENTS_MAX_BATCH, compiled once per value', () => {
    const validate = eventsRequestValidator(2);
    expect(eventsRequestValidator(2)).toBe(validate);
    expect(validate(body([event, event])).ok).toBe(true);
    expect(errorsOf(validate(body([event, event, event])))).toEqual([
      { field: '/events', message: 'must have at most 2 items' },
    ]);
    expect(() => eventsRequestValidator(0)).toThrow(RangeError);
  });

  it('errors point at the item, for example /events/3/kind', () => {
    const events = [event, event, event, { kind: 'exploded' }];
    expect(errorsOf(validateEvents(body(events)))).toEqual([
      {
        field: '/events/3/kind',
        message:
          'must be one of: started, stopping, stopped, stage_started, stage_completed, stage_failed, lease_lost, error, custom',
      },
    ]);
  });

  // prettier-ignore
  it.each<Row>([
    ['kind is required', '/events/0', event, { stageId: 4 }, '/events/0/kind', 'is required'],
    ['at is a date-time with an offset', '/events/0/at', '2025-03-01T12:00:00.000Z', '2025-03-01 12:00', '/events/0/at', 'must be an RFC 3339 date-time with an offset (Z or ±hh:mm)'],
    ['message is at most 4000 characters', '/events/0/message', chars(4000), chars(4001), '/events/0/message', 'must have at most 4000 characters'],
    ['stageId is an integer >= 1', '/events/0/stageId', 1, 0, '/events/0/stageId', 'must be at least 1'],
    ['pipelineId is an integer >= 1', '/events/0/pipelineId', 1, '1', '/events/0/pipelineId', 'must be an integer'],
    ['data is at most 16384 bytes serialized', '/events/0/data', { d: chars(16_376) }, { d: chars(16_377) }, '/events/0/data', 'must be at most 16384 bytes'],
  ])('event item: %s', (...row) => expectLimit(validateEvents, body([event]), row));

  it('event data is free-form and kept as sent', () => {
    const data = { a: null, b: { c: null } };
    expect(valueOf(validateEvents(body([{ ...event, data, message: null }]))).events).toEqual([
      { ...event, data },
    ]);
  });
});

describe('pull and ack (PullJobRequest, AckJobRequest)', () => {
  it('pull: queue is a required string; waitSeconds an integer 0..20', () => {
    expect(errorsOf(validatePull({}))).toEqual([{ field: '/queue', message: 'is required' }]);
    expect(valueOf(validatePull({ queue: 'app_1_h_StageNext', waitSeconds: 20 }))).toEqual({
      queue: 'app_1_h_StageNext',
      waitSeconds: 20,
    });
    expect(errorsOf(validatePull({ queue: 'q', waitSeconds: 21 }))).toEqual([
      { field: '/waitSeconds', message: 'must be at most 20' },
    ]);
    expect(errorsOf(validatePull({ queue: 'q', waitSeconds: -1 }))).toEqual([
      { field: '/waitSeconds', message: 'must be at least 0' },
    ]);
    expect(errorsOf(validatePull({ queue: 'q', waitSeconds: '5' }))).toEqual([
      { field: '/waitSeconds', message: 'must be an integer' },
    ]);
    expect(errorsOf(validatePull({ queue: 'q', waitSeconds: 0.5 }))).toEqual([
      { field: '/waitSeconds', message: 'must be an integer' },
    ]);
  });

  it('ack: token is required and non-empty; requeue is a boolean', () => {
    expect(errorsOf(validateAck({}))).toEqual([{ field: '/token', message: 'is required' }]);
    expect(errorsOf(validateAck({ token: '' }))).toEqual([
      { field: '/token', message: 'must have at least 1 character' },
    ]);
    expect(errorsOf(validateAck({ token: 't', requeue: 'false' }))).toEqual([
      { field: '/requeue', message: 'must be a boolean' },
    ]);
    expect(valueOf(validateAck({ token: 't', requeue: null }))).toEqual({ token: 't' });
  });

  it('queue names have the form app_{applicationId}_{handler}_StageNext', () => {
    expect(stageQueueName(7, 'send_mail')).toBe('app_7_send_mail_StageNext');
    expect(parseStageQueueName('app_7_send_mail_StageNext')).toEqual({
      applicationId: 7,
      handler: 'send_mail',
    });
    expect(parseStageQueueName('app_7__StageNext')).toBeUndefined();
    expect(parseStageQueueName('app_07_h_StageNext')).toBeUndefined();
    expect(parseStageQueueName('app_7_h_StageNexts')).toBeUndefined();
  });
});

describe('lease (StageLeaseRequest)', () => {
  it('executionId and workerId are required, at least 1 character', () => {
    expect(errorsOf(validateLease({}))).toEqual([
      { field: '/executionId', message: 'is required' },
      { field: '/workerId', message: 'is required' },
    ]);
    expect(errorsOf(validateLease({ executionId: '', workerId: '' }))).toEqual([
      { field: '/executionId', message: 'must have at least 1 character' },
      { field: '/workerId', message: 'must have at least 1 character' },
    ]);
  });
});

describe('result (StageResultSubmit, addendum §13)', () => {
  const result = { stageId: 12, executionId: 'e-1', attempt: 1, isSuccess: true };

  it('stageId, executionId and attempt are required', () => {
    expect(errorsOf(validateResultSubmit({}))).toEqual([
      { field: '/stageId', message: 'is required' },
      { field: '/executionId', message: 'is required' },
      { field: '/attempt', message: 'is required' },
    ]);
  });

  // prettier-ignore
  it.each<Row>([
    ['stageId is an integer >= 1', '/stageId', 1, 0, '/stageId', 'must be at least 1'],
    ['attempt is an integer >= 1', '/attempt', 1, 0, '/attempt', 'must be at least 1'],
    ['executionId has at least 1 character', '/executionId', 'e', '', '/executionId', 'must have at least 1 character'],
    ['isSuccess is a boolean', '/isSuccess', false, 'true', '/isSuccess', 'must be a boolean'],
    ['result is at most 262144 bytes', '/result', chars(262_144), chars(262_145), '/result', 'must be at most 262144 bytes'],
    ['result counts UTF-8 bytes', '/result', chars(131_072, 'é'), `${chars(131_072, 'é')}a`, '/result', 'must be at most 262144 bytes'],
    ['errorCode is at most 200 characters', '/errorCode', chars(200, 'E'), chars(201, 'E'), '/errorCode', 'must have at most 200 characters'],
    ['errorCode has no control characters (LF)', '/errorCode', 'BAD_INPUT', 'BAD\nINPUT', '/errorCode', 'must not contain control characters'],
    ['errorCode has no control characters (NUL)', '/errorCode', 'E', 'E\u0000', '/errorCode', 'must not contain control characters'],
    ['errorCode has no control characters (C1)', '/errorCode', 'É', 'E\u0085', '/errorCode', 'must not contain control characters'],
    ['retryable is a boolean or null', '/retryable', false, 'no', '/retryable', 'must be a boolean or null'],
    ['pipelineId is an integer or null', '/pipelineId', 3, 0, '/pipelineId', 'must be at least 1'],
    ['logs are at most 100', '/logs', items(100, () => ({ message: 'm' })), items(101, () => ({ message: 'm' })), '/logs', 'must have at most 100 items'],
    ['a log needs a message', '/logs', [{ message: '' }], [{ logLevel: 'Warning' }], '/logs/0/message', 'is required'],
    ['a log level is 1..32 characters', '/logs', [{ message: 'm', logLevel: chars(32) }], [{ message: 'm', logLevel: chars(33) }], '/logs/0/logLevel', 'must have at most 32 characters'],
    ['a log created is a date-time with an offset', '/logs', [{ message: 'm', created: '2025-03-01T12:00:00+02:00' }], [{ message: 'm', created: '2025-03-01T12:00:00' }], '/logs/0/created', 'must be an RFC 3339 date-time with an offset (Z or ±hh:mm)'],
    ['context items are at most 64', '/contextItems', items(64, (i) => ({ key: `k${i}` })), items(65, (i) => ({ key: `k${i}` })), '/contextItems', 'must have at most 64 items'],
    ['a context item key is 1..300 characters', '/contextItems', [{ key: chars(300), isDeleted: true }], [{ key: chars(301) }], '/contextItems/0/key', 'must have at most 300 characters'],
    ['appended stages follow the StageInfo rules', '/appendedStages', [{ stageName: 's', stageHandlerName: 'h', input: { a: 1 } }], [{ stageName: '', stageHandlerName: 'h' }], '/appendedStages/0/stageName', 'must have at least 1 character'],
  ])('%s', (...row) => expectLimit(validateResultSubmit, result, row));

  it('a context value over 64 KiB is accepted: that limit is for creation, a result is bounded by its body', () => {
    const big = [
      { key: 'report', value: chars(100_000) },
      { key: 'é', value: chars(65_537, 'é') },
    ];
    const checked = validateResultSubmit({ ...result, contextItems: big });
    expect(checked.ok).toBe(true);
    expect(valueOf(checked).contextItems?.map((i) => [i.key, i.value?.length])).toEqual([
      ['report', 100_000],
      ['é', 65_537],
    ]);
  });

  it('accepts compatibility fields and drops nulls of optional ones', () => {
    const value = valueOf(
      validateResultSubmit({
        ...result,
        pipelineId: null,
        retryable: null,
        nextStageId: null,
        errorCode: null,
        runNextIfCurrentFailed: true,
        somethingNew: 1,
      }),
    );
    expect(value).toEqual({ ...result, runNextIfCurrentFailed: true });
  });
});
