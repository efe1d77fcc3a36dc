import { describe, expect, it } from 'vitest';
import { compile, validateLogRequest, versionInfoSchema } from './index.js';
import { chars, errorsOf, items, valueOf } from './validation.test-support.js';

describe('legacy log request (POST /logs, addendum §5.7)', () => {
  it('a missing or empty message is a 400 at /message', () => {
    expect(errorsOf(validateLogRequest({}))).toEqual([
      { field: '/message', message: 'is required' },
    ]);
    expect(errorsOf(validateLogRequest({ message: '' }))).toEqual([
      { field: '/message', message: 'must have at least 1 character' },
    ]);
  });

  it('message is at most 65536 UTF-8 bytes', () => {
    expect(validateLogRequest({ message: chars(65_536) }).ok).toBe(true);
    expect(validateLogRequest({ message: chars(32_768, 'é') }).ok).toBe(true);
    expect(errorsOf(validateLogRequest({ message: `${chars(32_768, 'é')}a` }))).toEqual([
      { field: '/message', message: 'must be at most 65536 bytes' },
    ]);
  });

  it('logLevel is 1..32 characters', () => {
    expect(validateLogRequest({ message: 'm', logLevel: chars(32) }).ok).toBe(true);
    expect(errorsOf(validateLogRequest({ message: 'm', logLevel: chars(33) }))).toEqual([
      { field: '/logLevel', message: 'must have at most 32 characters' },
    ]);
    expect(errorsOf(validateLogRequest({ message: 'm', logLevel: '' }))).toEqual([
      { field: '/logLevel', message: 'must have at least 1 character' },
    ]);
  });

  it('keywords are at most 64 PipelineKeywords; ids are integers >= 1; created has an offset', () => {
    const kw = { key: 'k', value: 'v' };
    expect(validateLogRequest({ message: 'm', keywords: items(64, () => kw) }).ok).toBe(true);
    expect(
      errorsOf(
        validateLogRequest({
          message: 'm',
          keywords: items(65, () => kw),
          pipelineId: 0,
          stageId: '3',
          created: '2025-03-01T12:00:00',
        }),
      ),
    ).toEqual([
      { field: '/pipelineId', message: 'must be at least 1' },
      { field: '/stageId', message: 'must be an integer' },
      { field: '/keywords', message: 'must have at most 64 items' },
      { field: '/created', message: 'must be an RFC 3339 date-time with an offset (Z or ±hh:mm)' },
    ]);
  });

  it('apiKey is an optional string, kept in the value', () => {
    expect(valueOf(validateLogRequest({ message: 'm', apiKey: 'pos_x', stageId: null }))).toEqual({
      message: 'm',
      apiKey: 'pos_x',
    });
    expect(errorsOf(validateLogRequest({ message: 'm', apiKey: 5 }))).toEqual([
      { field: '/apiKey', message: 'must be a string' },
    ]);
  });
});

describe('VersionInfo', () => {
  const validate = compile(versionInfoSchema, { normalise: false });
  const info = { version: '0.5.0', licenseTier: 'community', commit: null, builtAt: null };

  it('version is SemVer with core 0.5.0', () => {
    expect(validate(info).ok).toBe(true);
    expect(validate({ ...info, version: '0.5.0-dev+abc123' }).ok).toBe(true);
    expect(errorsOf(validate({ ...info, version: '0.6.0' }))[0]?.field).toBe('/version');
    expect(errorsOf(validate({ ...info, version: '0.5.0.1' }))[0]?.field).toBe('/version');
  });

  it('licenseTier is "community"', () => {
    expect(errorsOf(validate({ ...info, licenseTier: 'enterprise' }))).toEqual([
      { field: '/licenseTier', message: 'must be one of: community' },
    ]);
  });
});
