// Bulk rerun and cancel (issue 32, decision 0133): POST /pipelines/bulk-rerun,
// POST /pipelines/bulk-cancel, GET /operations/{id} and POST /operations/{id}/cancel. A bulk
// filter has the fields and the syntax of GET /pipelines' query parameters (a keyword is `KEY` or
// `KEY=VALUE`), checked by the same parsers.
import {
  arrayOf,
  bool,
  enumOf,
  int,
  named,
  nullable,
  ref,
  response,
  str,
  utcDateTime,
  MAX_ID,
} from './fragments.js';
import {
  parseCreatedAfter,
  parseCreatedBefore,
  parseKeywordFilters,
  parseNamePrefix,
  parsePipelineStatuses,
  parseScheduleNameFilter,
  parseStageHandlerFilter,
  type PipelineSearchQuery,
} from './pipeline-search.js';
import { RERUN_FROM, type RerunFromValue } from './reruns.js';
import { compile, registerSchemas } from './validate.js';
import type { FieldError, Validation, Validator } from './validate.js';

export const OPERATION_KINDS = ['rerun', 'cancel'] as const;
export type OperationKindValue = (typeof OPERATION_KINDS)[number];
export const OPERATION_STATUSES = ['Running', 'Succeeded', 'Cancelled', 'Failed'] as const;
export type OperationStatusValue = (typeof OPERATION_STATUSES)[number];

/** An operation matches at most this many pipelines (decision 0133): narrow the filter beyond. */
export const BULK_OPERATION_MAX_ITEMS = 100_000;
/** A dry run shows this many of the matched pipeline ids. */
export const BULK_SAMPLE_SIZE = 20;
/** The failures GET /operations/{id} lists (the first, by pipeline id). */
export const OPERATION_FAILURES_SHOWN = 100;
export const BULK_MAX_PER_SECOND = 1000;
export const BULK_DEFAULT_MAX_PER_SECOND = 50;

/** The filter as given: GET /pipelines' query parameters as JSON members. */
export interface BulkFilter {
  status?: string[];
  name?: string;
  keyword?: string[];
  scheduleName?: string;
  createdAfter?: string;
  createdBefore?: string;
  stageHandlerName?: string;
}

export interface BulkRequest {
  filter: BulkFilter;
  dryRun?: boolean;
  maxPerSecond?: number;
}

export interface BulkRerunRequest extends BulkRequest {
  from?: RerunFromValue;
}

/** A validated bulk request: the filter parsed as GET /pipelines parses it. */
export interface ValidBulkRequest {
  filter: PipelineSearchQuery;
  dryRun: boolean;
  maxPerSecond: number;
  from: RerunFromValue;
}

export interface BulkDryRun {
  matched: number;
  sample: number[];
}

export interface OperationView {
  id: number;
  kind: OperationKindValue;
  status: OperationStatusValue;
  filter: BulkFilter;
  from: RerunFromValue | null;
  maxPerSecond: number;
  matched: number;
  done: number;
  failed: number;
  failures: { pipelineId: number; reason: string }[];
  createdAt: string;
  finishedAt: string | null;
}

// ---------------------------------------------------------------------------------------------
// Schemas

const filterSchema = named(
  'BulkFilter',
  {
    status: {
      ...arrayOf(str()),
      description: 'any of these pipeline statuses, as `status` of GET /pipelines',
    },
    name: {
      ...str(),
      description: 'a case-insensitive prefix of the name, as `name` of GET /pipelines',
    },
    keyword: {
      ...arrayOf(str()),
      description: 'every one must match: `KEY` or `KEY=VALUE`, as `keyword` of GET /pipelines',
    },
    scheduleName: str(),
    createdAfter: { ...str(), description: 'RFC 3339 date-time, inclusive' },
    createdBefore: { ...str(), description: 'RFC 3339 date-time, exclusive' },
    stageHandlerName: str(),
  },
  {
    description: "the fields of GET /pipelines' filters; at least one must be given",
    closed: true,
  },
);

const common = {
  filter: ref('BulkFilter'),
  dryRun: bool('answer the matched count and a sample, and change nothing'),
  maxPerSecond: int(
    1,
    BULK_MAX_PER_SECOND,
    `pipelines a second at most (default ${BULK_DEFAULT_MAX_PER_SECOND})`,
  ),
};

export const bulkRerunRequestSchema = named(
  'BulkRerunRequest',
  {
    ...common,
    from: enumOf(
      RERUN_FROM,
      '`failed` (default): carry over what Completed; `start`: run every stage again',
    ),
  },
  { required: ['filter'] },
);
export const bulkCancelRequestSchema = named('BulkCancelRequest', common, { required: ['filter'] });

