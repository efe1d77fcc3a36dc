import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT_CONTEXT, context, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpanLine } from './file-exporter.js';
import { recordStageSpan, startPipelineSpan } from './pipeline-spans.js';
import { otelTraceId } from './trace-ids.js';
import {
  contextFromTraceparent,
  shutdownTracing,
  stageContext,
  stageParent,
  stageTraceparent,
  startSpan,
  startTracing,
  traceparentOf,
  tracingEnabled,
  withSpan,
} from './tracing.js';

// One file per test process: the SDK registers itself globally.
let dir: string;
let spans: SpanLine[] = [];
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const STAGE_SPAN = '00f067aa0ba902b7';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'po-tracing-'));
  expect(await startTracing({ serviceName: 'unit', env: { OTEL_TRACES_EXPORTER: 'file', OTEL_FILE_EXPORTER_PATH: join(dir, '{service}.jsonl') } })).toBe(true);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function exported(): Promise<SpanLine[]> {
  await shutdownTracing();
  return readFileSync(join(dir, 'unit.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as SpanLine);
}

describe('tracing with an exporter configured', () => {
  it('is on, and a pipeline\'s spans carry its trace id and its stages\' stored span ids', async () => {
    expect(tracingEnabled()).toBe(true);

    // A request in another trace creates a pipeline whose traceId is not a W3C id.
    const request = startSpan('POST /pipelines', { parent: ROOT_CONTEXT });
    const created = withSpan(request, () => startPipelineSpan('pipeline.create', { traceId: 'order-4711', applicationId: 3, id: 9 }, Date.now()))!;
    created.end();
    request.end();
    // A request in the pipeline's own trace: pipeline.create is its child.
    const sameTrace = startSpan('POST /pipelines', { parent: contextFromTraceparent(`00-${TRACE}-1111111111111111-01`)! });
    const child = withSpan(sameTrace, () => startPipelineSpan('pipeline.create', { traceId: TRACE, applicationId: 3, id: 10 }, Date.now()))!;
    child.end();
    sameTrace.end();

    // The stage's span, caused by the creation; then a hop that only knows the stage row.
    recordStageSpan({ pipelineTraceId: TRACE, spanId: STAGE_SPAN, id: 5, handler: 'echo', pipelineId: 10, applicationId: 3 }, trace.setSpan(ROOT_CONTEXT, child), Date.now());
    const hop = startSpan('stage.dispatch', { parent: stageContext(TRACE, STAGE_SPAN) });
    hop.end();
    // A hop whose preferred parent is in another trace falls back to the stage's span, with a link.
    const other = contextFromTraceparent('00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-2222222222222222-01');
    const { parent, links } = stageParent(TRACE, STAGE_SPAN, other);
    startSpan('stage.lease', { parent, links }).end();
    const kept = stageParent(TRACE, STAGE_SPAN, trace.setSpan(ROOT_CONTEXT, hop));
    expect(kept.links).toBeUndefined();
    expect(traceparentOf(hop)).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`));

    spans = await exported();
    expect(tracingEnabled()).toBe(false);
    const byName = (name: string) => spans.filter((s) => s.name === name);

    const [mapped, joined] = byName('pipeline.create');
    expect(mapped).toMatchObject({ traceId: otelTraceId('order-4711'), parentSpanId: null, service: 'unit', attributes: { 'pipeline.trace_id': 'order-4711', 'pipeline.id': 9 } });
    expect(mapped!.links).toEqual([{ traceId: request.spanContext().traceId, spanId: request.spanContext().spanId }]);
    expect(joined).toMatchObject({ traceId: TRACE, parentSpanId: sameTrace.spanContext().spanId });
    expect(joined!.attributes['pipeline.trace_id']).toBeUndefined();

    expect(byName('pipeline.stage')[0]).toMatchObject({ traceId: TRACE, spanId: STAGE_SPAN, parentSpanId: child.spanContext().spanId, attributes: { 'stage.id': 5 } });
    expect(byName('stage.dispatch')[0]).toMatchObject({ traceId: TRACE, parentSpanId: STAGE_SPAN });
    expect(byName('stage.lease')[0]).toMatchObject({ traceId: TRACE, parentSpanId: STAGE_SPAN, links: [{ traceId: 'a'.repeat(32), spanId: '2'.repeat(16) }] });
    // Span ids stay random (and unique) apart from the forced one.
    expect(new Set(spans.map((s) => s.spanId)).size).toBe(spans.length);
  });

  it('hands workers the stage\'s own span when it has no span of its own', () => {
    expect(stageTraceparent('order-4711', STAGE_SPAN)).toBe(`00-${otelTraceId('order-4711')}-${STAGE_SPAN}-01`);
    expect(context.active()).toBe(ROOT_CONTEXT);
  });
});
