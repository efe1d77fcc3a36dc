// Webhooks (issue 32, decision 0134): PUT answers the signing secret once, at creation; per-field
// 400s; a target on a private, loopback or link-local address is refused without
// WEBHOOK_ALLOW_PRIVATE_NETWORKS; another application's key sees nothing; the outbox row of an
// event is written in the transaction of the change, for the enabled webhooks that take it only;
// the delivery log pages newest first, and a retry puts a delivery back under the same id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compile,
  webhookCreatedSchema,
  webhookDeliveryListSchema,
  webhookViewSchema,
} from '@po/contracts';
import { expectProblem } from '@po/testing';
import { startGateway, type Gateway } from '../../testing/harness.js';
import { seedPipeline, seedStage } from '../../testing/handler-rows.js';

let gw: Gateway;
const created = compile(webhookCreatedSchema, { normalise: false });
const view = compile(webhookViewSchema, { normalise: false });
const deliveryList = compile(webhookDeliveryListSchema, { normalise: false });

// A public address literal: nothing is resolved, and no delivery is attempted (no deliverer here).
const PUBLIC = 'http://93.184.216.34/hooks/po';

beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

const put = (name: string, json: unknown, key = gw.appA.key) =>
  gw.call('PUT', `/webhooks/${name}`, { json, key });

