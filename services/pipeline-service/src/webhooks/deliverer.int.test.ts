// The webhook deliverer (decision 0134) against a real database, with a stand-in for the one
// attempt (its HTTP side is libs/http's webhook-target test, and the whole path the webhooks e2e):
// the schedule is followed to Failed, a success ends it, two deliverers never make one attempt
// twice, and a disabled webhook's deliveries wait.
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueWebhookEvent, retryWebhookDelivery, sqlOf } from '@po/db';
import type { WebhookSend, WebhookSendResult } from '@po/http';
import { createLogger } from '@po/telemetry';
import { createTestDatabase, type TestDatabase } from '@po/testing';
import { startWebhookDeliverer, type WebhookDelivererOptions } from './deliverer.js';

let database: TestDatabase;
let applicationId: number;
const logger = createLogger({
  service: 'pipeline-service',
  destination: new Writable({ write: (_c, _e, done) => done() }),
});
const options: WebhookDelivererOptions = {
  tickMs: 20,
  timeoutMs: 1000,
  concurrency: 4,
  schedule: [0, 0.05, 0.05],
  allowPrivateNetworks: true,
};

beforeAll(async () => {
  database = await createTestDatabase();
  applicationId = (await database.db.application.create({ data: { name: 'hooks' } })).id;
});
afterAll(async () => {
  await database.drop();
});

async function webhook(name: string, enabled = true): Promise<void> {
  await database.db
    .$executeRaw`INSERT INTO webhooks (application_id, name, url, events, enabled, secret)
    VALUES (${applicationId}, ${name}, ${`http://receiver.test/${name}`}, ARRAY['schedule.run_missed'], ${enabled}, 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0')`;
}

async function deliveries(name: string) {
  return database.db.$queryRaw<
    {
      id: string;
      status: string;
      attempts: number;
      last_response_code: number | null;
      last_error: string | null;
    }[]
  >`
    SELECT d.id, d.status, d.attempts, d.last_response_code, d.last_error FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
    WHERE w.application_id = ${applicationId} AND w.name = ${name} ORDER BY d.created_at`;
}

