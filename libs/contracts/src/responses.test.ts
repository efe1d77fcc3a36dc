import { describe, expect, it } from 'vitest';
import {
  appendStagesResponseSchema,
  bootstrapResponseSchema,
  compile,
  idempotentPipelineCreateResponseSchema,
  logResponseSchema,
  pipelinePageSchema,
  pipelineResponseSchema,
  pullJobResponseSchema,
  registeredSchemas,
  schedulePageSchema,
  scheduleRunPageSchema,
  scheduleSchema,
  scheduleBackfillResponseSchema,
  scheduleTriggerResponseSchema,
  stageLeaseResponseSchema,
  stageLogPageSchema,
  stageResultAcceptedSchema,
  validateStageNextMessage,
  versionInfoSchema,
} from './index.js';
import type {
  AppendStagesResponse,
  BootstrapResponse,
  IdempotentPipelineCreateResponse,
  JsonSchema,
  LogResponse,
  Page,
  PipelinePage,
  PipelineResponse,
  PullJobResponse,
  Schedule,
  ScheduleBackfillResponse,
  ScheduleRun,
  ScheduleTriggerResponse,
  StageLeaseResponse,
  StageLogPage,
  StageNextMessage,
  StageResponse,
  StageResultAccepted,
  VersionInfo,
} from './index.js';
import { errorsOf, withAt, withoutAt } from './validation.test-support.js';

const at = '2025-03-01T12:00:00.000Z';

const stageResponse: StageResponse = {
  id: 21,
  pipelineId: 7,
  spanId: '00f067aa0ba902b7',
  name: 'extract',
  stageHandlerName: 'extract-handler',
  description: null,
  status: 'Running',
  createdAt: at,
  startedAt: at,
  finishedAt: null,
  nextRetryAt: null,
  input: '',
  output: null,
  isSkipped: false,
  isEvent: false,
  nextStageId: null,
  logs: [{ id: 1, stageId: 21, message: 'started', logLevel: 'Information', created: at, carriedOver: false }],
  logsTruncated: false,
  options: {
    runNextIfFailed: false,
    retryInterval: 0,
    maxRetries: 0,
    timeOut: 30,
    retryOnErrorCodes: [],
    backoff: 'fixed',
    maxRetryInterval: null,
    jitter: false,
    dependsOn: [],
    runInParallelWith: [],
    failIfOutputEmpty: false,
    notifyOnFailure: false,
    runAsUser: null,
    concurrencyKey: null,
    concurrencyLimit: null,
    priority: 3,
  },
  failureCount: 0,
  lastFailedAt: null,
  hasFailureHistory: false,
  attempt: 1,
  retryAttempt: 0,
  lastErrorCode: null,
  failureDisposition: null,
  isTerminal: false,
  workerId: 'worker-1',
  attemptStartedAt: at,
  attemptEndedAt: null,
  carriedOverFrom: null,
};

const pipeline: PipelineResponse = {
  id: 7,
  name: 'nightly-import',
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  status: 'Running',
  createdAt: at,
  finishedAt: null,
  applicationId: 1,
  stageStatuses: ['Running'],
  stages: [stageResponse],
  pipelineContextItems: [
    { key: 'token', value: '[REDACTED]', valueType: null, isSensitive: true, isDeleted: false },
  ],
  pipelineKeywords: [{ key: 'region', value: 'eu' }],
  isEvent: false,
  idempotencyKey: null,
  isTerminal: false,
  wasExisting: false,
  rerunOf: null,
  reruns: [],
};

const run: ScheduleRun = {
  id: 3,
  scheduleId: 2,
  trigger: 'Manual',
  status: 'Created',
  scheduledFor: at,
  createdAt: at,
  pipelineId: 7,
  pipelineStatus: 'Running',
  reason: null,
};

const schedule: Schedule = {
  id: 2,
  applicationId: 1,
  name: 'Nightly',
  status: 'Active',
  kind: 'Cron',
  cronExpression: '0 2 * * *',
  timeZone: 'Europe/Paris',
  intervalSeconds: null,
  runAt: null,
  definition: { name: 'nightly-import', stages: [{ stageName: 'extract', stageHandlerName: 'h' }] },
  definitionVersion: 1,
  overlapPolicy: 'Skip',
  catchupPolicy: 'None',
  catchupMax: 10,
  jitterSeconds: 0,
  createdAt: at,
  updatedAt: at,
  nextRunAt: '2025-03-02T01:00:00.000Z',
  nextRuns: ['2025-03-02T01:00:00.000Z', '2025-03-03T01:00:00.000Z'],
  lastRunAt: at,
  lastRunStatus: 'Running',
  lastPipelineId: 7,
  health: {
    windowSize: 20,
    total: 1,
    completed: 0,
    failed: 0,
    cancelled: 0,
    running: 1,
    skipped: 0,
    lastFailureAt: null,
    state: 'healthy',
  },
};

