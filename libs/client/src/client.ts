// createClient({ baseUrl, apiKey }): the hand-written layer over openapi-fetch. Each method makes
// one call, returns its body and throws ProblemError for an error answer.
import createFetchClient from 'openapi-fetch';
import type { Client } from 'openapi-fetch';
import { toProblemError } from './errors.js';
import type { paths } from './generated/openapi.js';
import { paginate, type Page, type Paged } from './paging.js';
import {
  DEFAULT_RETRY,
  withRetries,
  type FetchLike,
  type RetryOptions,
  type Sleep,
} from './retry.js';
import type {
  BulkCancelRequest,
  BulkDryRun,
  BulkRerunRequest,
  HandlerSettingsRequest,
  HandlerView,
  WebhookCreated,
  WebhookDeliveryList,
  WebhookDeliveryView,
  WebhookRequest,
  WebhookView,
  IdempotentPipelineCreateRequest,
  IdempotentPipelineCreateResponse,
  PipelineDefinition,
  PipelineListQuery,
  PipelineResponse,
  PipelineSummary,
  OperationView,
  RerunRequest,
  ResumeStageRequest,
  Schedule,
  ScheduleBackfillRequest,
  ScheduleBackfillResponse,
  ScheduleRun,
  ScheduleStatus,
  ScheduleTriggerRequest,
  ScheduleTriggerResponse,
  ScheduleUpsertRequest,
  StageDto,
  StageInfo,
  StageLog,
  VersionInfo,
  WorkerEventRecord,
  WorkerSummary,
} from './types.js';

export interface ClientOptions {
  /** Where the API answers, e.g. `http://127.0.0.1:8080` (a path prefix is kept). */
  baseUrl: string;
  /** The application's API key, sent as X-API-Key. Never logged, never part of an error. */
  apiKey?: string;
  /** Retries of 429/503 for repeatable requests; `false` turns them off. */
  retry?: Partial<RetryOptions> | false;
  /** Another fetch (tests, proxies); default globalThis.fetch. */
  fetch?: FetchLike;
  /** Extra headers sent with every request (a User-Agent, say). */
  headers?: Record<string, string>;
  /** How retries wait (tests); default a timer. */
  sleep?: Sleep;
}

export interface PageQuery {
  limit?: number;
  cursor?: string;
}

type Answer<T> = { data?: T; error?: unknown; response: Response };

/** The body of a successful answer; a ProblemError for any other. */
async function unwrap<T>(call: Promise<Answer<T>>): Promise<{ data: T; response: Response }> {
  const { data, error, response } = await call;
  if (!response.ok) {
    throw toProblemError(
      response.status,
      response.statusText,
      error,
      response.headers.get('retry-after'),
    );
  }
  return { data: data as T, response };
}

async function body<T>(call: Promise<Answer<T>>): Promise<T> {
  return (await unwrap(call)).data;
}

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

