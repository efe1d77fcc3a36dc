// The ready→pulled latency (issue 14 item 4): a delivery handed out by POST /jobs/pull observes
// po_pickup_latency_seconds from its message's dispatchedAt; an empty pull observes nothing.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stageQueueName } from '@po/contracts';
import { metricsRegistry } from '@po/telemetry';
import { startWorkerGateway, type WorkerGatewayHarness } from '../testing/harness.js';

async function pickup(): Promise<{ count: number; sum: number }> {
  const metric = metricsRegistry.getSingleMetric('po_pickup_latency_seconds');
  const values = metric ? (await metric.get()).values : [];
  const named = (name: string) => values.find((v) => (v as { metricName?: string }).metricName === name)?.value ?? 0;
  return { count: named('po_pickup_latency_seconds_count'), sum: named('po_pickup_latency_seconds_sum') };
}

describe('po_pickup_latency_seconds', () => {
  let gw: WorkerGatewayHarness;
  beforeAll(async () => {
    gw = await startWorkerGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('observes the wait of a pulled message from its dispatch, and nothing for an empty pull', async () => {
    const handler = `pickup-${randomUUID().slice(0, 8)}`;
    const queue = stageQueueName(gw.appA.id, handler);
    const pull = () => gw.call('POST', '/jobs/pull', { json: { queue }, headers: { 'x-api-key': gw.appA.key } });

    const before = await pickup();
    expect((await pull()).status).toBe(204);
    expect((await pickup()).count).toBe(before.count);

    const dispatchedAt = Date.now();
    await gw.seedDispatched(gw.appA.id, { name: 'pickup', stages: [{ stageName: 's', stageHandlerName: handler }] });
    await sleep(400);
    const reply = await pull();
    expect(reply.status, reply.text).toBe(200);
    const waited = (Date.now() - dispatchedAt) / 1000;
    const after = await pickup();
    expect(after.count - before.count).toBe(1);
    expect(after.sum - before.sum).toBeGreaterThanOrEqual(0.4);
    expect(after.sum - before.sum).toBeLessThanOrEqual(waited + 0.05);
  });
});
