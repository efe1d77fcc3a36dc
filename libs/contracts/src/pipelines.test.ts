import { describe, expect, it } from 'vitest';
import {
  legacyApiKeyOf,
  validateAppendStages,
  validateIdempotencyLookup,
  validateIdempotentCreate,
  validateLegacyCreate,
  validateResume,
  validateScheduleUpsert,
} from './index.js';
import type { Validator } from './index.js';
import {
  chars,
  definition,
  errorsOf,
  items,
  stage,
  valueOf,
  withAt,
  withoutAt,
} from './validation.test-support.js';

const keyword = { key: 'region', value: 'eu' };
const ctx = (key: string, value?: string) => (value === undefined ? { key } : { key, value });

/**
 * One row per limit: [rule, member set, value at the limit, value past it, error field, message].
 * The value at the limit passes; the one past it fails with exactly one error at that field.
 */
type LimitRow = [string, string, unknown, unknown, string, string];

// prettier-ignore
const definitionLimits: LimitRow[] = [
  ['pipeline name is at most 255 characters', '/name', chars(255), chars(256), '/name', 'must have at most 255 characters'],
  ['pipeline name is at least 1 character', '/name', 'a', '', '/name', 'must have at least 1 character'],
  ['traceId is at most 36 characters', '/traceId', chars(36), chars(37), '/traceId', 'must have at most 36 characters'],
  ['a pipeline has at most 100 stages', '/stages', items(100, () => stage), items(101, () => stage), '/stages', 'must have at most 100 items'],
  ['a pipeline has at least 1 stage', '/stages', [stage], [], '/stages', 'must have at least 1 item'],
  ['policies are objects', '/policies', [{ any: 1 }], [1], '/policies/0', 'must be an object'],
  ['stage name is at most 255 characters', '/stages/0/stageName', chars(255), chars(256), '/stages/0/stageName', 'must have at most 255 characters'],
  ['stage name is at least 1 character', '/stages/0/stageName', 'a', '', '/stages/0/stageName', 'must have at least 1 character'],
  ['stage handler name is at most 300 characters', '/stages/0/stageHandlerName', chars(300), chars(301), '/stages/0/stageHandlerName', 'must have at most 300 characters'],
  ['stage handler name is at least 1 character', '/stages/0/stageHandlerName', 'h', '', '/stages/0/stageHandlerName', 'must have at least 1 character'],
  ['stage description is at most 255 characters', '/stages/0/description', chars(255), chars(256), '/stages/0/description', 'must have at most 255 characters'],
  ['stage input is at most 262144 bytes', '/stages/0/input', chars(262_144), chars(262_145), '/stages/0/input', 'must be at most 262144 bytes'],
  ['stage input counts UTF-8 bytes, not characters', '/stages/0/input', chars(131_072, 'é'), `${chars(131_072, 'é')}a`, '/stages/0/input', 'must be at most 262144 bytes'],
  ['stage input is a JSON-serialized string', '/stages/0/input', '{"a":1}', { a: 1 }, '/stages/0/input', 'must be a string'],
  ['stage policies are objects', '/stages/0/policies', [{}], ['x'], '/stages/0/policies/0', 'must be an object'],
  ['stage isEvent is a boolean', '/stages/0/isEvent', true, 'true', '/stages/0/isEvent', 'must be a boolean'],
  ['pipeline keywords are at most 64', '/pipelineKeywords', items(64, () => keyword), items(65, () => keyword), '/pipelineKeywords', 'must have at most 64 items'],
  ['keyword key is at most 300 characters', '/pipelineKeywords', [{ key: chars(300), value: 'v' }], [{ key: chars(301), value: 'v' }], '/pipelineKeywords/0/key', 'must have at most 300 characters'],
  ['keyword key is at least 1 character', '/pipelineKeywords', [{ key: 'k', value: 'v' }], [{ key: '', value: 'v' }], '/pipelineKeywords/0/key', 'must have at least 1 character'],
  ['keyword value is at most 300 characters', '/pipelineKeywords', [{ key: 'k', value: chars(300) }], [{ key: 'k', value: chars(301) }], '/pipelineKeywords/0/value', 'must have at most 300 characters'],
  ['keyword value is at least 1 character', '/pipelineKeywords', [{ key: 'k', value: 'v' }], [{ key: 'k', value: '' }], '/pipelineKeywords/0/value', 'must have at least 1 character'],
  ['keyword value is required', '/pipelineKeywords', [keyword], [{ key: 'k' }], '/pipelineKeywords/0/value', 'is required'],
  ['context items are at most 64', '/pipelineContextItems', items(64, (i) => ctx(`k${i}`)), items(65, (i) => ctx(`k${i}`)), '/pipelineContextItems', 'must have at most 64 items'],
  ['context item key is at most 300 characters', '/pipelineContextItems', [ctx(chars(300))], [ctx(chars(301))], '/pipelineContextItems/0/key', 'must have at most 300 characters'],
  ['context item key is at least 1 character', '/pipelineContextItems', [ctx('k')], [ctx('')], '/pipelineContextItems/0/key', 'must have at least 1 character'],
  ['context item key is required', '/pipelineContextItems', [ctx('k')], [{ value: 'v' }], '/pipelineContextItems/0/key', 'is required'],
  ['context item value is at most 65536 bytes', '/pipelineContextItems', [ctx('k', chars(32_768, 'é'))], [ctx('k', chars(65_537))], '/pipelineContextItems/0/value', 'must be at most 65536 bytes'],
  ['context item isSensitive is a boolean', '/pipelineContextItems', [{ key: 'k', isSensitive: true }], [{ key: 'k', isSensitive: 1 }], '/pipelineContextItems/0/isSensitive', 'must be a boolean'],
];