export function createClient(options: ClientOptions) {
  const retry =
    options.retry === false
      ? { ...DEFAULT_RETRY, attempts: 1 }
      : { ...DEFAULT_RETRY, ...options.retry };
  const baseFetch: FetchLike = options.fetch ?? ((request) => globalThis.fetch(request));
  const apiKey = options.apiKey;
  const raw: Client<paths> = createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    fetch: withRetries(baseFetch, retry, options.sleep),
    headers: { ...options.headers, ...(apiKey ? { 'X-API-Key': apiKey } : {}) },
  });

  const pipelines = {
    /** Legacy creation (POST /pipelines): a new pipeline on every call; the key goes in the body. */
    create(definition: PipelineDefinition): Promise<PipelineResponse> {
      return body(raw.POST('/pipelines', { body: { ...definition, apiKey: apiKey ?? '' } }));
    },
    /**
     * POST /pipelines/idempotent: creates, or returns the pipeline already bound to the key
     * (`created` false, `wasExisting` true). Safe to retry, so it is retried on 429/503.
     */
    createIdempotent(
      request: IdempotentPipelineCreateRequest,
    ): Promise<IdempotentPipelineCreateResponse> {
      return body(raw.POST('/pipelines/idempotent', { body: request }));
    },
    getByIdempotencyKey(idempotencyKey: string): Promise<PipelineResponse> {
      return body(raw.POST('/pipelines/by-idempotency-key', { body: { idempotencyKey } }));
    },
    get(pipelineId: number): Promise<PipelineResponse> {
      return body(raw.GET('/pipelines/{pipelineId}', { params: { path: { pipelineId } } }));
    },
    /** One page of GET /pipelines. */
    listPage(query: PipelineListQuery = {}): Promise<Page<PipelineSummary>> {
      return body(raw.GET('/pipelines', { params: { query: withoutUndefined(query) } }));
    },
    /** Every pipeline matching `query`, newest pages fetched as the iteration goes. */
    list(query: Omit<PipelineListQuery, 'cursor'> = {}, cursor?: string): Paged<PipelineSummary> {
      return paginate(
        (c) => pipelines.listPage({ ...query, ...(c === undefined ? {} : { cursor: c }) }),
        cursor,
      );
    },
    cancel(pipelineId: number): Promise<PipelineResponse> {
      return body(raw.POST('/pipelines/{pipelineId}/cancel', { params: { path: { pipelineId } } }));
    },
    append(pipelineId: number, stages: StageInfo[]): Promise<StageDto[]> {
      return body(
        raw.POST('/pipelines/{pipelineId}/stages', {
          params: { path: { pipelineId } },
          body: { stages },
        }),
      ).then((r) => r.stages);
    },
    /**
     * A new pipeline from a terminal one; `rerunOf` names the original. From the start (default)
     * or `{ from: 'failed' }`: the stages that Completed are carried over, the rest run.
     */
    rerun(pipelineId: number, options: RerunRequest = {}): Promise<PipelineResponse> {
      return body(
        raw.POST('/pipelines/{pipelineId}/rerun', {
          params: { path: { pipelineId } },
          body: options,
        }),
      );
    },
    /**
     * Reruns every pipeline `filter` matches, at most `maxPerSecond` a second, as an operation
     * (`operations.get`); with `dryRun`, the matched count and a sample instead.
     */
    bulkRerun(request: BulkRerunRequest): Promise<OperationView | BulkDryRun> {
      return body(raw.POST('/pipelines/bulk-rerun', { body: request }));
    },
    /** Cancels every pipeline `filter` matches, as an operation; with `dryRun`, the count. */
    bulkCancel(request: BulkCancelRequest): Promise<OperationView | BulkDryRun> {
      return body(raw.POST('/pipelines/bulk-cancel', { body: request }));
    },
    stageLogsPage(
      pipelineId: number,
      stageId: number,
      query: PageQuery = {},
    ): Promise<Page<StageLog>> {
      return body(
        raw.GET('/pipelines/{pipelineId}/stages/{stageId}/logs', {
          params: { path: { pipelineId, stageId }, query: withoutUndefined(query) },
        }),
      );
    },
    /** A stage's logs, oldest first. */
    stageLogs(
      pipelineId: number,
      stageId: number,
      query: Omit<PageQuery, 'cursor'> = {},
    ): Paged<StageLog> {
      return paginate((cursor) =>
        pipelines.stageLogsPage(pipelineId, stageId, { ...query, ...(cursor ? { cursor } : {}) }),
      );
    },
  };

  const stages = {
    /** Approves or rejects a stage waiting for approval. */
    async resume(stageId: number, decision: ResumeStageRequest): Promise<void> {
      await unwrap(
        raw.POST('/stages/{stageId}/resume', { params: { path: { stageId } }, body: decision }),
      );
    },
  };

  const schedules = {
    listPage(query: PageQuery & { status?: ScheduleStatus } = {}): Promise<Page<Schedule>> {
      return body(raw.GET('/schedules', { params: { query: withoutUndefined(query) } }));
    },
    list(query: { status?: ScheduleStatus; limit?: number } = {}): Paged<Schedule> {
      return paginate((cursor) => schedules.listPage({ ...query, ...(cursor ? { cursor } : {}) }));
    },
    get(name: string): Promise<Schedule> {
      return body(raw.GET('/schedules/{name}', { params: { path: { name } } }));
    },
    /** PUT /schedules/{name}: `created` is true for a new name (201). */
    async upsert(
      name: string,
      request: ScheduleUpsertRequest,
    ): Promise<{ schedule: Schedule; created: boolean }> {
      const { data, response } = await unwrap(
        raw.PUT('/schedules/{name}', { params: { path: { name } }, body: request }),
      );
      return { schedule: data, created: response.status === 201 };
    },
    pause(name: string): Promise<Schedule> {
      return body(raw.POST('/schedules/{name}/pause', { params: { path: { name } } }));
    },
    resume(name: string): Promise<Schedule> {
      return body(raw.POST('/schedules/{name}/resume', { params: { path: { name } } }));
    },
    archive(name: string): Promise<Schedule> {
      return body(raw.POST('/schedules/{name}/archive', { params: { path: { name } } }));
    },
    /** A manual run now; `input` replaces the first stage's input. */
    trigger(name: string, request: ScheduleTriggerRequest = {}): Promise<ScheduleTriggerResponse> {
      return body(
        raw.POST('/schedules/{name}/trigger', { params: { path: { name } }, body: request }),
      );
    },
    runsPage(name: string, query: PageQuery = {}): Promise<Page<ScheduleRun>> {
      return body(
        raw.GET('/schedules/{name}/runs', {
          params: { path: { name }, query: withoutUndefined(query) },
        }),
      );
    },
    /**
     * Runs with trigger Backfill for the ticks in [from, to); idempotent per tick, so it is retried
     * on 429/503 like a GET.
     */
    backfill(name: string, request: ScheduleBackfillRequest): Promise<ScheduleBackfillResponse> {
      return body(
        raw.POST('/schedules/{name}/backfill', { params: { path: { name } }, body: request }),
      );
    },
    /** A schedule's runs, newest first. */
    runs(name: string, query: Omit<PageQuery, 'cursor'> = {}): Paged<ScheduleRun> {
      return paginate((cursor) =>
        schedules.runsPage(name, { ...query, ...(cursor ? { cursor } : {}) }),
      );
    },
  };

  const handlers = {
    /** Every handler of the application (settings, live stages or Active workers), by name. */
    list(): Promise<HandlerView[]> {
      return body(raw.GET('/handlers')).then((r) => r.items);
    },
    get(name: string): Promise<HandlerView> {
      return body(raw.GET('/handlers/{name}', { params: { path: { name } } }));
    },
    /**
     * PUT /handlers/{name}: creates the settings if none exist; an absent member keeps its value,
     * `null` clears a limit.
     */
    update(name: string, settings: HandlerSettingsRequest): Promise<HandlerView> {
      return body(raw.PUT('/handlers/{name}', { params: { path: { name } }, body: settings }));
    },
    pause(name: string): Promise<HandlerView> {
      return handlers.update(name, { paused: true });
    },
    resume(name: string): Promise<HandlerView> {
      return handlers.update(name, { paused: false });
    },
  };

  const operations = {
    /** A bulk rerun or cancel and how far it got. */
    get(id: number): Promise<OperationView> {
      return body(raw.GET('/operations/{id}', { params: { path: { id } } }));
    },
    /** Stops it: no pipeline is started after the answer. */
    cancel(id: number): Promise<OperationView> {
      return body(raw.POST('/operations/{id}/cancel', { params: { path: { id } } }));
    },
  };

  const webhooks = {
    /** The application's webhooks, by name (never their secrets). */
    list(): Promise<WebhookView[]> {
      return body(raw.GET('/webhooks')).then((r) => r.items);
    },
    get(name: string): Promise<WebhookView> {
      return body(raw.GET('/webhooks/{name}', { params: { path: { name } } }));
    },
    /**
     * PUT /webhooks/{name}: creates it, and only then answers its signing secret (`secret`), or
     * replaces its url, events and enabled.
     */
    put(name: string, webhook: WebhookRequest): Promise<WebhookView | WebhookCreated> {
      return body(raw.PUT('/webhooks/{name}', { params: { path: { name } }, body: webhook }));
    },
    async delete(name: string): Promise<void> {
      await body(raw.DELETE('/webhooks/{name}', { params: { path: { name } } }));
    },
    /** A page of the delivery log, newest first; pass `nextCursor` as `cursor` for the next one. */
    deliveries(
      name: string,
      query: { limit?: number; cursor?: string } = {},
    ): Promise<WebhookDeliveryList> {
      return body(
        raw.GET('/webhooks/{name}/deliveries', {
          params: { path: { name }, query: withoutUndefined(query) },
        }),
      );
    },
    /** One more attempt now, under the same webhook-id. */
    retryDelivery(name: string, id: string): Promise<WebhookDeliveryView> {
      return body(
        raw.POST('/webhooks/{name}/deliveries/{id}/retry', { params: { path: { name, id } } }),
      );
    },
  };

  const workers = {
    listPage(query: PageQuery = {}): Promise<Page<WorkerSummary>> {
      return body(raw.GET('/workers', { params: { query: withoutUndefined(query) } }));
    },
    list(query: Omit<PageQuery, 'cursor'> = {}): Paged<WorkerSummary> {
      return paginate((cursor) => workers.listPage({ ...query, ...(cursor ? { cursor } : {}) }));
    },
    eventsPage(workerId: string, query: PageQuery = {}): Promise<Page<WorkerEventRecord>> {
      return body(
        raw.GET('/workers/{workerId}/events', {
          params: { path: { workerId }, query: withoutUndefined(query) },
        }),
      );
    },
    /** A worker's events, newest first. */
    events(workerId: string, query: Omit<PageQuery, 'cursor'> = {}): Paged<WorkerEventRecord> {
      return paginate((cursor) =>
        workers.eventsPage(workerId, { ...query, ...(cursor ? { cursor } : {}) }),
      );
    },
  };

  return {
    pipelines,
    stages,
    schedules,
    handlers,
    operations,
    webhooks,
    workers,
    version(): Promise<VersionInfo> {
      return body(raw.GET('/version'));
    },
    /** The openapi-fetch client underneath (same headers and retries), for anything else. */
    raw,
  };
}

export type PoClient = ReturnType<typeof createClient>;
