import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import type { Middleware, ParameterizedContext } from 'koa';
import type { ProblemCode } from '@po/contracts';
import { DomainError, NotFound, newTraceId, type FieldError } from '@po/domain';
import {
  httpRequestDuration,
  parseTraceparent,
  tracingEnabled,
  withSpan,
  type Logger,
} from '@po/telemetry';
import { toProblem } from './problem.js';
import type { Router } from './router.js';
import { endServerSpan, startServerSpan } from './tracing.js';
import { UNAVAILABLE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from './unavailable.js';

export interface AppState {
  /** Correlation id: the trace-id of an incoming traceparent, otherwise generated (addendum §3). */
  traceId: string;
  applicationId?: number;
  apiKeyId?: number;
  body?: unknown;
  /** Validated path and query parameters, by name. */
  params: Record<string, unknown>;
}
export type AppContext = ParameterizedContext<AppState>;

export interface HttpAppOptions {
  logger: Logger;
  routers: Router[];
  /** Run before the routers, inside the error and logging middleware (e.g. conditionalGet, static files). */
  middleware?: Middleware<AppState>[];
}

function incomingTraceId(header: string | undefined): string {
  return parseTraceparent(header)?.traceId ?? newTraceId();
}

/**
 * Builds a koa app (no listen) with trace ids (and spans when tracing is on), access logs, HTTP
 * metrics, problem+json errors and a 404 fallback. GET /metrics is not here: it has its own port
 * (listenMetrics), so the API port never exposes it.
 */
export function createHttpApp({ logger, routers, middleware = [] }: HttpAppOptions): Koa<AppState> {
  const app = new Koa<AppState>();
  app.proxy = true;
  app.silent = true;

  app.use(async (ctx, next) => {
    const started = performance.now();
    ctx.state.params = {};
    // With tracing on, the request's SERVER span decides the traceId; off, nothing is allocated for it.
    const span = tracingEnabled() ? startServerSpan(ctx) : undefined;
    ctx.state.traceId = span
      ? span.spanContext().traceId
      : incomingTraceId(ctx.get('traceparent') || undefined);
    try {
      await (span ? withSpan(span, next) : next());
    } catch (err) {
      writeProblem(ctx, err, logger);
    }
    const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
    const elapsedMs = performance.now() - started;
    httpRequestDuration()
      .labels(ctx.method, route, String(ctx.status))
      .observe(elapsedMs / 1000);
    if (span) endServerSpan(span, ctx, route);
    logger.info(
      {
        method: ctx.method,
        route,
        status: ctx.status,
        durationMs: Math.round(elapsedMs * 10) / 10,
        traceId: ctx.state.traceId,
        spanId: span?.spanContext().spanId,
        applicationId: ctx.state.applicationId,
      },
      'request',
    );
  });

  for (const m of middleware) app.use(m);
  for (const router of routers) app.use(router.routes());
  app.use(() => {
    throw new NotFound('No such route.');
  });
  return app;
}

function writeProblem(ctx: AppContext, err: unknown, logger: Logger): void {
  let code: ProblemCode;
  let detail: string;
  let errors: FieldError[] | undefined;
  let retryAfterSeconds: number | undefined;
  if (err instanceof DomainError) {
    code = err.code;
    detail = err.message;
    errors = (err as { errors?: FieldError[] }).errors;
    if (code === 'too_many_inflight' || code === 'rate_limited') retryAfterSeconds = (err as { retryAfterSeconds?: number }).retryAfterSeconds ?? 1;
    // A broker away (Redis down, decision 0120) is back by itself, like a database that is: the same request can succeed later.
    if (code === 'broker_unavailable') retryAfterSeconds = UNAVAILABLE_RETRY_AFTER_SECONDS;
  } else if (isDatabaseUnavailable(err)) {
    // A stalled or unreachable database is not a bug of the request or of ours: the same request can succeed later.
    logger.warn({ err, traceId: ctx.state.traceId }, 'database unavailable');
    code = 'service_unavailable';
    retryAfterSeconds = UNAVAILABLE_RETRY_AFTER_SECONDS;
    detail = `The database is slow or unreachable; retry after ${retryAfterSeconds} seconds.`;
  } else {
    const errorId = randomUUID();
    logger.error({ err, errorId, traceId: ctx.state.traceId }, 'unhandled error');
    code = 'internal';
    detail = `Unexpected error; reference ${errorId}.`;
  }
  const body = toProblem(code, detail, { path: ctx.path, traceId: ctx.state.traceId }, errors);
  ctx.status = body.status;
  ctx.type = 'application/problem+json';
  ctx.body = JSON.stringify(body);
  if (retryAfterSeconds !== undefined) ctx.set('Retry-After', String(retryAfterSeconds));
}