// prettier-ignore
const optionLimits: LimitRow[] = [
  ['retryInterval is an integer >= 0', '/retryInterval', 0, -1, '/retryInterval', 'must be at least 0'],
  ['maxRetries is an integer >= 0', '/maxRetries', 0, -1, '/maxRetries', 'must be at least 0'],
  ['timeOut is an integer >= 1', '/timeOut', 1, 0, '/timeOut', 'must be at least 1'],
  ['maxRetryInterval is an integer >= 1', '/maxRetryInterval', 1, 0, '/maxRetryInterval', 'must be at least 1'],
  ['retryOnErrorCodes items have at least 1 character', '/retryOnErrorCodes', ['TIMEOUT'], ['TIMEOUT', ''], '/retryOnErrorCodes/1', 'must have at least 1 character'],
  ['backoff is fixed, linear or exponential (case-sensitive)', '/backoff', 'exponential', 'Exponential', '/backoff', 'must be one of: fixed, linear, exponential'],
  ['dependsOn is an array of strings', '/dependsOn', ['extract'], ['extract', 2], '/dependsOn/1', 'must be a string'],
  ['runInParallelWith is an array of strings', '/runInParallelWith', [], 'extract', '/runInParallelWith', 'must be an array'],
  ['jitter is a boolean', '/jitter', false, 'false', '/jitter', 'must be a boolean'],
  ['runAsUser is a string', '/runAsUser', 'svc', 1, '/runAsUser', 'must be a string'],
  ['failIfOutputEmpty is a boolean', '/failIfOutputEmpty', true, 1, '/failIfOutputEmpty', 'must be a boolean'],
  ['notifyOnFailure is a boolean', '/notifyOnFailure', true, 1, '/notifyOnFailure', 'must be a boolean'],
  ['runNextIfFailed is a boolean', '/runNextIfFailed', true, 'yes', '/runNextIfFailed', 'must be a boolean'],
];

const creationPaths: [string, Validator<unknown>, Record<string, unknown>, string][] = [
  ['legacy creation', validateLegacyCreate, { ...definition, apiKey: 'pos_x' }, ''],
  ['idempotent creation', validateIdempotentCreate, { ...definition, idempotencyKey: 'k' }, ''],
  [
    'a schedule definition',
    validateScheduleUpsert,
    { kind: 'Interval', intervalSeconds: 60, definition },
    '/definition',
  ],
];

