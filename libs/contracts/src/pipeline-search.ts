// GET /pipelines (issue 12, decision 0089): the query parameters of the search, their parsers,
// and the page of pipeline summaries it answers. Errors name the parameter (`status`, `name`,
// `keyword`, …), as for every query parameter (addendum §3).
import { MAX_DATE_TIME, MIN_DATE_TIME, dateTimeProblem, toUtcMillis } from './datetime.js';
import { arrayOf, bool, enumOf, int, MAX_ID, nullable, ref, response, str, utcDateTime } from './fragments.js';
import { limits } from './limits.js';
import type { QueryValue } from './params.js';
import { PIPELINE_STATUSES, STAGE_STATUSES } from './pipelines.js';
import type { PipelineStatus, StageStatus } from './pipelines.js';
import { registerSchemas } from './validate.js';
import type { Validation } from './validate.js';

/** At most this many `keyword` filters in one search (each is one more check per pipeline). */
export const SEARCH_KEYWORDS_MAX = 10;

/** A `keyword` filter: a pipeline keyword with this key, and this value when one is given. */
export interface KeywordFilter {
  key: string;
  value: string | null;
}

/** The validated filters of GET /pipelines (absent parameters are absent members). */
export interface PipelineSearchQuery {
  /** Distinct, in the order of PIPELINE_STATUSES; empty: every status. */
  status: PipelineStatus[];
  name?: string;
  /** Distinct, sorted by key then value (all must match, so their order means nothing). */
  keyword: KeywordFilter[];
  scheduleName?: string;
  /** Normalised to UTC milliseconds (`…Z`). */
  createdAfter?: string;
  createdBefore?: string;
  stageHandlerName?: string;
}

// ---------------------------------------------------------------------------------------------
// Parsers (one per parameter; a parameter given more often than it may be is an error)

const CONTROL_CHARACTER = /\p{Cc}/u;
/** PostgreSQL text cannot hold U+0000; no stored name, keyword or handler contains it (decision 0080). */
const NUL_MESSAGE = 'must not contain the NUL character (U+0000)';
const chars = (s: string): number => [...s].length;

function fail<T>(field: string, message: string): Validation<T> {
  return { ok: false, errors: [{ field, message }] };
}

const many = (raw: QueryValue): readonly string[] => (raw === undefined ? [] : typeof raw === 'string' ? [raw] : raw);

function single(raw: QueryValue, field: string): Validation<string | undefined> {
  const values = many(raw);
  if (values.length > 1) return fail(field, 'must be given at most once');
  return { ok: true, value: values[0] };
}

/** A text of 1..max characters (code points), optionally without control characters. */
function text(field: string, max: number, noControl = false) {
  return (raw: QueryValue): Validation<string | undefined> => {
    const one = single(raw, field);
    if (!one.ok || one.value === undefined) return one;
    const n = chars(one.value);
    if (n < 1) return fail(field, 'must not be empty');
    if (n > max) return fail(field, `must have at most ${max} characters`);
    if (noControl && CONTROL_CHARACTER.test(one.value)) return fail(field, 'must not contain control characters');
    if (one.value.includes('\u0000')) return fail(field, NUL_MESSAGE);
    return one;
  };
}

/** `status`, repeatable: any of the given statuses (each NotStarted … Cancelled, case-sensitive). */
export function parsePipelineStatuses(raw: QueryValue): Validation<PipelineStatus[]> {
  const given = many(raw);
  const unknown = given.filter((s) => !(PIPELINE_STATUSES as readonly string[]).includes(s));
  if (unknown.length > 0) return fail('status', `must be one of: ${PIPELINE_STATUSES.join(', ')}`);
  return { ok: true, value: PIPELINE_STATUSES.filter((s) => given.includes(s)) };
}

/** `name`: a case-insensitive prefix of the pipeline name, 1..255 characters. */
export const parseNamePrefix = text('name', limits.pipelineNameChars);

/** `scheduleName`: the name of one of the application's schedules (case-insensitive), 1..200 characters. */
export const parseScheduleNameFilter = text('scheduleName', limits.scheduleNameChars, true);

/** `stageHandlerName`: a stage of the pipeline has exactly this handler, 1..300 characters. */
export const parseStageHandlerFilter = text('stageHandlerName', limits.stageHandlerNameChars);

/**
 * `keyword`, repeatable, every one must match: `KEY` (a keyword with that key) or `KEY=VALUE`
 * (split at the first `=`: that key and value), both compared exactly; keys and values have the
 * lengths of pipeline keywords (1..300 characters). At most SEARCH_KEYWORDS_MAX distinct filters.
 */
