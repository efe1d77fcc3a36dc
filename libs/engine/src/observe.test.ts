// The result→applied latency (issue 14 item 4): observed for applied results from the
// worker-gateway's receivedAt, never for fenced ones.
import { describe, expect, it } from 'vitest';
import type { StageResultMessage } from '@po/queues';
import { metricsRegistry } from '@po/telemetry';
import { recordApply } from './observe.js';

async function applyLatency(): Promise<{ count: number; sum: number }> {
  const metric = metricsRegistry.getSingleMetric('po_result_apply_latency_seconds');
  const values = metric ? (await metric.get()).values : [];
  const named = (name: string) => values.find((v) => (v as { metricName?: string }).metricName === name)?.value ?? 0;
  return { count: named('po_result_apply_latency_seconds_count'), sum: named('po_result_apply_latency_seconds_sum') };
}

function message(receivedAt: Date): StageResultMessage {
  return {
    applicationId: 1,
    stageId: 7,
    pipelineId: 3,
    workerId: 'w',
    receivedAt: receivedAt.toISOString(),
    result: { stageId: 7, executionId: 'e-1', attempt: 1, isSuccess: true },
  };
}

describe('result→applied latency', () => {
  it('observes an applied result from the moment the worker-gateway accepted it', async () => {
    const before = await applyLatency();
    recordApply(message(new Date(Date.now() - 1500)), undefined, { applied: true, outcome: 'completed', errorCode: null }, Date.now());
    const after = await applyLatency();
    expect(after.count - before.count).toBe(1);
    expect(after.sum - before.sum).toBeGreaterThanOrEqual(1.5);
    expect(after.sum - before.sum).toBeLessThan(60);
  });

  it('does not observe a fenced result, and never a negative latency when clocks disagree', async () => {
    const before = await applyLatency();
    recordApply(message(new Date(Date.now() - 1000)), undefined, { applied: false, reason: 'stale_execution' }, Date.now());
    expect((await applyLatency()).count).toBe(before.count);
    recordApply(message(new Date(Date.now() + 5000)), undefined, { applied: true, outcome: 'failed', errorCode: 'X' }, Date.now());
    const after = await applyLatency();
    expect(after.count - before.count).toBe(1);
    expect(after.sum - before.sum).toBe(0);
  });
});
