// The optional OpenTelemetry support: with @opentelemetry/api and a registered provider in the
// worker process, each execution runs inside a `stage.handler` span whose traceparent the SDK
// sends on its result call and shows as ctx.traceparent.
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HandlerContext } from './index.js';
import { StageError } from './index.js';
import { useHarness } from './test-helpers.test-support.js';
import { deliveryTraceparent, loadOpenTelemetry, startHandlerSpan } from './tracing.js';

const exporter = new InMemorySpanExporter();
const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
});
afterAll(() => {
  trace.disable();
  context.disable();
});

const h = useHarness();

describe('handler spans', () => {
  it('start as a child of the delivery\'s traceparent', async () => {
    const api = (await loadOpenTelemetry())!;
    const started = startHandlerSpan(api, PARENT, { 'stage.id': 1 });
    started.span.end();
    const [span] = exporter.getFinishedSpans().slice(-1);
    expect(span?.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(span?.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(started.traceparent).toBe(`00-4bf92f3577b34da6a3ce929d0e0e4736-${span?.spanContext().spanId}-01`);
  });

  it('read only a valid traceparent from the delivery headers', () => {
    expect(deliveryTraceparent({ traceparent: PARENT })).toBe(PARENT);
    expect(deliveryTraceparent({ traceparent: PARENT.toUpperCase() })).toBe(PARENT);
    expect(deliveryTraceparent({ traceparent: 'garbage' })).toBeUndefined();
    expect(deliveryTraceparent({ traceparent: 7 })).toBeUndefined();
    expect(deliveryTraceparent({})).toBeUndefined();
  });

  it('wrap each execution: active while the handler runs, failed with the error code only, sent on the result call', async () => {
    const { gw } = h;
    const seen: { ctx: HandlerContext; active: string | undefined }[] = [];
    await h.start({
      job: (ctx) => {
        seen.push({ ctx, active: trace.getActiveSpan()?.spanContext().spanId });
        if (ctx.input === 'fail') throw new StageError('PAYMENT_DECLINED', `card ${'4111'.repeat(4)} declined`);
        return 'ok';
      },
    });
    const ok = gw.enqueue('job', { input: 'ok' });
    const failing = gw.enqueue('job', { input: 'fail' });
    await gw.until(() => gw.acks.length === 2);

    const spans = exporter.getFinishedSpans().filter((s) => s.name === 'stage.handler');
    const spanOf = (stageId: number) => spans.find((s) => s.attributes['stage.id'] === stageId)!;
    const good = spanOf(ok.stageId);
    const bad = spanOf(failing.stageId);
    expect(good.attributes).toMatchObject({ 'stage.handler': 'job', 'execution.id': ok.executionId, 'stage.attempt': 1 });
    expect(good.status.code).toBe(0);
    expect(bad.status).toEqual({ code: 2 });
    expect(bad.attributes['error.type']).toBe('PAYMENT_DECLINED');
    expect(bad.events).toEqual([]);

    const traceparentOf = (spanId: string, traceId: string) => `00-${traceId}-${spanId}-01`;
    const first = seen.find((s) => s.ctx.stage.stageId === ok.stageId)!;
    expect(first.active).toBe(good.spanContext().spanId);
    expect(first.ctx.traceparent).toBe(traceparentOf(good.spanContext().spanId, good.spanContext().traceId));
    const [result] = gw.calls(`/stages/${ok.stageId}/result`);
    expect(result?.headers.traceparent).toBe(first.ctx.traceparent);
  });
});
