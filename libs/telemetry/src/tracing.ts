import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  context,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type * as SdkTraceBase from '@opentelemetry/sdk-trace-base';
import type { Sampler } from '@opentelemetry/sdk-trace-base';
import { PipelineIdGenerator } from './id-generator.js';
import { tracingSettings, type TracingSettings } from './settings.js';
import { formatTraceparent, otelTraceId, parseTraceparent } from './trace-ids.js';

export { ROOT_CONTEXT, SpanKind, SpanStatusCode, type Context, type Span };

interface Runtime {
  tracer: Tracer;
  ids: PipelineIdGenerator;
  /** The root decision of the configured sampler for a trace id (flags of rebuilt stage contexts). */
  sampled(traceId: string): boolean;
  shutdown(): Promise<void>;
}

let runtime: Runtime | undefined;

/**
 * True once startTracing registered an SDK. Every instrumentation point checks this first, so
 * with tracing off no span, context or attribute object is ever allocated (decision 0050).
 */
export function tracingEnabled(): boolean {
  return runtime !== undefined;
}

/**
 * Sets up tracing for this process from the OTEL_* variables (settings.ts). With no exporter
 * configured it does nothing at all: the SDK modules are not even loaded and @opentelemetry/api
 * keeps its no-op tracer. Call once, before anything creates spans (services/*\/src/instrument.ts).
 */
export async function startTracing(options: { serviceName: string; env?: Record<string, string | undefined> }): Promise<boolean> {
  if (runtime) return true;
  const settings = tracingSettings(options.env ?? process.env);
  if (!settings.enabled) return false;
  const serviceName = settings.serviceName ?? options.serviceName;
  const [node, base, resources] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
  ]);
  const exporters = await Promise.all(
    settings.exporters.map(async (name) => {
      if (name === 'otlp') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
      if (name === 'console') return new base.ConsoleSpanExporter();
      const file = await import('./file-exporter.js');
      return new file.JsonLinesFileExporter(file.spanFilePath(settings.filePath ?? '', serviceName), serviceName);
    }),
  );
  const sampler = buildSampler(base, settings);
  const ids = new PipelineIdGenerator();
  const resource = resources
    .defaultResource()
    .merge(resources.detectResources({ detectors: [resources.envDetector] }))
    .merge(resources.resourceFromAttributes({ 'service.name': serviceName }));
  const provider = new node.NodeTracerProvider({
    resource,
    sampler,
    idGenerator: ids,
    spanProcessors: exporters.map((e) => new base.BatchSpanProcessor(e)),
  });
  provider.register();
  runtime = {
    tracer: trace.getTracer('@po/telemetry'),
    ids,
    sampled: (traceId) =>
      sampler.shouldSample(ROOT_CONTEXT, traceId, 'stage', SpanKind.INTERNAL, {}, []).decision === base.SamplingDecision.RECORD_AND_SAMPLED,
    shutdown: () => provider.shutdown(),
  };
  return true;
}

/** Flushes and stops the SDK (the last step of a graceful shutdown); a no-op when tracing is off. */
export async function shutdownTracing(): Promise<void> {
  const current = runtime;
  runtime = undefined;
  await current?.shutdown();
}

type SdkBase = Pick<typeof SdkTraceBase, 'AlwaysOffSampler' | 'AlwaysOnSampler' | 'ParentBasedSampler' | 'TraceIdRatioBasedSampler'>;

function buildSampler(base: SdkBase, settings: Extract<TracingSettings, { enabled: true }>): Sampler {
  const root = (): Sampler => {
    if (settings.sampler.endsWith('always_off')) return new base.AlwaysOffSampler();
    if (settings.sampler.endsWith('traceidratio')) return new base.TraceIdRatioBasedSampler(settings.ratio);
    return new base.AlwaysOnSampler();
  };
  return settings.sampler.startsWith('parentbased_') ? new base.ParentBasedSampler({ root: root() }) : root();
}

export interface SpanOptions {
  /** Parent context; default the active one. */
  parent?: Context;
  kind?: SpanKind;
  attributes?: Attributes;
  /** Epoch milliseconds (a span recorded after the fact, e.g. once a transaction told us its parent). */
  startTime?: number;
  links?: Link[];
  /** Fix the span id (a stage's stored spanId). */
  spanId?: string;
  /** Start a root span in this trace (a pipeline's trace id) instead of a child of `parent`. */
  rootTraceId?: string;
}

