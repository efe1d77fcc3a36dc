import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import type { ParameterizedContext } from 'koa';
import { DomainError, NotFound, newTraceId, type ErrorCode, type FieldError } from '@po/domain';
import {
  httpRequestDuration,
  parseTraceparent,
  tracingEnabled,
  withSpan,
  type Logger,
} from '@po/telemetry';
import { toProblem } from './problem.js';
import type { Router } from './router.js';
import { metricsEndpoint } from './metrics.js';
import { endServerSpan, startServerSpan } from './tracing.js';

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
}

function incomingTraceId(header: string | undefined): string {
  return parseTraceparent(header)?.traceId ?? newTraceId();
}

/** Builds a koa app (no listen) with trace ids (and spans when tracing is on), access logs, HTTP metrics, GET /metrics, problem+json errors and a 404 fallback. */
export function createHttpApp({ logger, routers }: HttpAppOptions): Koa<AppState> {
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

  app.use(metricsEndpoint);
  for (const router of routers) app.use(router.routes());
  app.use(() => {
    throw new NotFound('No such route.');
  });
  return app;
}

function writeProblem(ctx: AppContext, err: unknown, logger: Logger): void {
  let code: ErrorCode;
  let detail: string;
  let errors: FieldError[] | undefined;
  if (err instanceof DomainError) {
    code = err.code;
    detail = err.message;
    errors = (err as { errors?: FieldError[] }).errors;
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
  if (code === 'too_many_inflight')
    ctx.set('Retry-After', String((err as { retryAfterSeconds?: number }).retryAfterSeconds ?? 1));
}
