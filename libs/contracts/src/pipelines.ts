// Pipelines and stages: request bodies (creation, lookup, append, resume), their validators, and
// the rules they share (api-spec.md "Resources and their fields", addendum §6). Response bodies
// are in pipeline-responses.ts.
import { arrayOf, bool, enumOf, freeObject, int, named, nullable, ref, str } from './fragments.js';
import type { JsonSchema } from './fragments.js';
import type { JsonObject, NonNullJsonValue } from './json.js';
import { limits } from './limits.js';
import { compile, registerSchemas } from './validate.js';
import type { Validator } from './validate.js';

// ---------------------------------------------------------------------------------------------
// Enumerations

export const PIPELINE_STATUSES = [
  'NotStarted',
  'Pending',
  'Running',
  'Paused',
  'Completed',
  'Failed',
  'Cancelled',
] as const;
export type PipelineStatus = (typeof PIPELINE_STATUSES)[number];

export const STAGE_STATUSES = [
  'NotStarted',
  'Running',
  'Pending',
  'RetryScheduled',
  'Throttled',
  'WaitingForApproval',
  'Completed',
  'Failed',
  'Skipped',
  'Cancelled',
] as const;
export type StageStatus = (typeof STAGE_STATUSES)[number];

export const BACKOFF_KINDS = ['fixed', 'linear', 'exponential'] as const;
export type Backoff = (typeof BACKOFF_KINDS)[number];

export const FAILURE_DISPOSITIONS = ['retryable', 'terminal'] as const;
export type FailureDisposition = (typeof FAILURE_DISPOSITIONS)[number];

// ---------------------------------------------------------------------------------------------
// Request types (the validated, normalised values: optional members sent as null are absent)

export interface StageOptionsInput {
  runNextIfFailed?: boolean;
  retryInterval?: number;
  maxRetries?: number;
  timeOut?: number;
  retryOnErrorCodes?: string[];
  backoff?: Backoff;
  maxRetryInterval?: number;
  jitter?: boolean;
  dependsOn?: string[];
  runInParallelWith?: string[];
  failIfOutputEmpty?: boolean;
  notifyOnFailure?: boolean;
  runAsUser?: string;
  concurrencyKey?: string;
  concurrencyLimit?: number;
  priority?: number;
}

export interface ContextItemInput {
  key: string;
  value?: string;
  valueType?: string;
  isSensitive?: boolean;
  isDeleted?: boolean;
}

export interface PipelineKeywordInput {
  key: string;
  value: string;
}

export interface StageCreate {
  stageName: string;
  stageHandlerName: string;
  description?: string;
  /** JSON-serialized payload, at most 262144 bytes. */
  input?: string;
  policies?: JsonObject[];
  options?: StageOptionsInput;
  isEvent?: boolean;
  runNextIfFailed?: boolean;
}

/** A stage item of an append request; also a WorkerAppendedStage of a result (addendum §5.2). */
export interface StageInfo {
  stageName: string;
  stageHandlerName: string;
  description?: string;
  /** Any JSON value: a string is kept, other JSON becomes compact JSON (libs/domain `inputString`). */
  input?: NonNullJsonValue;
  policies?: JsonObject[];
  options?: StageOptionsInput;
  isEvent?: boolean;
  runNextIfFailed?: boolean;
  runNextIfCurrentFailed?: boolean;
  /** Ignored. */
  stageId?: number;
  /** Ignored; the URL chooses the pipeline. */
  pipelineId?: number;
}

export type WorkerAppendedStage = StageInfo;

/** Body of pipeline creation and the `definition` of a schedule (`apiKey` is not part of it). */
export interface PipelineDefinition {
  name: string;
  traceId?: string;
  policies?: JsonObject[];
  stages: StageCreate[];
  /** 1..5, lower first (default 3): the priority of its stages that set none. */
  priority?: number;
  pipelineKeywords?: PipelineKeywordInput[];
  pipelineContextItems?: ContextItemInput[];
}

export interface LegacyPipelineCreateRequest extends PipelineDefinition {
  /** Deprecated, write-only: the application API key of the legacy contract. */
  apiKey: string;
}

/** `apiKey` is ignored by the idempotent endpoint and therefore absent from the value. */
export interface IdempotentPipelineCreateRequest extends PipelineDefinition {
  idempotencyKey: string;
}

export interface PipelineIdempotencyLookupRequest {
  idempotencyKey: string;
}

export interface AppendStagesRequest {
  stages: StageInfo[];
}

export interface ResumeStageRequest {
  approved: boolean;
  rejectionReason?: string;
}

// ---------------------------------------------------------------------------------------------
// Request schemas

