import {
  ATTR_APPLICATION_ID,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  contextFromTraceparent,
  startSpan,
  type Span,
} from '@po/telemetry';
import type { AppContext } from './app.js';

/**
 * The SERVER span of one request (only when tracing is on): a child of the incoming `traceparent`
 * when it is valid, a new trace otherwise. Its trace id is the request's traceId (problem bodies
 * and the access log), so logs and traces share one id.
 */
export function startServerSpan(ctx: AppContext): Span {
  return startSpan(ctx.method, {
    parent: contextFromTraceparent(ctx.get('traceparent') || undefined) ?? ROOT_CONTEXT,
    kind: SpanKind.SERVER,
    attributes: { 'http.request.method': ctx.method, 'url.path': ctx.path },
  });
}

/** Names the span after the route template (OpenTelemetry HTTP conventions) and ends it. */
export function endServerSpan(span: Span, ctx: AppContext, route: string): void {
  span.updateName(`${ctx.method} ${route}`);
  span.setAttribute('http.route', route);
  span.setAttribute('http.response.status_code', ctx.status);
  if (ctx.state.applicationId !== undefined) span.setAttribute(ATTR_APPLICATION_ID, ctx.state.applicationId);
  if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
