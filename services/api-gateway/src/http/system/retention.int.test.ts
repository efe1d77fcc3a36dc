// The public API after retention deleted a pipeline (issue 10 item 6, decision 0083): it is gone
// like a pipeline that never existed, and its idempotency key can be used again.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteExpiredPipelines, sqlOf } from '@po/db';
import { startGateway, type Gateway } from '../../testing/harness.js';

let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

const definition = { name: 'kept 30 days', stages: [{ stageName: 's', stageHandlerName: 'h' }] };

describe('a pipeline deleted by retention', () => {
  it('reads as 404 by id and by idempotency key, refuses changes with 404, and its key creates a new pipeline', async () => {
    const idempotencyKey = `key-${randomUUID()}`;
    const created = await gw.call('POST', '/pipelines/idempotent', {
      json: { idempotencyKey, ...definition },
    });
    expect(created.status).toBe(201);
    const id: number = created.body.pipeline.id;
    expect((await gw.call('POST', `/pipelines/${id}/cancel`)).status).toBe(200);
    await gw.db
      .$executeRaw`UPDATE pipelines SET finished_at = now() - interval '31 days' WHERE id = ${BigInt(id)}`;

    const batch = await deleteExpiredPipelines(
      sqlOf(gw.db),
      new Date(Date.now() - 30 * 86_400_000),
      500,
    );
    expect(batch.deleted.pipelines).toBe(1);

    const read = await gw.call('GET', `/pipelines/${id}`);
    expect(read.status).toBe(404);
    expect(read.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(read.body.code).toBe('not_found');
    expect(
      (await gw.call('POST', '/pipelines/by-idempotency-key', { json: { idempotencyKey } })).status,
    ).toBe(404);
    expect((await gw.call('POST', `/pipelines/${id}/cancel`)).status).toBe(404);
    expect(
      (
        await gw.call('POST', `/pipelines/${id}/stages`, {
          json: { stages: [{ stageName: 't', stageHandlerName: 'h' }] },
        })
      ).status,
    ).toBe(404);

    const again = await gw.call('POST', '/pipelines/idempotent', {
      json: { idempotencyKey, ...definition },
    });
    expect(again.status).toBe(201);
    expect(again.body.pipeline.id).not.toBe(id);
  });
});