/** Starts a span. Only call it when tracingEnabled(). */
export function startSpan(name: string, options: SpanOptions = {}): Span {
  const rt = runtime;
  if (!rt) return trace.wrapSpanContext({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: TraceFlags.NONE });
  const parent = options.rootTraceId !== undefined ? ROOT_CONTEXT : (options.parent ?? context.active());
  return rt.ids.withIds({ traceId: options.rootTraceId, spanId: options.spanId }, () =>
    rt.tracer.startSpan(
      name,
      { kind: options.kind, attributes: options.attributes, startTime: options.startTime, links: options.links, root: options.rootTraceId !== undefined },
      parent,
    ),
  );
}

/** Runs `fn` with `span` active, so spans started inside it (ours or a user's) are its children. */
export function withSpan<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** Runs `fn` with the span of a W3C traceparent active (as its remote parent); as is without one. */
export function withTraceparent<T>(traceparent: string | undefined, fn: () => T): T {
  const parent = runtime ? contextFromTraceparent(traceparent) : undefined;
  return parent ? context.with(parent, fn) : fn();
}

/** The active context (the current request's span, if any). Only call it when tracingEnabled(). */
export function activeContext(): Context {
  return context.active();
}

/** The span active in the current async context, when tracing is on. */
export function activeSpan(): Span | undefined {
  return runtime ? trace.getActiveSpan() : undefined;
}

/**
 * The stage's own span (its stored `spanId` in the pipeline's trace) as a remote parent: how a hop
 * that knows only the stage row joins the pipeline's trace. Its sampled flag is the configured
 * sampler's root decision for the trace id, so every service samples a pipeline the same way.
 */
export function stageContext(pipelineTraceId: string, stageSpanId: string): Context {
  const traceId = otelTraceId(pipelineTraceId);
  const sampled = runtime?.sampled(traceId) ?? true;
  return trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: stageSpanId, traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE, isRemote: true });
}

/** A context whose parent is the span of a W3C traceparent, or undefined when it is not valid. */
export function contextFromTraceparent(header: string | undefined): Context | undefined {
  const parts = parseTraceparent(header);
  if (!parts) return undefined;
  return trace.setSpanContext(ROOT_CONTEXT, { ...parts, isRemote: true });
}

/**
 * The parent for a hop of a stage: `preferred` (the incoming request's span, or a traceparent that
 * travelled with a queue message) when it is in the pipeline's trace, otherwise the stage's own
 * span; in that case a link keeps the preferred span reachable.
 */
export function stageParent(
  pipelineTraceId: string,
  stageSpanId: string,
  preferred: Context | undefined,
): { parent: Context; links: Link[] | undefined } {
  const traceId = otelTraceId(pipelineTraceId);
  const preferredSpan = preferred ? trace.getSpanContext(preferred) : undefined;
  if (preferred && preferredSpan?.traceId === traceId) return { parent: preferred, links: undefined };
  return { parent: stageContext(pipelineTraceId, stageSpanId), links: preferredSpan && trace.isSpanContextValid(preferredSpan) ? [{ context: preferredSpan }] : undefined };
}

/** A link to the span of a W3C traceparent (undefined when it is not valid). */
export function linksTo(traceparent: string | undefined): Link[] | undefined {
  const parts = parseTraceparent(traceparent);
  return parts ? [{ context: { ...parts, isRemote: true } }] : undefined;
}

export function traceparentOf(span: Span): string {
  const c = span.spanContext();
  return formatTraceparent(c.traceId, c.spanId, (c.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED);
}

/**
 * The traceparent handed to a worker when this process has no span for the hop (tracing off): the
 * stage's own span, sampled. A worker with OpenTelemetry continues the pipeline's trace from it.
 */
export function stageTraceparent(pipelineTraceId: string, stageSpanId: string): string {
  return formatTraceparent(otelTraceId(pipelineTraceId), stageSpanId, true);
}

/** Marks a span failed without a message: error texts can hold user data (decision 0053). */
export function markFailed(span: Span, errorType: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.setAttribute('error.type', errorType);
}