describe.each(creationPaths)('Limits table on %s', (_, validate, base, prefix) => {
  it.each(definitionLimits)('%s', (_rule, member, atLimit, pastLimit, field, message) => {
    expect(validate(withAt(base, `${prefix}${member}`, atLimit)).ok).toBe(true);
    expect(errorsOf(validate(withAt(base, `${prefix}${member}`, pastLimit)))).toEqual([
      { field: `${prefix}${field}`, message },
    ]);
  });

  it.each(optionLimits)('StageOptions: %s', (_rule, member, atLimit, pastLimit, field, message) => {
    const at = (value: unknown) =>
      withAt(base, `${prefix}/stages/0/options`, withAt({}, member, value));
    expect(validate(at(atLimit)).ok).toBe(true);
    expect(errorsOf(validate(at(pastLimit)))).toEqual([
      { field: `${prefix}/stages/0/options${field}`, message },
    ]);
  });

  it('points missing name and stages at /name and /stages', () => {
    const body = withoutAt(withoutAt(base, `${prefix}/name`), `${prefix}/stages`);
    expect(errorsOf(validate(body))).toEqual([
      { field: `${prefix}/name`, message: 'is required' },
      { field: `${prefix}/stages`, message: 'is required' },
    ]);
  });
});

describe('legacy creation (POST /pipelines)', () => {
  it('requires apiKey as a string', () => {
    expect(errorsOf(validateLegacyCreate(definition))).toEqual([
      { field: '/apiKey', message: 'is required' },
    ]);
    expect(errorsOf(validateLegacyCreate({ ...definition, apiKey: null }))).toEqual([
      { field: '/apiKey', message: 'must be a string' },
    ]);
  });

  it('keeps apiKey in the value', () => {
    expect(valueOf(validateLegacyCreate({ ...definition, apiKey: 'pos_a' })).apiKey).toBe('pos_a');
  });

  it('legacyApiKeyOf reads a string apiKey before the rest is validated', () => {
    expect(legacyApiKeyOf({ apiKey: 'pos_a', name: 7 })).toBe('pos_a');
    expect(legacyApiKeyOf({ apiKey: 7 })).toBeUndefined();
    expect(legacyApiKeyOf([{ apiKey: 'x' }])).toBeUndefined();
    expect(legacyApiKeyOf(null)).toBeUndefined();
  });
});

describe('idempotent creation (POST /pipelines/idempotent)', () => {
  it('idempotencyKey is 1..200 characters', () => {
    const body = (idempotencyKey: unknown) => ({ ...definition, idempotencyKey });
    expect(validateIdempotentCreate(body(chars(200))).ok).toBe(true);
    expect(errorsOf(validateIdempotentCreate(body(chars(201))))).toEqual([
      { field: '/idempotencyKey', message: 'must have at most 200 characters' },
    ]);
    expect(errorsOf(validateIdempotentCreate(body('')))).toEqual([
      { field: '/idempotencyKey', message: 'must have at least 1 character' },
    ]);
    expect(errorsOf(validateIdempotentCreate(definition))).toEqual([
      { field: '/idempotencyKey', message: 'is required' },
    ]);
  });

  it('ignores apiKey, whatever its type, and leaves it out of the value', () => {
    const value = valueOf(
      validateIdempotentCreate({ ...definition, idempotencyKey: 'k', apiKey: 5 }),
    );
    expect(value).toEqual({ ...definition, idempotencyKey: 'k' });
  });
});

describe('idempotency lookup (POST /pipelines/by-idempotency-key)', () => {
  it('idempotencyKey is required, 1..200 characters', () => {
    expect(valueOf(validateIdempotencyLookup({ idempotencyKey: chars(200) }))).toEqual({
      idempotencyKey: chars(200),
    });
    expect(errorsOf(validateIdempotencyLookup({ idempotencyKey: chars(201) }))).toEqual([
      { field: '/idempotencyKey', message: 'must have at most 200 characters' },
    ]);
    expect(errorsOf(validateIdempotencyLookup({}))).toEqual([
      { field: '/idempotencyKey', message: 'is required' },
    ]);
  });
});

