// Optional OpenTelemetry. The SDK has no dependencies; when the application has
// `@opentelemetry/api` installed and registers a tracer provider (its own SDK setup, or
// `node --import @po/telemetry/register`), each execution gets a `stage.handler` span, a child of
// the delivery's `traceparent`, active while the handler runs so the handler's own spans nest
// under it. Without the package, or without a registered provider, nothing is recorded and the
// delivery's traceparent is passed on as it came.
//
// Only the few members used are declared here, so the SDK's types never mention the package.

interface SpanContextLike {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
}

export interface SpanLike {
  spanContext(): SpanContextLike;
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number }): unknown;
  end(): void;
}

interface TracerLike {
  startSpan(name: string, options: { kind?: number; attributes?: Record<string, string | number | boolean> }, context?: unknown): SpanLike;
}

export interface OpenTelemetryApi {
  ROOT_CONTEXT: unknown;
  trace: {
    getTracer(name: string, version?: string): TracerLike;
    setSpanContext(context: unknown, spanContext: SpanContextLike): unknown;
    setSpan(context: unknown, span: SpanLike): unknown;
  };
  context: { with<T>(context: unknown, fn: () => T): T };
}

let loading: Promise<OpenTelemetryApi | null> | undefined;

/** `@opentelemetry/api` when the application has it installed, else null (loaded once). */
export function loadOpenTelemetry(): Promise<OpenTelemetryApi | null> {
  loading ??= import('@opentelemetry/api').then(
    (api) => api as unknown as OpenTelemetryApi,
    () => null,
  );
  return loading;
}

const TRACEPARENT = /^00-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/;

/** The delivery's W3C traceparent (from `headers.traceparent`), when it is a valid one. */
export function deliveryTraceparent(headers: Readonly<Record<string, unknown>>): string | undefined {
  const value = headers.traceparent;
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!match || /^0+$/.test(match[1] ?? '') || /^0+$/.test(match[2] ?? '')) return undefined;
  return match[0];
}

export interface HandlerSpan {
  span: SpanLike;
  /** The context the handler runs in (the span active). */
  context: unknown;
  /** The span's traceparent (the parent's when no provider recorded one): sent on the next calls, shown as ctx.traceparent. */
  traceparent: string | undefined;
}

const SPAN_KIND_CONSUMER = 4;
const STATUS_ERROR = 2;

/** Starts the handler span as a child of `parent` (a traceparent). */
export function startHandlerSpan(
  api: OpenTelemetryApi,
  parent: string | undefined,
  attributes: Record<string, string | number | boolean>,
): HandlerSpan {
  let parentContext = api.ROOT_CONTEXT;
  const match = parent ? TRACEPARENT.exec(parent) : null;
  if (match) {
    parentContext = api.trace.setSpanContext(api.ROOT_CONTEXT, {
      traceId: match[1] ?? '',
      spanId: match[2] ?? '',
      traceFlags: Number.parseInt(match[3] ?? '0', 16),
      isRemote: true,
    });
  }
  const span = api.trace.getTracer('@po/worker-sdk').startSpan('stage.handler', { kind: SPAN_KIND_CONSUMER, attributes }, parentContext);
  const sc = span.spanContext();
  const valid = /^[\da-f]{32}$/.test(sc.traceId) && !/^0+$/.test(sc.traceId) && /^[\da-f]{16}$/.test(sc.spanId) && !/^0+$/.test(sc.spanId);
  return {
    span,
    context: api.trace.setSpan(parentContext, span),
    traceparent: valid ? `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 1) === 1 ? '01' : '00'}` : parent,
  };
}

/** Marks the handler span failed with the error code only (messages can hold user data). */
export function failHandlerSpan(span: SpanLike, errorCode: string): void {
  span.setStatus({ code: STATUS_ERROR });
  span.setAttribute('error.type', errorCode);
}