const stageNameSchema = str({ minLength: 1, maxLength: limits.stageNameChars });
const handlerNameSchema = str({ minLength: 1, maxLength: limits.stageHandlerNameChars });
const descriptionSchema = str({ maxLength: limits.stageDescriptionChars });
const policiesSchema = arrayOf(freeObject(undefined, 'free-form policy object'));

export const stageOptionsInputSchema = named('StageOptionsInput', {
  runNextIfFailed: bool('lets this stage proceed when a required earlier stage failed'),
  retryInterval: int(0, undefined, 'base retry delay, seconds'),
  maxRetries: int(0, undefined, 'automatic retries after the first execution'),
  timeOut: int(1, undefined, 'handler timeout, seconds'),
  retryOnErrorCodes: arrayOf(str({ minLength: 1 })),
  backoff: { ...enumOf(BACKOFF_KINDS), default: 'fixed' },
  maxRetryInterval: int(1, undefined, 'max retry delay, seconds'),
  jitter: { ...bool(), default: false },
  dependsOn: arrayOf(str()),
  runInParallelWith: arrayOf(str()),
  failIfOutputEmpty: bool(),
  notifyOnFailure: bool(),
  runAsUser: str(),
  concurrencyKey: str({
    minLength: 1,
    maxLength: limits.concurrencyKeyChars,
    description: 'stages of an application with the same key are Pending or Running at most concurrencyLimit at once (decision 0132)',
  }),
  concurrencyLimit: int(1, limits.concurrencyLimitMax, 'in-flight stages of the concurrencyKey; default 1; needs a concurrencyKey'),
  priority: int(1, 5, "1..5, lower first; overrides the pipeline's priority"),
});

export const contextItemInputSchema = named(
  'ContextItemInput',
  {
    key: str({ minLength: 1, maxLength: limits.contextKeyChars }),
    value: { ...str({ maxBytes: limits.contextValueBytes }), default: '' },
    valueType: str(),
    isSensitive: { ...bool(), default: false },
    isDeleted: { ...bool(), default: false },
  },
  { required: ['key'] },
);

export const pipelineKeywordInputSchema = named(
  'PipelineKeywordInput',
  {
    key: str({ minLength: 1, maxLength: limits.keywordKeyChars }),
    value: str({ minLength: 1, maxLength: limits.keywordValueChars }),
  },
  { required: ['key', 'value'] },
);

export const stageCreateSchema = named(
  'StageCreate',
  {
    stageName: stageNameSchema,
    stageHandlerName: handlerNameSchema,
    description: descriptionSchema,
    input: str({ maxBytes: limits.stageInputBytes, description: 'JSON-serialized payload' }),
    policies: policiesSchema,
    options: ref('StageOptionsInput'),
    isEvent: bool(),
    runNextIfFailed: bool('compatibility field; standard creation uses options.runNextIfFailed'),
  },
  { required: ['stageName', 'stageHandlerName'] },
);

export const stageInfoSchema = named(
  'StageInfo',
  {
    stageName: stageNameSchema,
    stageHandlerName: handlerNameSchema,
    description: descriptionSchema,
    input: {
      maxBytes: limits.stageInputBytes,
      description:
        'any JSON value: a string is used as is, another value as its compact JSON; the resulting string is limited in bytes',
    },
    policies: policiesSchema,
    options: ref('StageOptionsInput'),
    isEvent: bool(),
    runNextIfFailed: bool(),
    runNextIfCurrentFailed: bool('alias; when present it overrides runNextIfFailed'),
    // Ignored compatibility members: only their type is checked (clients often send 0).
    stageId: nullable({ type: 'integer', description: 'ignored' }),
    pipelineId: nullable({ type: 'integer', description: 'ignored; the URL chooses the pipeline' }),
  },
  { required: ['stageName', 'stageHandlerName'] },
);

const definitionProperties: Record<string, JsonSchema> = {
  name: str({ minLength: 1, maxLength: limits.pipelineNameChars }),
  traceId: str({ maxLength: limits.traceIdChars }),
  policies: policiesSchema,
  stages: arrayOf(ref('StageCreate'), { minItems: 1, maxItems: limits.stagesPerPipeline }),
  priority: int(1, 5, 'default priority of its stages, 1..5, lower first (default 3)'),
  pipelineKeywords: arrayOf(ref('PipelineKeywordInput'), { maxItems: limits.pipelineKeywords }),
  pipelineContextItems: arrayOf(ref('ContextItemInput'), { maxItems: limits.contextItems }),
};
const definitionRequired = ['name', 'stages'];

export const pipelineDefinitionSchema = named('PipelineDefinition', definitionProperties, {
  required: definitionRequired,
});

export const legacyPipelineCreateRequestSchema = named(
  'LegacyPipelineCreateRequest',
  {
    apiKey: { ...str(), writeOnly: true, deprecated: true },
    ...definitionProperties,
  },
  { required: ['apiKey', ...definitionRequired] },
);