describe('append stages (AppendStagesRequest of StageInfo)', () => {
  const info = { stageName: 'load', stageHandlerName: 'load-handler' };
  const append = (stages: unknown) => validateAppendStages({ stages });

  it('needs at least 1 stage, pointing at /stages', () => {
    expect(errorsOf(append([]))).toEqual([
      { field: '/stages', message: 'must have at least 1 item' },
    ]);
    expect(errorsOf(validateAppendStages({}))).toEqual([
      { field: '/stages', message: 'is required' },
    ]);
  });

  it("rejects more than 100 new stages at /stages (the pipeline total is the operation's)", () => {
    expect(append(items(100, () => info)).ok).toBe(true);
    expect(errorsOf(append(items(101, () => info)))).toEqual([
      { field: '/stages', message: 'must have at most 100 items' },
    ]);
  });

  // prettier-ignore
  it.each([
    ['stageName 1..255', '/stageName', chars(255), chars(256), 'must have at most 255 characters'],
    ['stageHandlerName 1..300', '/stageHandlerName', chars(300), '', 'must have at least 1 character'],
    ['description max 255', '/description', chars(255), chars(256), 'must have at most 255 characters'],
    ['runNextIfCurrentFailed is a boolean', '/runNextIfCurrentFailed', false, 'no', 'must be a boolean'],
    ['stageId is an integer or null', '/stageId', 12, '12', 'must be an integer or null'],
    ['pipelineId is an integer or null', '/pipelineId', 3, 1.5, 'must be an integer or null'],
    ['options.timeOut is >= 1', '/options', { timeOut: 1 }, { timeOut: 0 }, 'must be at least 1'],
  ])('StageInfo rule: %s', (_, member, atLimit, pastLimit, message) => {
    const field = member === '/options' ? '/stages/0/options/timeOut' : `/stages/0${member}`;
    expect(append([withAt(info, member, atLimit)]).ok).toBe(true);
    expect(errorsOf(append([withAt(info, member, pastLimit)]))).toEqual([{ field, message }]);
  });

  it('input is any JSON value, kept as given (nulls inside included)', () => {
    const input = { order: 7, note: null, lines: [1, null] };
    const value = valueOf(
      append([
        { ...info, input },
        { ...info, input: 42 },
        { ...info, input: 'raw' },
      ]),
    );
    expect(value.stages.map((s) => s.input)).toEqual([input, 42, 'raw']);
  });

  it('stageId and pipelineId are ignored: any integer, 0 included, is accepted', () => {
    expect(valueOf(append([{ ...info, stageId: 0, pipelineId: 0 }])).stages[0]).toEqual({
      ...info,
      stageId: 0,
      pipelineId: 0,
    });
  });

  it('input null counts as omitted', () => {
    expect(valueOf(append([{ ...info, input: null, stageId: null, pipelineId: null }]))).toEqual({
      stages: [info],
    });
  });

  it('the 262144-byte limit applies to the resulting input string (compact JSON of a non-string)', () => {
    // {"s":"…"} adds 8 bytes around the string.
    expect(append([{ ...info, input: { s: chars(262_136) } }]).ok).toBe(true);
    expect(errorsOf(append([{ ...info, input: { s: chars(262_137) } }]))).toEqual([
      { field: '/stages/0/input', message: 'must be at most 262144 bytes' },
    ]);
    expect(append([{ ...info, input: chars(131_072, 'é') }]).ok).toBe(true);
    expect(errorsOf(append([{ ...info, input: `${chars(131_072, 'é')}!` }]))).toEqual([
      { field: '/stages/0/input', message: 'must be at most 262144 bytes' },
    ]);
  });
});

describe('resume (ResumeStageRequest)', () => {
  it('approved is a required boolean', () => {
    expect(errorsOf(validateResume({}))).toEqual([{ field: '/approved', message: 'is required' }]);
    expect(errorsOf(validateResume({ approved: 'true' }))).toEqual([
      { field: '/approved', message: 'must be a boolean' },
    ]);
    expect(errorsOf(validateResume({ approved: null }))).toEqual([
      { field: '/approved', message: 'must be a boolean' },
    ]);
  });

  it('rejectionReason is a string of at most 4000 characters, or null (= omitted)', () => {
    expect(
      valueOf(validateResume({ approved: false, rejectionReason: chars(4000) })).rejectionReason,
    ).toHaveLength(4000);
    expect(errorsOf(validateResume({ approved: false, rejectionReason: chars(4001) }))).toEqual([
      { field: '/rejectionReason', message: 'must have at most 4000 characters' },
    ]);
    expect(valueOf(validateResume({ approved: false, rejectionReason: null }))).toEqual({
      approved: false,
    });
  });
});

