import { describe, expect, it } from 'vitest';
import {
  SEARCH_KEYWORDS_MAX,
  parseCreatedAfter,
  parseCreatedBefore,
  parseKeywordFilters,
  parseNamePrefix,
  parsePipelineStatuses,
  parseScheduleNameFilter,
  parseStageHandlerFilter,
} from './index.js';

const error = (field: string, message: string) => ({ ok: false, errors: [{ field, message }] });

describe('GET /pipelines query parameters (decision 0089)', () => {
  it('status is repeatable: any of the pipeline statuses, distinct, absent means all', () => {
    expect(parsePipelineStatuses(undefined)).toEqual({ ok: true, value: [] });
    expect(parsePipelineStatuses('Failed')).toEqual({ ok: true, value: ['Failed'] });
    expect(parsePipelineStatuses(['Cancelled', 'Failed', 'Cancelled'])).toEqual({ ok: true, value: ['Failed', 'Cancelled'] });
  });

  it.each([['failed'], [''], ['Deleted'], [['Failed', 'Archived']], ['Failed,Cancelled']])('status %j is an error at status', (raw) => {
    expect(parsePipelineStatuses(raw)).toEqual(
      error('status', 'must be one of: NotStarted, Pending, Running, Paused, Completed, Failed, Cancelled'),
    );
  });

  it('name is one prefix of 1..255 characters (code points)', () => {
    expect(parseNamePrefix(undefined)).toEqual({ ok: true, value: undefined });
    expect(parseNamePrefix('Nightly_%')).toEqual({ ok: true, value: 'Nightly_%' });
    expect(parseNamePrefix('é'.repeat(255))).toEqual({ ok: true, value: 'é'.repeat(255) });
    expect(parseNamePrefix('x'.repeat(256))).toEqual(error('name', 'must have at most 255 characters'));
    expect(parseNamePrefix('')).toEqual(error('name', 'must not be empty'));
    expect(parseNamePrefix(['a', 'b'])).toEqual(error('name', 'must be given at most once'));
  });

  it('keyword is KEY or KEY=VALUE, split at the first =, distinct and sorted', () => {
    expect(parseKeywordFilters(undefined)).toEqual({ ok: true, value: [] });
    expect(parseKeywordFilters(['region=eu', 'env', 'url=a=b', 'env', 'env=prod'])).toEqual({
      ok: true,
      value: [
        { key: 'env', value: null },
        { key: 'env', value: 'prod' },
        { key: 'region', value: 'eu' },
        { key: 'url', value: 'a=b' },
      ],
    });
  });

  it.each([
    ['', 'must be KEY or KEY=VALUE with a non-empty KEY'],
    ['=prod', 'must be KEY or KEY=VALUE with a non-empty KEY'],
    ['env=', 'must have a non-empty VALUE after ='],
    ['k'.repeat(301), 'must have a KEY of at most 300 characters'],
    [`k=${'v'.repeat(301)}`, 'must have a VALUE of at most 300 characters'],
  ])('keyword %j is an error at keyword', (raw, message) => {
    expect(parseKeywordFilters(raw)).toEqual(error('keyword', message));
  });

  it(`keyword: at most ${SEARCH_KEYWORDS_MAX} distinct filters`, () => {
    const ten = Array.from({ length: SEARCH_KEYWORDS_MAX }, (_, i) => `k${i}`);
    expect(parseKeywordFilters([...ten, ...ten]).ok).toBe(true);
    expect(parseKeywordFilters([...ten, 'one-more'])).toEqual(error('keyword', `must be given at most ${SEARCH_KEYWORDS_MAX} times`));
    expect(parseKeywordFilters(`k=${'v'.repeat(300)}`).ok).toBe(true);
  });

  it('scheduleName: 1..200 characters without control characters; stageHandlerName: 1..300', () => {
    expect(parseScheduleNameFilter('Nightly')).toEqual({ ok: true, value: 'Nightly' });
    expect(parseScheduleNameFilter('x'.repeat(201))).toEqual(error('scheduleName', 'must have at most 200 characters'));
    expect(parseScheduleNameFilter('a\u0000b')).toEqual(error('scheduleName', 'must not contain control characters'));
    expect(parseStageHandlerFilter('h'.repeat(300))).toEqual({ ok: true, value: 'h'.repeat(300) });
    expect(parseStageHandlerFilter('h'.repeat(301))).toEqual(error('stageHandlerName', 'must have at most 300 characters'));
    expect(parseStageHandlerFilter('')).toEqual(error('stageHandlerName', 'must not be empty'));
  });

  it('a NUL character (U+0000), which no stored text holds, is an error at its parameter', () => {
    const nul = 'must not contain the NUL character (U+0000)';
    expect(parseNamePrefix('a\u0000')).toEqual(error('name', nul));
    expect(parseKeywordFilters(['env', 'k=\u0000'])).toEqual(error('keyword', nul));
    expect(parseStageHandlerFilter('\u0000')).toEqual(error('stageHandlerName', nul));
    expect(parseScheduleNameFilter('\u0000')).toEqual(error('scheduleName', 'must not contain control characters'));
  });

  it('createdAfter and createdBefore: RFC 3339 with an offset, normalised to UTC milliseconds', () => {
    expect(parseCreatedAfter('2026-01-02T03:04:05.6789+02:00')).toEqual({ ok: true, value: '2026-01-02T01:04:05.678Z' });
    expect(parseCreatedBefore(undefined)).toEqual({ ok: true, value: undefined });
    expect(parseCreatedAfter('2026-01-02T03:04:05')).toEqual(
      error('createdAfter', 'must be an RFC 3339 date-time with an offset (Z or ±hh:mm)'),
    );
    expect(parseCreatedBefore('2026-02-30T00:00:00Z')).toEqual(
      error('createdBefore', 'must be an RFC 3339 date-time with an offset (Z or ±hh:mm)'),
    );
    expect(parseCreatedBefore('0000-12-31T23:59:59Z')).toEqual(
      error('createdBefore', 'must be from 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z'),
    );
    expect(parseCreatedAfter(['2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z'])).toEqual(
      error('createdAfter', 'must be given at most once'),
    );
  });
});