export function parseKeywordFilters(raw: QueryValue): Validation<KeywordFilter[]> {
  const filters = new Map<string, KeywordFilter>();
  for (const item of many(raw)) {
    if (item.includes('\u0000')) return fail('keyword', NUL_MESSAGE);
    const at = item.indexOf('=');
    const key = at < 0 ? item : item.slice(0, at);
    const value = at < 0 ? null : item.slice(at + 1);
    if (chars(key) < 1) return fail('keyword', 'must be KEY or KEY=VALUE with a non-empty KEY');
    if (chars(key) > limits.keywordKeyChars) return fail('keyword', `must have a KEY of at most ${limits.keywordKeyChars} characters`);
    if (value !== null && chars(value) < 1) return fail('keyword', 'must have a non-empty VALUE after =');
    if (value !== null && chars(value) > limits.keywordValueChars) {
      return fail('keyword', `must have a VALUE of at most ${limits.keywordValueChars} characters`);
    }
    filters.set(JSON.stringify([key, value]), { key, value });
  }
  if (filters.size > SEARCH_KEYWORDS_MAX) return fail('keyword', `must be given at most ${SEARCH_KEYWORDS_MAX} times`);
  const sorted = [...filters.values()].sort((a, b) =>
    a.key !== b.key ? (a.key < b.key ? -1 : 1) : (a.value ?? '') < (b.value ?? '') ? -1 : (a.value ?? '') > (b.value ?? '') ? 1 : 0,
  );
  // A key filter and a key=value filter of the same key are both kept: they are distinct (the
  // first is implied by the second, so the result is the same).
  return { ok: true, value: sorted };
}

/** `createdAfter` / `createdBefore`: an RFC 3339 date-time with an offset, normalised to UTC. */
export function dateTimeParam(field: 'createdAfter' | 'createdBefore') {
  return (raw: QueryValue): Validation<string | undefined> => {
    const one = single(raw, field);
    if (!one.ok || one.value === undefined) return one;
    const problem = dateTimeProblem(one.value);
    if (problem === 'format') return fail(field, 'must be an RFC 3339 date-time with an offset (Z or ±hh:mm)');
    if (problem === 'range') return fail(field, `must be from ${MIN_DATE_TIME} to ${MAX_DATE_TIME}`);
    return { ok: true, value: new Date(toUtcMillis(one.value)).toISOString() };
  };
}

export const parseCreatedAfter = dateTimeParam('createdAfter');
export const parseCreatedBefore = dateTimeParam('createdBefore');

// ---------------------------------------------------------------------------------------------
// Responses

export type StageStatusCounts = Record<StageStatus, number>;

export interface PipelineSummary {
  id: number;
  name: string;
  status: PipelineStatus;
  isTerminal: boolean;
  traceId: string;
  createdAt: string;
  finishedAt: string | null;
  /** The schedule that created the pipeline, or null. */
  scheduleName: string | null;
  /** The pipeline this one reruns, or null. */
  rerunOf: number | null;
  stageCount: number;
  stageStatusCounts: StageStatusCounts;
}

export interface PipelinePage {
  items: PipelineSummary[];
  nextCursor: string | null;
}

const count = () => int(0, MAX_ID);

export const stageStatusCountsSchema = response(
  'StageStatusCounts',
  Object.fromEntries(STAGE_STATUSES.map((s) => [s, count()])),
  'stages of the pipeline per status (every status, 0 when none)',
);

export const pipelineSummarySchema = response(
  'PipelineSummary',
  {
    id: int(1, MAX_ID),
    name: str(),
    status: enumOf(PIPELINE_STATUSES),
    isTerminal: bool(),
    traceId: str(),
    createdAt: utcDateTime(),
    finishedAt: nullable(utcDateTime()),
    scheduleName: { ...nullable(str()), description: 'the schedule that created the pipeline, or null' },
    rerunOf: { ...nullable(int(1, MAX_ID)), description: 'the pipeline this one reruns (POST /pipelines/{pipelineId}/rerun), or null' },
    stageCount: count(),
    stageStatusCounts: ref('StageStatusCounts'),
  },
  'a pipeline in a list: no stages, context values or keywords (GET /pipelines/{pipelineId} has them)',
);

export const pipelinePageSchema = response(
  'PipelinePage',
  { items: arrayOf(ref('PipelineSummary')), nextCursor: nullable(str({ minLength: 1 })) },
  'pipelines of the application, newest first (createdAt, then id, descending)',
);

registerSchemas(stageStatusCountsSchema, pipelineSummarySchema, pipelinePageSchema);
