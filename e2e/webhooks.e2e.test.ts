import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';
import { freePort, serviceProcess, type ManagedProcess } from './support/processes.js';

/**
 * Signed webhooks end to end (issue 32, decision 0134): the real services, the example worker, and
 * a receiver on 127.0.0.1 (allowed here by WEBHOOK_ALLOW_PRIVATE_NETWORKS; a gateway without it
 * refuses the same target). Short retry delays (WEBHOOK_RETRY_SCHEDULE) keep the test quick; the
 * Standard Webhooks schedule itself is the unit tests' business.
 */

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  answered: number | null;
}

/** A receiver whose paths behave as the test says; it records every request, in order. */
class Receiver {
  readonly requests: Received[] = [];
  /** Per path: the status to answer for the nth attempt of a webhook-id (1-based); 'hold' never answers. */
  behaviour = new Map<string, (attempt: number) => number | 'hold'>();
  private readonly held: ServerResponse[] = [];
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => (body += d));
      req.on('end', () => {
        const path = req.url ?? '/';
        const headers = Object.fromEntries(
          Object.entries(req.headers).map(([k, v]) => [k, String(v)]),
        );
        const attempt =
          this.requests.filter(
            (r) => r.path === path && r.headers['webhook-id'] === headers['webhook-id'],
          ).length + 1;
        const answer = (this.behaviour.get(path) ?? (() => 200))(attempt);
        const record: Received = {
          path,
          headers,
          body,
          answered: answer === 'hold' ? null : answer,
        };
        this.requests.push(record);
        if (answer === 'hold') {
          this.held.push(res);
          return;
        }
        res.writeHead(answer).end();
      });
    });
    const port = await freePort();
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${port}`;
  }

  on(path: string): Received[] {
    return this.requests.filter((r) => r.path === path);
  }

  async stop(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

describe('signed webhooks, delivered from the outbox', () => {
  let cluster: Cluster;
  let receiver: Receiver;
  let keyA: string;
  let keyB: string;
  const api = (key: string, method: string, path: string, json?: unknown) =>
    call(cluster.apiUrl, method, path, { json, headers: { 'x-api-key': key } });
  const putWebhook = async (
    key: string,
    name: string,
    path: string,
    events: string[],
  ): Promise<string> => {
    const r = await api(key, 'PUT', `/webhooks/${name}`, { url: `${receiver.url}${path}`, events });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.secret as string;
  };
  const create = async (key: string, name: string, stages: unknown[]): Promise<number> => {
    const r = await api(key, 'POST', '/pipelines/idempotent', {
      idempotencyKey: `${name}-${Math.random()}`,
      name,
      stages,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.pipeline.id as number;
  };
  const echo = (input = 'x') => [{ stageName: 'only', stageHandlerName: 'echo', input }];
  /** The events of `path` about pipeline `id`, parsed. */
  const eventsFor = (path: string, id: number) =>
    receiver
      .on(path)
      .filter(
        (r) => (JSON.parse(r.body) as { data: { pipelineId?: number } }).data.pipelineId === id,
      );

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    cluster = await startCluster({
      env: {
        DISPATCH_SWEEP_INTERVAL_MS: '200',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_RETRY_SCHEDULE: '0,1,1,1,1',
        WEBHOOK_TICK_MS: '100',
        WEBHOOK_TIMEOUT_MS: '3000',
      },
    });
    keyA = (await cluster.createApp('webhooks-a')).apiKey;
    keyB = (await cluster.createApp('webhooks-b')).apiKey;
    for (const [label, key] of [
      ['worker-a', keyA],
      ['worker-b', keyB],
    ] as const) {
      cluster.startWorker(label, {
        PO_BASE_URL: cluster.apiUrl,
        PO_WORKER_BASE_URL: cluster.workerUrl,
        PO_API_KEY: key,
        PO_INSTANCE_ID: label,
        PO_HANDLERS: 'echo,fail',
      });
    }
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
    await receiver?.stop();
  });

  it('signs every delivery so that the standardwebhooks verifier accepts it, with the summary and no sensitive value', async () => {
    const secret = await putWebhook(keyA, 'all', '/all', [
      'pipeline.completed',
      'pipeline.failed',
      'stage.failed',
    ]);
    const ok = await create(keyA, 'signed-ok', echo('the input stays home'));
    const failed = await create(keyA, 'signed-failed', [
      {
        stageName: 'boom',
        stageHandlerName: 'fail',
        input: '{"code":"PAYMENT_DECLINED","retryable":false}',
      },
    ]);
    await waitFor(
      'three events',
      async () =>
        eventsFor('/all', ok).length >= 1 && eventsFor('/all', failed).length >= 2
          ? true
          : undefined,
      30_000,
      100,
    );

    const verifier = new Webhook(secret);
    const types: string[] = [];
    for (const r of [...eventsFor('/all', ok), ...eventsFor('/all', failed)]) {
      const payload = verifier.verify(r.body, r.headers) as {
        type: string;
        timestamp: string;
        data: Record<string, unknown>;
      };
      types.push(payload.type);
      expect(r.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.body).not.toContain('the input stays home');
    }
    expect(types.sort()).toEqual(['pipeline.completed', 'pipeline.failed', 'stage.failed']);
    const completed = JSON.parse(eventsFor('/all', ok)[0]!.body);
    expect(completed.data).toMatchObject({
      pipelineId: ok,
      name: 'signed-ok',
      status: 'Completed',
    });
    const stageFailed = eventsFor('/all', failed)
      .map((r) => JSON.parse(r.body))
      .find((e) => e.type === 'stage.failed');
    expect(stageFailed.data).toMatchObject({
      pipelineId: failed,
      stageName: 'boom',
      stageHandlerName: 'fail',
      status: 'Failed',
      errorCode: 'PAYMENT_DECLINED',
    });

    // A body changed on the way, or signed with another secret, is refused by the same verifier.
    const sample = eventsFor('/all', ok)[0]!;
    expect(() =>
      verifier.verify(sample.body.replace('signed-ok', 'signed-ko'), sample.headers),
    ).toThrow();
    const other = await putWebhook(keyA, 'other', '/other', ['pipeline.cancelled']);
    expect(() => new Webhook(other).verify(sample.body, sample.headers)).toThrow();
  });

  it('retries a receiver that fails the first two attempts, and the third carries the same webhook-id', async () => {
    receiver.behaviour.set('/flaky', (attempt) => (attempt <= 2 ? 500 : 200));
    await putWebhook(keyA, 'flaky', '/flaky', ['pipeline.completed']);
    const id = await create(keyA, 'flaky-target', echo());
    await waitFor(
      'the third attempt',
      async () => (eventsFor('/flaky', id).length >= 3 ? true : undefined),
      30_000,
      100,
    );
    const attempts = eventsFor('/flaky', id);
    expect(attempts.map((a) => a.answered)).toEqual([500, 500, 200]);
    expect(new Set(attempts.map((a) => a.headers['webhook-id'])).size).toBe(1);
    const log = await waitFor('the delivery recorded as Delivered', async () => {
      const r = await api(keyA, 'GET', '/webhooks/flaky/deliveries');
      return r.body.items[0]?.status === 'Delivered' ? r.body.items : undefined;
    });
    expect(log[0]).toMatchObject({
      id: attempts[0]!.headers['webhook-id'],
      eventType: 'pipeline.completed',
      status: 'Delivered',
      attempts: 3,
      lastResponseCode: 200,
      nextAttemptAt: null,
    });
  });

  it("never sends another application's events to this application's webhooks", async () => {
    await putWebhook(keyB, 'b-only', '/b', ['pipeline.completed']);
    const a = await create(keyA, 'tenant-a', echo());
    const b = await create(keyB, 'tenant-b', echo());
    await waitFor(
      "B's event and A's",
      async () =>
        eventsFor('/b', b).length >= 1 && eventsFor('/all', a).length >= 1 ? true : undefined,
      30_000,
      100,
    );
    // Pipeline ids are global: A's id never reaches B's receiver path, nor B's id A's.
    expect(eventsFor('/b', a)).toEqual([]);
    expect(eventsFor('/all', b)).toEqual([]);
    expect(receiver.on('/b').every((r) => JSON.parse(r.body).data.name !== 'tenant-a')).toBe(true);
    expect(
      (await api(keyB, 'GET', '/webhooks')).body.items.map((w: { name: string }) => w.name),
    ).toEqual(['b-only']);
  });

  it('loses no event when pipeline-service is killed (kill -9) while its attempts are in flight: each arrives again with its id', async () => {
    receiver.behaviour.set('/held', () => 'hold');
    await putWebhook(keyA, 'held', '/held', ['pipeline.completed']);
    const ids = await Promise.all(
      Array.from({ length: 8 }, (_, i) => create(keyA, `held-${i}`, echo())),
    );
    await waitFor(
      'every event in flight (held by the receiver)',
      async () => (ids.every((id) => eventsFor('/held', id).length >= 1) ? true : undefined),
      30_000,
      100,
    );
    const firstIds = new Map(
      ids.map((id) => [id, eventsFor('/held', id)[0]!.headers['webhook-id']]),
    );

    const service: ManagedProcess = cluster.process('pipeline-service');
    await service.kill();
    receiver.behaviour.set('/held', () => 200);
    service.start();
    await service.waitReady();
    // The attempts taken by the killed process are due again once their deadline has passed.
    await waitFor(
      'every event delivered after the restart',
      async () =>
        ids.every((id) => eventsFor('/held', id).some((r) => r.answered === 200))
          ? true
          : undefined,
      60_000,
      200,
    );
    for (const id of ids) {
      const delivered = eventsFor('/held', id).filter((r) => r.answered === 200);
      expect(delivered[0]!.headers['webhook-id']).toBe(firstIds.get(id));
    }
    const log = (await api(keyA, 'GET', '/webhooks/held/deliveries')).body.items as {
      status: string;
    }[];
    expect(log).toHaveLength(8);
    await waitFor('all recorded Delivered', async () => {
      const items = (await api(keyA, 'GET', '/webhooks/held/deliveries')).body.items as {
        status: string;
      }[];
      return items.every((d) => d.status === 'Delivered') ? true : undefined;
    });
  }, 120_000);

  it('refuses a target on 127.0.0.1 from a gateway without WEBHOOK_ALLOW_PRIVATE_NETWORKS', async () => {
    const strict = serviceProcess(
      'api-gateway',
      { ...cluster.env, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' },
      await freePort(),
      'api-gateway-strict',
      await freePort(),
    ).start();
    try {
      await strict.waitReady();
      const r = await call(strict.url, 'PUT', '/webhooks/local', {
        json: { url: `${receiver.url}/x`, events: ['pipeline.completed'] },
        headers: { 'x-api-key': keyA },
      });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({
        code: 'validation_failed',
        errors: [
          {
            field: '/url',
            message: expect.stringMatching(/127\.0\.0\.1.*private, loopback or link-local/),
          },
        ],
      });
      expect(
        (await call(strict.url, 'GET', '/webhooks/local', { headers: { 'x-api-key': keyA } }))
          .status,
      ).toBe(404);
    } finally {
      await strict.stop();
    }
  });
});