async function until<T>(
  what: string,
  read: () => Promise<T | undefined>,
  timeoutMs = 5000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('the webhook deliverer', () => {
  it('follows the schedule: every attempt of a delivery carries its id, and the last failure makes it Failed', async () => {
    await webhook('always-500');
    await enqueueWebhookEvent(sqlOf(database.db), applicationId, 'schedule.run_missed', {
      scheduleId: 1,
    });
    const sent: WebhookSend[] = [];
    const d = startWebhookDeliverer(
      {
        sql: sqlOf(database.db),
        logger,
        send: async (s) => (sent.push(s), { ok: false, status: 500, error: 'answered 500' }),
      },
      options,
    );
    try {
      const [failed] = await until('Failed', async () => {
        const rows = await deliveries('always-500');
        return rows[0]?.status === 'Failed' ? rows : undefined;
      });
      expect(failed).toMatchObject({
        attempts: 3,
        last_response_code: 500,
        last_error: 'answered 500',
      });
      expect(sent.map((s) => s.id)).toEqual([failed!.id, failed!.id, failed!.id]);
      expect(sent[0]!.url).toBe('http://receiver.test/always-500');
      expect(JSON.parse(sent[0]!.body)).toMatchObject({
        type: 'schedule.run_missed',
        data: { scheduleId: 1 },
      });
    } finally {
      await d.stop();
    }
  });

  it('ends a delivery at its first 2xx, and two deliverers never make one attempt twice', async () => {
    await webhook('twice');
    for (let i = 0; i < 20; i++)
      await enqueueWebhookEvent(sqlOf(database.db), applicationId, 'schedule.run_missed', {
        scheduleId: 100 + i,
      });
    const attempts = new Map<string, number>();
    const send = async (s: WebhookSend): Promise<WebhookSendResult> => {
      attempts.set(s.id, (attempts.get(s.id) ?? 0) + 1);
      await sleep(10);
      return { ok: true, status: 200 };
    };
    const a = startWebhookDeliverer({ sql: sqlOf(database.db), logger, send }, options);
    const b = startWebhookDeliverer({ sql: sqlOf(database.db), logger, send }, options);
    try {
      await until('all delivered', async () =>
        (await deliveries('twice')).every((r) => r.status === 'Delivered') ? true : undefined,
      );
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    const rows = await deliveries('twice');
    expect(rows).toHaveLength(20);
    expect(rows.every((r) => r.attempts === 1 && r.last_response_code === 200)).toBe(true);
    // The earlier test's webhook takes the same event: its deliveries count here too, once each.
    expect(rows.map((r) => attempts.get(r.id))).toEqual(Array(20).fill(1));
    expect([...attempts.values()].every((n) => n === 1)).toBe(true);
  });

  it('keeps the due time a retry by hand gave a delivery while its attempt was in flight', async () => {
    await webhook('retried-in-flight');
    await enqueueWebhookEvent(sqlOf(database.db), applicationId, 'schedule.run_missed', {
      scheduleId: 9,
    });
    const webhookId = (
      await database.db.$queryRaw<{ id: bigint }[]>`
        SELECT id FROM webhooks WHERE application_id = ${applicationId} AND name = 'retried-in-flight'`
    )[0]!.id;
    const sent: string[] = [];
    const d = startWebhookDeliverer(
      {
        sql: sqlOf(database.db),
        logger,
        send: async (s) => {
          sent.push(s.id);
          if (!s.url.endsWith('/retried-in-flight')) return { ok: true, status: 200 };
          // The first attempt: retried by hand while in flight, then it fails.
          if (sent.filter((id) => id === s.id).length === 1)
            await retryWebhookDelivery(sqlOf(database.db), applicationId, Number(webhookId), s.id);
          return sent.filter((id) => id === s.id).length === 1
            ? { ok: false, status: 503, error: 'answered 503' }
            : { ok: true, status: 200 };
        },
      },
      // Without the retry, the next attempt would wait a minute.
      { ...options, schedule: [0, 60, 60] },
    );
    try {
      const [row] = await until('delivered by the retry', async () => {
        const rows = await deliveries('retried-in-flight');
        return rows[0]?.status === 'Delivered' ? rows : undefined;
      });
      expect(row).toMatchObject({ attempts: 2, last_response_code: 200 });
      expect(sent.filter((id) => id === row!.id)).toHaveLength(2);
    } finally {
      await d.stop();
    }
  });

  it("holds a disabled webhook's pending deliveries until it is enabled again", async () => {
    await webhook('paused-hook');
    await enqueueWebhookEvent(sqlOf(database.db), applicationId, 'schedule.run_missed', {
      scheduleId: 7,
    });
    await database.db
      .$executeRaw`UPDATE webhooks SET enabled = false WHERE application_id = ${applicationId} AND name = 'paused-hook'`;
    // Disabled, it takes no new event either.
    await enqueueWebhookEvent(sqlOf(database.db), applicationId, 'schedule.run_missed', {
      scheduleId: 8,
    });
    const sent: string[] = [];
    const d = startWebhookDeliverer(
      {
        sql: sqlOf(database.db),
        logger,
        send: async (s) => (sent.push(s.url), { ok: true, status: 200 }),
      },
      options,
    );
    try {
      await sleep(200);
      expect(sent.filter((u) => u.endsWith('/paused-hook'))).toEqual([]);
      await database.db
        .$executeRaw`UPDATE webhooks SET enabled = true WHERE application_id = ${applicationId} AND name = 'paused-hook'`;
      await until('delivered once enabled', async () =>
        (await deliveries('paused-hook'))[0]?.status === 'Delivered' ? true : undefined,
      );
      expect(await deliveries('paused-hook')).toHaveLength(1);
    } finally {
      await d.stop();
    }
  });
});