async function deliveriesOf(name: string, key = gw.appA.key, query = '') {
  const reply = await gw.call('GET', `/webhooks/${name}/deliveries${query}`, { key });
  expect(reply.status, reply.text).toBe(200);
  const checked = deliveryList(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  return reply.body as {
    items: {
      id: string;
      eventType: string;
      status: string;
      attempts: number;
      nextAttemptAt: string | null;
    }[];
    nextCursor: string | null;
  };
}

/** Moves a pipeline of the application to `status` in a transaction that commits or rolls back. */
async function setPipelineStatus(pipelineId: number, status: string, commit = true): Promise<void> {
  await gw.db
    .$transaction(async (tx) => {
      await tx.$executeRawUnsafe(
        `UPDATE pipelines SET status = $1::"PipelineStatus", finished_at = now() WHERE id = $2`,
        status,
        pipelineId,
      );
      if (!commit) throw new Error('rolled back');
    })
    .catch((err: Error) => {
      if (commit || err.message !== 'rolled back') throw err;
    });
}

describe('PUT /webhooks/{name}', () => {
  it('creates a webhook and answers its signing secret once; a replace answers 200 without it and keeps it', async () => {
    const first = await put('ops', { url: PUBLIC, events: ['pipeline.failed', 'stage.failed'] });
    expect(first.status, first.text).toBe(201);
    const checked = created(first.body);
    expect(checked.ok ? [] : checked.errors).toEqual([]);
    expect(first.body).toMatchObject({
      name: 'ops',
      url: PUBLIC,
      events: ['pipeline.failed', 'stage.failed'],
      enabled: true,
    });
    expect(first.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);

    const second = await put('ops', {
      url: `${PUBLIC}/v2`,
      events: ['pipeline.completed'],
      enabled: false,
    });
    expect(second.status, second.text).toBe(200);
    const checkedView = view(second.body);
    expect(checkedView.ok ? [] : checkedView.errors).toEqual([]);
    expect(second.body).toMatchObject({
      url: `${PUBLIC}/v2`,
      events: ['pipeline.completed'],
      enabled: false,
    });
    expect(second.body.secret).toBeUndefined();
    const [row] = await gw.db.$queryRawUnsafe<{ secret: string }[]>(
      `SELECT secret FROM webhooks WHERE application_id = $1 AND name = 'ops'`,
      gw.appA.id,
    );
    expect(row!.secret).toBe(first.body.secret);

    const read = await gw.call('GET', '/webhooks/ops');
    expect(read.body).toEqual(second.body);
    expect(JSON.stringify((await gw.call('GET', '/webhooks')).body)).not.toContain('whsec_');
  });

  it('answers 400 with a message per field for a bad name, url or events', async () => {
    expectProblem(
      await put('-bad', { url: PUBLIC, events: ['pipeline.failed'] }),
      400,
      'validation_failed',
      ['name'],
    );
    expectProblem(await put('x', { events: ['pipeline.failed'] }), 400, 'validation_failed', [
      '/url',
    ]);
    expectProblem(await put('x', { url: PUBLIC, events: [] }), 400, 'validation_failed', [
      '/events',
    ]);
    expectProblem(
      await put('x', { url: PUBLIC, events: ['pipeline.exploded'] }),
      400,
      'validation_failed',
      ['/events/0'],
    );
    expectProblem(
      await put('x', { url: 'ftp://93.184.216.34/x', events: ['pipeline.failed'] }),
      400,
      'validation_failed',
      ['/url'],
    );
    expectProblem(
      await put('x', { url: 'http://user:pw@93.184.216.34/x', events: ['pipeline.failed'] }),
      400,
      'validation_failed',
      ['/url'],
    );
    expectProblem(
      await put('x', { url: 'not a url', events: ['pipeline.failed'] }),
      400,
      'validation_failed',
      ['/url'],
    );
    expect((await gw.call('GET', '/webhooks/x')).status).toBe(404);
  });

  it.each([
    'http://127.0.0.1:9/hook',
    'http://localhost/hook',
    'http://[::1]/hook',
    'http://169.254.169.254/latest',
    'http://10.0.0.7/hook',
    'http://[::ffff:192.168.0.1]/hook',
  ])('refuses %s without WEBHOOK_ALLOW_PRIVATE_NETWORKS', async (url) => {
    const reply = await put('internal', { url, events: ['pipeline.failed'] });
    expectProblem(reply, 400, 'validation_failed', ['/url']);
    expect(reply.body.errors[0].message).toMatch(/private, loopback or link-local/);
  });
});

describe("another application's key", () => {
  it('sees none of the webhooks, and cannot read, change, delete or retry them', async () => {
    await put('mine', { url: PUBLIC, events: ['pipeline.completed'] });
    const b = gw.appB.key;
    expect((await gw.call('GET', '/webhooks', { key: b })).body).toEqual({ items: [] });
    expectProblem(await gw.call('GET', '/webhooks/mine', { key: b }), 404, 'not_found');
    expectProblem(await gw.call('GET', '/webhooks/mine/deliveries', { key: b }), 404, 'not_found');
    expectProblem(await gw.call('DELETE', '/webhooks/mine', { key: b }), 404, 'not_found');
    expectProblem(
      await gw.call('POST', `/webhooks/mine/deliveries/msg_${'0'.repeat(32)}/retry`, { key: b }),
      404,
      'not_found',
    );
    // B's PUT of the same name makes B's own webhook, with a secret of its own.
    const theirs = await put('mine', { url: PUBLIC, events: ['pipeline.failed'] }, b);
    expect(theirs.status).toBe(201);
    expect((await gw.call('GET', '/webhooks/mine')).body.events).toEqual(['pipeline.completed']);
  });
});

describe('the outbox', () => {
  it('gets one row per enabled webhook that takes the event, in the transaction of the change, and none for another application', async () => {
    await put('done', { url: PUBLIC, events: ['pipeline.completed', 'stage.failed'] });
    await put('done-off', { url: PUBLIC, events: ['pipeline.completed'], enabled: false });
    await put('failures', { url: PUBLIC, events: ['pipeline.failed'] });
    await put('theirs', { url: PUBLIC, events: ['pipeline.completed'] }, gw.appB.key);

    const p = await seedPipeline(gw, gw.appA.id);
    await gw.db.$executeRawUnsafe(
      `UPDATE pipelines SET name = 'nightly', status = 'Running' WHERE id = $1`,
      p,
    );
    await setPipelineStatus(p, 'Completed', false);
    expect((await deliveriesOf('done')).items).toEqual([]);
    await setPipelineStatus(p, 'Completed');
    const [d] = (await deliveriesOf('done')).items;
    expect(d).toMatchObject({
      eventType: 'pipeline.completed',
      status: 'Pending',
      attempts: 0,
      lastResponseCode: null,
    });
    expect(d!.id).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(d!.nextAttemptAt).not.toBeNull();
    expect((await deliveriesOf('done-off')).items).toEqual([]);
    expect((await deliveriesOf('failures')).items).toEqual([]);
    expect((await deliveriesOf('theirs', gw.appB.key)).items).toEqual([]);
    // An update that leaves the status as it was is no event.
    await gw.db.$executeRawUnsafe(`UPDATE pipelines SET status = 'Completed' WHERE id = $1`, p);
    expect((await deliveriesOf('done')).items).toHaveLength(1);

    const [row] = await gw.db.$queryRawUnsafe<{ body: string }[]>(
      `SELECT body FROM webhook_deliveries WHERE id = $1`,
      d!.id,
    );
    const body = JSON.parse(row!.body);
    expect(body).toEqual({
      type: 'pipeline.completed',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      data: {
        pipelineId: p,
        name: 'nightly',
        status: 'Completed',
        rerunOf: null,
        scheduleId: null,
        createdAt: expect.any(String),
        finishedAt: expect.any(String),
      },
    });

    // A stage that fails for good, with its summary only (no input, no output).
    const s = await seedStage(gw, gw.appA.id, p, 'charge', 'NotStarted');
    await gw.db.$executeRawUnsafe(
      `UPDATE stages SET input = 'secret-input', output = 'secret-output', last_error_code = 'CARD_DECLINED', status = 'Failed' WHERE id = $1`,
      s,
    );
    const stageEvents = (await deliveriesOf('done')).items.filter(
      (i) => i.eventType === 'stage.failed',
    );
    expect(stageEvents).toHaveLength(1);
    const [stageRow] = await gw.db.$queryRawUnsafe<{ body: string }[]>(
      `SELECT body FROM webhook_deliveries WHERE id = $1`,
      stageEvents[0]!.id,
    );
    expect(JSON.parse(stageRow!.body).data).toEqual({
      pipelineId: p,
      stageId: s,
      stageName: expect.any(String),
      stageHandlerName: 'charge',
      status: 'Failed',
      attempt: 0,
      errorCode: 'CARD_DECLINED',
    });
    expect(stageRow!.body).not.toMatch(/secret-/);
  });

  it('writes stage.waiting_for_approval and pipeline.failed, and nothing for a retryable stage failure', async () => {
    await put('approvals', {
      url: PUBLIC,
      events: ['stage.waiting_for_approval', 'stage.failed', 'pipeline.failed'],
    });
    const p = await seedPipeline(gw, gw.appA.id);
    const s = await seedStage(gw, gw.appA.id, p, 'review', 'NotStarted');
    // A failure that will be retried is no event.
    await gw.db.$executeRawUnsafe(`UPDATE stages SET status = 'RetryScheduled' WHERE id = $1`, s);
    expect((await deliveriesOf('approvals')).items).toEqual([]);
    await gw.db.$executeRawUnsafe(
      `UPDATE stages SET status = 'WaitingForApproval' WHERE id = $1`,
      s,
    );
    await gw.db.$executeRawUnsafe(`UPDATE pipelines SET status = 'Running' WHERE id = $1`, p);
    await setPipelineStatus(p, 'Failed');
    const items = (await deliveriesOf('approvals')).items;
    expect(items.map((i) => i.eventType).sort()).toEqual([
      'pipeline.failed',
      'stage.waiting_for_approval',
    ]);
    const approval = items.find((i) => i.eventType === 'stage.waiting_for_approval')!;
    const [row] = await gw.db.$queryRawUnsafe<{ body: string }[]>(
      `SELECT body FROM webhook_deliveries WHERE id = $1`,
      approval.id,
    );
    expect(JSON.parse(row!.body)).toMatchObject({
      type: 'stage.waiting_for_approval',
      data: { pipelineId: p, stageId: s, stageHandlerName: 'review', status: 'WaitingForApproval' },
    });
  });

  it('pages the delivery log newest first, and a retry puts a delivery back, due now, under the same id', async () => {
    await put('paged', { url: PUBLIC, events: ['pipeline.cancelled'] });
    for (let i = 0; i < 3; i++) {
      const p = await seedPipeline(gw, gw.appA.id);
      await setPipelineStatus(p, 'Cancelled');
    }
    const all = await deliveriesOf('paged');
    expect(all.items).toHaveLength(3);
    expect(all.nextCursor).toBeNull();
    const first = await deliveriesOf('paged', gw.appA.key, '?limit=2');
    expect(first.items.map((i) => i.id)).toEqual(all.items.slice(0, 2).map((i) => i.id));
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await deliveriesOf(
      'paged',
      gw.appA.key,
      `?limit=2&cursor=${encodeURIComponent(first.nextCursor!)}`,
    );
    expect(second.items.map((i) => i.id)).toEqual([all.items[2]!.id]);
    expect(second.nextCursor).toBeNull();
    expectProblem(
      await gw.call('GET', '/webhooks/paged/deliveries?cursor=nope'),
      400,
      'validation_failed',
      ['cursor'],
    );
    // A cursor is bound to its listing: another webhook's log refuses it.
    await put('paged-other', { url: PUBLIC, events: ['pipeline.cancelled'] });
    expectProblem(
      await gw.call(
        'GET',
        `/webhooks/paged-other/deliveries?cursor=${encodeURIComponent(first.nextCursor!)}`,
      ),
      400,
      'validation_failed',
      ['cursor'],
    );

    const id = all.items[0]!.id;
    await gw.db.$executeRawUnsafe(
      `UPDATE webhook_deliveries SET status = 'Failed', attempts = 8, next_attempt_at = NULL, last_response_code = 500 WHERE id = $1`,
      id,
    );
    const retried = await gw.call('POST', `/webhooks/paged/deliveries/${id}/retry`);
    expect(retried.status, retried.text).toBe(202);
    expect(retried.body).toMatchObject({
      id,
      status: 'Pending',
      attempts: 8,
      lastResponseCode: 500,
    });
    expect(Date.parse(retried.body.nextAttemptAt)).toBeLessThanOrEqual(Date.now() + 1000);
    expectProblem(
      await gw.call('POST', `/webhooks/paged/deliveries/msg_${'f'.repeat(32)}/retry`),
      404,
      'not_found',
    );
    expectProblem(
      await gw.call('POST', '/webhooks/paged/deliveries/42/retry'),
      400,
      'validation_failed',
      ['id'],
    );
  });

  it('DELETE removes the webhook and its deliveries', async () => {
    await put('gone', { url: PUBLIC, events: ['pipeline.cancelled'] });
    const p = await seedPipeline(gw, gw.appA.id);
    await setPipelineStatus(p, 'Cancelled');
    expect((await deliveriesOf('gone')).items).toHaveLength(1);
    expect((await gw.call('DELETE', '/webhooks/gone')).status).toBe(204);
    expectProblem(await gw.call('GET', '/webhooks/gone'), 404, 'not_found');
    expectProblem(await gw.call('DELETE', '/webhooks/gone'), 404, 'not_found');
    const [left] = await gw.db.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM webhook_deliveries d WHERE d.application_id = $1 AND NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.id = d.webhook_id)`,
      gw.appA.id,
    );
    expect(left!.n).toBe(0);
  });
});