const idempotencyKeySchema = str({ minLength: 1, maxLength: limits.idempotencyKeyChars });

export const idempotentPipelineCreateRequestSchema = named(
  'IdempotentPipelineCreateRequest',
  { ...definitionProperties, idempotencyKey: idempotencyKeySchema },
  { required: [...definitionRequired, 'idempotencyKey'] },
);

export const pipelineIdempotencyLookupRequestSchema = named(
  'PipelineIdempotencyLookupRequest',
  { idempotencyKey: idempotencyKeySchema },
  { required: ['idempotencyKey'] },
);

export const appendStagesRequestSchema = named(
  'AppendStagesRequest',
  {
    // The 100-stage total of the pipeline is checked by the operation; more than 100 new stages
    // can never fit, so the schema rejects them early.
    stages: arrayOf(ref('StageInfo'), { minItems: 1, maxItems: limits.stagesPerPipeline }),
  },
  { required: ['stages'] },
);

export const resumeStageRequestSchema = named(
  'ResumeStageRequest',
  {
    approved: bool(),
    rejectionReason: nullable(str({ maxLength: limits.rejectionReasonChars })),
  },
  { required: ['approved'] },
);

// The same definition as stored and returned in a Schedule: closed, so a leaked `apiKey` or an
// unknown member is caught by response checks.
function closedCopy(name: string, schema: JsonSchema, refs: Record<string, string>): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const [key, value] of Object.entries(schema.properties as Record<string, JsonSchema>)) {
    properties[key] = rewriteRefs(value, refs);
  }
  return named(name, properties, {
    required: schema.required as string[],
    closed: true,
  });
}

function rewriteRefs(schema: JsonSchema, refs: Record<string, string>): JsonSchema {
  const target = schema.$ref;
  if (typeof target === 'string') {
    const name = refs[target.slice(target.lastIndexOf(':') + 1)];
    return name === undefined ? schema : ref(name);
  }
  const items = schema.items;
  if (items !== undefined) return { ...schema, items: rewriteRefs(items as JsonSchema, refs) };
  return schema;
}

const storedRefs = {
  StageOptionsInput: 'StoredStageOptions',
  ContextItemInput: 'StoredContextItem',
  PipelineKeywordInput: 'StoredPipelineKeyword',
  StageCreate: 'StoredStageCreate',
};

export const storedPipelineDefinitionSchema = closedCopy(
  'StoredPipelineDefinition',
  pipelineDefinitionSchema,
  storedRefs,
);
const storedComponents = [
  closedCopy('StoredStageOptions', stageOptionsInputSchema, storedRefs),
  closedCopy('StoredContextItem', contextItemInputSchema, storedRefs),
  closedCopy('StoredPipelineKeyword', pipelineKeywordInputSchema, storedRefs),
  closedCopy('StoredStageCreate', stageCreateSchema, storedRefs),
];

registerSchemas(
  stageOptionsInputSchema,
  contextItemInputSchema,
  pipelineKeywordInputSchema,
  stageCreateSchema,
  stageInfoSchema,
  pipelineDefinitionSchema,
  legacyPipelineCreateRequestSchema,
  idempotentPipelineCreateRequestSchema,
  pipelineIdempotencyLookupRequestSchema,
  appendStagesRequestSchema,
  resumeStageRequestSchema,
  ...storedComponents,
  storedPipelineDefinitionSchema,
);

// ---------------------------------------------------------------------------------------------
// Validators

export const validateLegacyCreate: Validator<LegacyPipelineCreateRequest> = compile(
  legacyPipelineCreateRequestSchema,
);
export const validateIdempotentCreate: Validator<IdempotentPipelineCreateRequest> = compile(
  idempotentPipelineCreateRequestSchema,
);
export const validatePipelineDefinition: Validator<PipelineDefinition> =
  compile(pipelineDefinitionSchema);
export const validateIdempotencyLookup: Validator<PipelineIdempotencyLookupRequest> = compile(
  pipelineIdempotencyLookupRequestSchema,
);
export const validateAppendStages: Validator<AppendStagesRequest> =
  compile(appendStagesRequestSchema);
export const validateResume: Validator<ResumeStageRequest> = compile(resumeStageRequestSchema);

// ---------------------------------------------------------------------------------------------
// Helpers for the rules the schemas encode

/**
 * The body `apiKey` of a legacy creation when it is a string, before the rest is validated
 * (addendum §2: a present but invalid key is a 401 checked first; a missing or non-string one
 * is a 400 at `/apiKey`, reported by `validateLegacyCreate`).
 */
export function legacyApiKeyOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const key: unknown = (body as Record<string, unknown>).apiKey;
  return typeof key === 'string' ? key : undefined;
}