const message: StageNextMessage = {
  applicationId: 1,
  pipelineId: 7,
  stageId: 21,
  executionId: '3b241101-e2bb-4255-8caf-4136c566a962',
  stageName: 'extract',
  stageHandlerName: 'extract-handler',
  input: '',
  options: { ...stageResponse.options, timeOut: null },
  pipelineContextItems: [
    { key: 'token', value: 's3cret', valueType: 'string', isSensitive: true, isDeleted: false },
  ],
  traceId: pipeline.traceId,
  spanId: stageResponse.spanId,
  dispatchedAt: at,
  timeOutSeconds: null,
  previousAttempts: 0,
};

const samples: [string, JsonSchema, unknown][] = [
  ['PipelineResponse', pipelineResponseSchema, pipeline],
  [
    'IdempotentPipelineCreateResponse',
    idempotentPipelineCreateResponseSchema,
    {
      pipeline: { ...pipeline, idempotencyKey: 'k-1', wasExisting: true },
      created: false,
      wasExisting: true,
    } satisfies IdempotentPipelineCreateResponse,
  ],
  [
    'AppendStagesResponse',
    appendStagesResponseSchema,
    {
      stages: [
        {
          id: 22,
          pipelineId: 7,
          name: 'load',
          stageHandlerName: 'load-handler',
          status: 'NotStarted',
          createdAt: at,
          isSkipped: false,
          isEvent: false,
          runNextIfCurrentFailed: false,
          input: '{"a":1}',
          nextStageId: null,
          finishedAt: null,
          startedAt: null,
        },
      ],
    } satisfies AppendStagesResponse,
  ],
  [
    'StageLogPage',
    stageLogPageSchema,
    { items: stageResponse.logs, nextCursor: 'bDEuMC4xLnh4' } satisfies StageLogPage,
  ],
  ['Schedule', scheduleSchema, schedule],
  [
    'SchedulePage',
    schedulePageSchema,
    { items: [schedule], nextCursor: null } satisfies Page<Schedule>,
  ],
  [
    'ScheduleRunPage',
    scheduleRunPageSchema,
    { items: [run], nextCursor: 'c2' } satisfies Page<ScheduleRun>,
  ],
  [
    'ScheduleTriggerResponse',
    scheduleTriggerResponseSchema,
    { run, pipeline } satisfies ScheduleTriggerResponse,
  ],
  [
    'ScheduleBackfillResponse',
    scheduleBackfillResponseSchema,
    {
      ticks: 2,
      created: 1,
      runs: [
        { ...run, trigger: 'Backfill' },
        {
          ...run,
          id: 4,
          trigger: 'Backfill',
          status: 'Skipped',
          pipelineId: null,
          pipelineStatus: null,
          reason: 'overlap',
        },
      ],
    } satisfies ScheduleBackfillResponse,
  ],
  [
    'PipelineResponse of a rerun',
    pipelineResponseSchema,
    { ...pipeline, id: 9, rerunOf: 7, reruns: [12, 10] } satisfies PipelineResponse,
  ],
  [
    'PipelinePage',
    pipelinePageSchema,
    {
      items: [
        {
          id: 7,
          name: 'nightly-import',
          status: 'Running',
          isTerminal: false,
          traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
          createdAt: at,
          finishedAt: null,
          scheduleName: 'Nightly',
          rerunOf: null,
          stageCount: 2,
          stageStatusCounts: {
            NotStarted: 1,
            Running: 1,
            Pending: 0,
            RetryScheduled: 0,
            Throttled: 0,
            WaitingForApproval: 0,
            Completed: 0,
            Failed: 0,
            Skipped: 0,
            Cancelled: 0,
          },
        },
      ],
      nextCursor: 'eyJ.abc',
    } satisfies PipelinePage,
  ],
  [
    'VersionInfo',
    versionInfoSchema,
    {
      version: '0.5.0',
      licenseTier: 'community',
      commit: 'abc123',
      builtAt: at,
    } satisfies VersionInfo,
  ],
  [
    'LogResponse',
    logResponseSchema,
    { id: 5, applicationId: null, stored: true } satisfies LogResponse,
  ],
  [
    'BootstrapResponse',
    bootstrapResponseSchema,
    {
      workerId: 'w-1',
      sessionToken: 'tok',
      sessionExpiresAt: at,
      applicationId: 1,
      queues: ['app_1_extract-handler_StageNext'],
      heartbeatIntervalSeconds: 30,
      messageBroker: { enabled: false, connectionString: null },
    } satisfies BootstrapResponse,
  ],
  [
    'StageLeaseResponse (refusal)',
    stageLeaseResponseSchema,
    {
      acquired: false,
      attempt: null,
      leaseExpiresAt: null,
      reason: 'lease_held',
    } satisfies StageLeaseResponse,
  ],
  [
    'StageLeaseResponse (grant)',
    stageLeaseResponseSchema,
    { acquired: true, attempt: 1, leaseExpiresAt: at, reason: null } satisfies StageLeaseResponse,
  ],
  [
    'PullJobResponse',
    pullJobResponseSchema,
    {
      token: 'd-1',
      queue: 'app_1_extract-handler_StageNext',
      payload: message,
      messageId: '42',
      headers: {},
    } satisfies PullJobResponse,
  ],
  [
    'StageResultAccepted',
    stageResultAcceptedSchema,
    { accepted: true, stageId: 21, executionId: message.executionId } satisfies StageResultAccepted,
  ],
];

