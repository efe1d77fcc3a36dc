import { describe, expect, it } from 'vitest';
import {
  compile,
  eventsRequestValidator,
  registeredSchemas,
  validateIdempotentCreate,
  validateLegacyCreate,
  validateLogRequest,
} from './index.js';
import { definition, errorsOf, stage, valueOf } from './validation.test-support.js';

describe('request bodies (addendum §1 Conventions)', () => {
  const legacy = { ...definition, apiKey: 'pos_key' };

  it.each([
    ['a JSON array', []],
    ['a string', 'text'],
    ['a number', 42],
    ['null', null],
    ['a boolean', true],
  ])('a body that is %s gets one error whose field is "" (whole document)', (_, body) => {
    expect(errorsOf(validateLegacyCreate(body))).toEqual([
      { field: '', message: 'must be an object' },
    ]);
  });

  it('accepts and ignores unknown fields on every level, and drops them from the value', () => {
    const body = {
      ...legacy,
      surprise: { deep: true },
      stages: [{ ...stage, colour: 'blue', options: { maxRetries: 1, future: 'x' } }],
    };
    expect(valueOf(validateLegacyCreate(body))).toEqual({
      ...legacy,
      stages: [{ ...stage, options: { maxRetries: 1 } }],
    });
  });

  it('treats an optional field sent as null as omitted: the value has no such member', () => {
    const value = valueOf(
      validateIdempotentCreate({
        ...definition,
        idempotencyKey: 'k-1',
        traceId: null,
        policies: null,
        pipelineKeywords: null,
        stages: [
          { ...stage, description: null, input: null, options: { timeOut: null, backoff: null } },
        ],
      }),
    );
    expect(value).toEqual({
      ...definition,
      idempotencyKey: 'k-1',
      stages: [{ ...stage, options: {} }],
    });
    expect('traceId' in value).toBe(false);
    expect(value.stages[0]?.description).toBeUndefined();
  });

  it('keeps nulls and unknown members inside free-form objects (policies items)', () => {
    const policy = { retry: null, nested: { a: null, b: [null, 1] }, extra: 'kept' };
    const value = valueOf(
      validateLegacyCreate({
        ...legacy,
        policies: [policy],
        stages: [{ ...stage, policies: [policy] }],
      }),
    );
    expect(value.policies).toEqual([policy]);
    expect(value.stages[0]?.policies).toEqual([policy]);
  });

  it('reports a required field sent as null as a type error at that field', () => {
    expect(errorsOf(validateLegacyCreate({ ...legacy, name: null }))).toEqual([
      { field: '/name', message: 'must be a string' },
    ]);
  });

  it('points a missing required field where it would be', () => {
    expect(errorsOf(validateLegacyCreate({ apiKey: 'k', stages: [{}] }))).toEqual([
      { field: '/name', message: 'is required' },
      { field: '/stages/0/stageName', message: 'is required' },
      { field: '/stages/0/stageHandlerName', message: 'is required' },
    ]);
  });

  it('reports all violations found, not only the first', () => {
    const errors = errorsOf(
      validateLegacyCreate({
        apiKey: 7,
        name: '',
        traceId: 'x'.repeat(37),
        stages: [{ stageName: 1, stageHandlerName: '', options: { maxRetries: -1 } }],
      }),
    );
    expect(errors).toEqual([
      { field: '/apiKey', message: 'must be a string' },
      { field: '/name', message: 'must have at least 1 character' },
      { field: '/traceId', message: 'must have at most 36 characters' },
      { field: '/stages/0/stageName', message: 'must be a string' },
      { field: '/stages/0/stageHandlerName', message: 'must have at least 1 character' },
      { field: '/stages/0/options/maxRetries', message: 'must be at least 0' },
    ]);
  });

  it('does not modify the body it is given', () => {
    const body = { ...legacy, traceId: null, unknown: 1 };
    const before = structuredClone(body);
    validateLegacyCreate(body);
    expect(body).toEqual(before);
  });
});

describe('strict types (addendum §1)', () => {
  const withOptions = (options: unknown) => ({
    ...definition,
    idempotencyKey: 'k',
    stages: [{ ...stage, options }],
  });

  it.each([
    ['a numeric string', '3'],
    ['a non-integral number', 1.5],
    ['a boolean', true],
  ])('an integer field rejects %s', (_, maxRetries) => {
    expect(errorsOf(validateIdempotentCreate(withOptions({ maxRetries })))).toEqual([
      { field: '/stages/0/options/maxRetries', message: 'must be an integer' },
    ]);
  });

  it('an integer field accepts an integral JSON number', () => {
    expect(
      valueOf(validateIdempotentCreate(withOptions({ maxRetries: 3 }))).stages[0]?.options,
    ).toEqual({ maxRetries: 3 });
  });

  it.each([['true'], [1], [0], ['false']])('a boolean field rejects %j', (jitter) => {
    expect(errorsOf(validateIdempotentCreate(withOptions({ jitter })))).toEqual([
      { field: '/stages/0/options/jitter', message: 'must be a boolean' },
    ]);
  });

  it('a string field rejects a number', () => {
    expect(errorsOf(validateIdempotentCreate({ ...definition, idempotencyKey: 12 }))).toEqual([
      { field: '/idempotencyKey', message: 'must be a string' },
    ]);
  });
});