export const bulkDryRunSchema = response('BulkDryRun', {
  matched: int(0, MAX_ID),
  sample: {
    ...arrayOf(int(1, MAX_ID), { maxItems: BULK_SAMPLE_SIZE }),
    description: `the first ${BULK_SAMPLE_SIZE} matched pipeline ids, ascending`,
  },
});

export const operationViewSchema = response(
  'OperationView',
  {
    id: int(1, MAX_ID),
    kind: enumOf(OPERATION_KINDS),
    status: enumOf(OPERATION_STATUSES),
    filter: ref('BulkFilter'),
    from: nullable(enumOf(RERUN_FROM)),
    maxPerSecond: int(1, BULK_MAX_PER_SECOND),
    matched: {
      ...int(0, MAX_ID),
      description: 'pipelines the filter matched when the operation was created',
    },
    done: int(0, MAX_ID),
    failed: int(0, MAX_ID),
    failures: {
      ...arrayOf(
        {
          type: 'object',
          required: ['pipelineId', 'reason'],
          additionalProperties: false,
          properties: { pipelineId: int(1, MAX_ID), reason: str() },
        },
        { maxItems: OPERATION_FAILURES_SHOWN },
      ),
      description: `the first ${OPERATION_FAILURES_SHOWN} pipelines that could not be rerun or cancelled, by id, with why`,
    },
    createdAt: utcDateTime(),
    finishedAt: nullable(utcDateTime()),
  },
  'a bulk rerun or cancel and how far it got',
);

registerSchemas(
  filterSchema,
  bulkRerunRequestSchema,
  bulkCancelRequestSchema,
  bulkDryRunSchema,
  operationViewSchema,
);

// ---------------------------------------------------------------------------------------------
// Validators

const checkRerun: Validator<BulkRerunRequest> = compile(bulkRerunRequestSchema);
const checkCancel: Validator<BulkRequest> = compile(bulkCancelRequestSchema);

/** The filter's fields through GET /pipelines' parsers; errors name `/filter/<field>`. */
function parseFilter(f: BulkFilter): Validation<PipelineSearchQuery> {
  const errors: FieldError[] = [];
  const take = <T>(v: Validation<T>): T | undefined => {
    if (v.ok) return v.value;
    errors.push(...v.errors.map((e) => ({ ...e, field: `/filter/${e.field}` })));
    return undefined;
  };
  const query: PipelineSearchQuery = {
    status: take(parsePipelineStatuses(f.status)) ?? [],
    keyword: take(parseKeywordFilters(f.keyword)) ?? [],
  };
  const optional = {
    name: take(parseNamePrefix(f.name)),
    scheduleName: take(parseScheduleNameFilter(f.scheduleName)),
    createdAfter: take(parseCreatedAfter(f.createdAfter)),
    createdBefore: take(parseCreatedBefore(f.createdBefore)),
    stageHandlerName: take(parseStageHandlerFilter(f.stageHandlerName)),
  };
  for (const [k, v] of Object.entries(optional))
    if (v !== undefined) (query as unknown as Record<string, unknown>)[k] = v;
  if (errors.length > 0) return { ok: false, errors };
  if (Object.values(f).every((v) => v === undefined || (Array.isArray(v) && v.length === 0))) {
    return {
      ok: false,
      errors: [
        {
          field: '/filter',
          message: 'must name at least one field: an empty filter would match every pipeline',
        },
      ],
    };
  }
  if (
    query.createdAfter !== undefined &&
    query.createdBefore !== undefined &&
    query.createdBefore <= query.createdAfter
  ) {
    return {
      ok: false,
      errors: [{ field: '/filter/createdBefore', message: 'must be later than createdAfter' }],
    };
  }
  return { ok: true, value: query };
}

function finish(body: BulkRequest & { from?: RerunFromValue }): Validation<ValidBulkRequest> {
  const filter = parseFilter(body.filter);
  if (!filter.ok) return filter;
  return {
    ok: true,
    value: {
      filter: filter.value,
      dryRun: body.dryRun ?? false,
      maxPerSecond: body.maxPerSecond ?? BULK_DEFAULT_MAX_PER_SECOND,
      from: body.from ?? 'failed',
    },
  };
}

export function validateBulkRerun(data: unknown): Validation<ValidBulkRequest> {
  const r = checkRerun(data);
  return r.ok ? finish(r.value) : r;
}

export function validateBulkCancel(data: unknown): Validation<ValidBulkRequest> {
  const r = checkCancel(data);
  return r.ok ? finish(r.value) : r;
}