describe('response schemas', () => {
  it.each(samples)('a well-formed %s passes', (_, schema, body) => {
    const result = compile(schema, { normalise: false })(body);
    expect(result.ok ? [] : result.errors).toEqual([]);
  });

  it('every field of a response is required (always present, null when no value)', () => {
    const validate = compile(pipelineResponseSchema, { normalise: false });
    expect(errorsOf(validate(withoutAt(pipeline, '/finishedAt')))).toEqual([
      { field: '/finishedAt', message: 'is required' },
    ]);
    expect(errorsOf(validate(withoutAt(pipeline, '/stages/0/options/runAsUser')))).toEqual([
      { field: '/stages/0/options/runAsUser', message: 'is required' },
    ]);
    // Closed schemas are the response bodies, plus the stored (request-shaped) definition. The
    // extensions of decision 0098 appear only when the request asked for them; a pull's backlog
    // only when its message waited for a place (decision 0132).
    const askedFor: Record<string, string[]> = { PullJobResponse: ['lease', 'backlog'], StageResultAccepted: ['acked', 'next'] };
    for (const schema of registeredSchemas()) {
      const title = String(schema.title);
      if (schema.additionalProperties !== false) continue;
      // A bulk operation's filter is closed so that a misspelt field is refused, not dropped (a
      // broader match than meant); it is request-shaped in the operation's view too.
      if (title === 'ProblemDetails' || title.startsWith('Stored') || title === 'BulkFilter') continue;
      const listed = Object.keys(schema.properties as object).filter((k) => !askedFor[title]?.includes(k));
      expect(schema.required).toEqual(listed);
    }
  });

  it('StageOptions in a StageResponse carry all 16 fields (addendum §4 and flow control, decision 0132)', () => {
    expect(Object.keys(stageResponse.options)).toHaveLength(16);
    const validate = compile(pipelineResponseSchema, { normalise: false });
    expect(validate(pipeline).ok).toBe(true);
  });

  it('a response member the contract does not list is an error (apiKey never appears)', () => {
    const validate = compile(scheduleSchema, { normalise: false });
    expect(errorsOf(validate(withAt(schedule, '/definition/apiKey', 'pos_x')))).toEqual([
      { field: '/definition/apiKey', message: 'is not allowed' },
    ]);
  });

  it('response date-times are UTC with exactly three fractional digits and Z', () => {
    const validate = compile(pipelineResponseSchema, { normalise: false });
    expect(errorsOf(validate({ ...pipeline, createdAt: '2025-03-01T12:00:00Z' }))).toEqual([
      {
        field: '/createdAt',
        message: 'must match the pattern ^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
      },
    ]);
  });

  it('enumerations are case-sensitive', () => {
    const validate = compile(pipelineResponseSchema, { normalise: false });
    expect(errorsOf(validate({ ...pipeline, status: 'running' }))[0]?.field).toBe('/status');
  });

  it('a StageNextMessage is validated as received, nothing dropped', () => {
    expect(validateStageNextMessage(message)).toEqual({ ok: true, value: message });
    expect(errorsOf(validateStageNextMessage({ ...message, extra: 1 }))).toEqual([
      { field: '/extra', message: 'is not allowed' },
    ]);
    expect(errorsOf(validateStageNextMessage(withoutAt(message, '/previousAttempts')))).toEqual([
      { field: '/previousAttempts', message: 'is required' },
    ]);
  });
});
