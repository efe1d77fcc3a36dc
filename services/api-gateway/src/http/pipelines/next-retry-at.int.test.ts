// nextRetryAt of StageResponse (addendum §4 "null until they apply", §7 "nextRetryAt becomes null"
// when a stage leaves RetryScheduled): a stage whose retry was cancelled or throttled has none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../testing/harness.js';

let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

/** A pipeline whose only stage failed and waits for its retry, a minute from now. */
async function retryScheduledPipeline(): Promise<{ id: number; stageId: number; retryAt: Date }> {
  const created = await gw.call('POST', '/pipelines', {
    json: { apiKey: gw.appA.key, name: 'retry', stages: [{ stageName: 'flaky', stageHandlerName: 'flaky' }] },
    key: null,
  });
  expect(created.status, created.text).toBe(200);
  const id = created.body.id as number;
  const retryAt = new Date(Date.now() + 60_000);
  await gw.db.$executeRaw`
    UPDATE stages SET status = 'RetryScheduled', attempt = 1, retry_attempt = 1, failure_count = 1,
      failure_disposition = 'retryable', last_failed_at = now(), next_retry_at = ${retryAt}
    WHERE pipeline_id = ${BigInt(id)}`;
  await gw.db.$executeRaw`UPDATE pipelines SET dispatched = true, status = 'Pending' WHERE id = ${BigInt(id)}`;
  return { id, stageId: created.body.stages[0].id as number, retryAt };
}

describe('StageResponse.nextRetryAt', () => {
  it('is the retry time while the stage is RetryScheduled', async () => {
    const p = await retryScheduledPipeline();
    const read = await gw.call('GET', `/pipelines/${p.id}`);
    expect(read.body.stages[0]).toMatchObject({ status: 'RetryScheduled', nextRetryAt: p.retryAt.toISOString() });
  });

  it('is null once the pipeline is cancelled: the retry will not happen (in the response, the read and the row)', async () => {
    const p = await retryScheduledPipeline();
    const cancelled = await gw.call('POST', `/pipelines/${p.id}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.stages[0]).toMatchObject({ status: 'Cancelled', nextRetryAt: null, retryAttempt: 1, failureCount: 1 });
    const read = await gw.call('GET', `/pipelines/${p.id}`);
    expect(read.body.stages[0]).toMatchObject({ status: 'Cancelled', nextRetryAt: null });
    const row = await gw.db.stage.findUniqueOrThrow({ where: { id: BigInt(p.stageId) } });
    expect(row.nextRetryAt).toBeNull();
  });

  it('is null for a Throttled stage even when a retry time is still stored (rows written before the fix)', async () => {
    const p = await retryScheduledPipeline();
    await gw.db.$executeRaw`UPDATE stages SET status = 'Throttled' WHERE id = ${BigInt(p.stageId)}`;
    const read = await gw.call('GET', `/pipelines/${p.id}`);
    expect(read.body.stages[0]).toMatchObject({ status: 'Throttled', nextRetryAt: null });
  });
});