describe('lengths: characters are code points, bytes are UTF-8 bytes (addendum §1)', () => {
  const named = (name: string) => validateLegacyCreate({ ...definition, apiKey: 'k', name });

  it('"é" is one character: 255 of them make a valid pipeline name', () => {
    expect(named('é'.repeat(255)).ok).toBe(true);
    expect(errorsOf(named('é'.repeat(256)))).toEqual([
      { field: '/name', message: 'must have at most 255 characters' },
    ]);
  });

  it('an astral emoji is one code point: 255 of them make a valid pipeline name', () => {
    expect('😀'.length).toBe(2);
    expect(named('😀'.repeat(255)).ok).toBe(true);
    expect(errorsOf(named('😀'.repeat(256)))).toEqual([
      { field: '/name', message: 'must have at most 255 characters' },
    ]);
  });

  it('"é" is two bytes: 131072 of them fill the 262144-byte stage input exactly', () => {
    const withInput = (input: string) =>
      validateLegacyCreate({ ...definition, apiKey: 'k', stages: [{ ...stage, input }] });
    expect(withInput('é'.repeat(131_072)).ok).toBe(true);
    expect(errorsOf(withInput(`${'é'.repeat(131_072)}a`))).toEqual([
      { field: '/stages/0/input', message: 'must be at most 262144 bytes' },
    ]);
  });
});

describe('compile', () => {
  it('measures maxBytes of an object as the UTF-8 bytes of its compact JSON', () => {
    const validate = compile({
      type: 'object',
      properties: { data: { type: 'object', maxBytes: 10 } },
    });
    expect(validate({ data: { a: 'é' } }).ok).toBe(true); // {"a":"é"}: 9 characters, 10 bytes
    expect(errorsOf(validate({ data: { a: 'éa' } }))).toEqual([
      { field: '/data', message: 'must be at most 10 bytes' },
    ]);
  });

  it('escapes "/" and "~" in the pointer of a missing property', () => {
    const validate = compile({
      type: 'object',
      required: ['a/b', 'c~d'],
      properties: { 'a/b': { type: 'string' }, 'c~d': { type: 'string' } },
    });
    expect(errorsOf(validate({}))).toEqual([
      { field: '/a~1b', message: 'is required' },
      { field: '/c~0d', message: 'is required' },
    ]);
  });

  it('deduplicates repeated errors', () => {
    const validate = compile({
      type: 'object',
      properties: { a: { allOf: [{ type: 'string' }, { type: 'string' }] } },
    });
    expect(errorsOf(validate({ a: 1 }))).toEqual([{ field: '/a', message: 'must be a string' }]);
  });

  it('rejects a date-time without an offset and accepts Z and ±hh:mm', () => {
    const validate = compile({ type: 'string', format: 'date-time' });
    expect(validate('2025-03-01T12:00:00Z').ok).toBe(true);
    expect(validate('2025-03-01T12:00:00.5+01:30').ok).toBe(true);
    expect(errorsOf(validate('2025-03-01T12:00:00'))).toEqual([
      { field: '', message: 'must be an RFC 3339 date-time with an offset (Z or ±hh:mm)' },
    ]);
  });

  it('with normalise: false validates the document as it is (nulls and unknown members kept)', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    expect(valueOf(compile(schema, { normalise: false })({ a: 'x', b: null }))).toEqual({
      a: 'x',
      b: null,
    });
    expect(errorsOf(compile(schema, { normalise: false })({ a: null }))).toEqual([
      { field: '/a', message: 'must be a string' },
    ]);
  });
});

describe('a 400 costs no more than the items it reports', () => {
  const million = <T>(item: T): T[] => new Array<T>(1_000_000).fill(item);

  it('an array over its maxItems reports the count and the items up to one past the limit, not a million', () => {
    // POST /logs is anonymous: a body of zeros for keywords once gave one error object per zero.
    const errors = errorsOf(validateLogRequest({ message: 'm', keywords: million(0) }));
    expect(errors[0]).toEqual({ field: '/keywords', message: 'must have at most 64 items' });
    expect(errors.length).toBeLessThanOrEqual(1 + 100);
    expect(errors.slice(1).every((e) => /^\/keywords\/\d+$/.test(e.field) && e.message === 'must be an object')).toBe(true);
    const events = errorsOf(eventsRequestValidator(100)({ workerId: 'w', events: million({}) }));
    expect(events[0]).toEqual({ field: '/events', message: 'must have at most 100 items' });
    expect(events.length).toBeLessThanOrEqual(1 + 101);
  });

  it('an array without a limit reports its first hundred bad items; one bad item past them is still found', () => {
    const body = { idempotencyKey: 'k', ...definition, policies: million(0) };
    const errors = errorsOf(validateIdempotentCreate(body));
    expect(errors).toHaveLength(100);
    expect(errors[99]).toEqual({ field: '/policies/99', message: 'must be an object' });
    const policies: unknown[] = million({ p: 1 });
    expect(valueOf(validateIdempotentCreate({ ...body, policies })).policies).toHaveLength(1_000_000);
    policies[999_999] = 'not an object';
    expect(errorsOf(validateIdempotentCreate({ ...body, policies }))).toEqual([
      { field: '/policies/999999', message: 'must be an object' },
    ]);
  });
});

describe('schemas', () => {
  it('every registered schema has an $id and a title, and is frozen', () => {
    const schemas = registeredSchemas();
    expect(schemas.length).toBeGreaterThan(40);
    for (const schema of schemas) {
      expect(schema.$id).toMatch(/^urn:pipeline-orchestration:schema:[A-Za-z]+$/);
      expect(schema.title).toBe(String(schema.$id).split(':').pop());
      expect(Object.isFrozen(schema)).toBe(true);
    }
  });
});
