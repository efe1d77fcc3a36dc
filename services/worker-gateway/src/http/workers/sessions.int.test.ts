// Worker sessions: POST /workers/bootstrap, /workers/heartbeat, /workers/events, /workers/shutdown
// (api-spec "Worker protocol" behaviour rules 4-5, Authentication, Errors; addendum §1, §3, §5.3,
// §5.4, §15, §17).
import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEmpty, expectProblem, expectValid } from '@po/testing';
import { bootstrapResponseSchema } from '@po/contracts';
import { startWorkerGateway, type WorkerGatewayHarness } from '../../testing/harness.js';

// ---------------------------------------------------------------------------------------------
// Assertions shared by this file

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const unique = (label: string) => `${label}-${randomUUID()}`;

/** Milliseconds of an ISO date-time in the response format (UTC, 3 fractional digits, Z). */
function utcMillis(value: unknown): number {
  expect(value).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  return Date.parse(value as string);
}

// ---------------------------------------------------------------------------------------------

describe('worker sessions (default settings, WORKER_EVENTS_MAX_BATCH=3)', () => {
  let gw: WorkerGatewayHarness;
  beforeAll(async () => {
    gw = await startWorkerGateway({ WORKER_EVENTS_MAX_BATCH: '3', WORKER_HEARTBEAT_INTERVAL: '7' });
  });
  afterAll(async () => {
    await gw?.close();
  });

  const bootstrapCall = (json: unknown, key: string | null = gw.appA.key) =>
    gw.call('POST', '/workers/bootstrap', {
      json,
      headers: key === null ? {} : { 'x-api-key': key },
    });
  const workerCall = (path: string, token: string | null, json: unknown) =>
    gw.call('POST', path, { json, headers: token === null ? {} : { 'x-worker-session': token } });

  describe('POST /workers/bootstrap', () => {
    it('answers 200 with workerId, session token, sessionExpiresAt = bootstrap time + WORKER_SESSION_TTL, queues in handler order without duplicates, heartbeat interval and a disabled broker', async () => {
      const before = Date.now();
      const r = await bootstrapCall({
        instanceId: unique('boot'),
        handlers: ['resize', 'encode', 'resize', 'upload', 'encode'],
      });
      const after = Date.now();
      expect(r.status, r.text).toBe(200);
      expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expectValid(bootstrapResponseSchema, r.body);
      const a = gw.appA.id;
      expect(r.body).toEqual({
        workerId: expect.any(String),
        sessionToken: expect.any(String),
        sessionExpiresAt: expect.any(String),
        applicationId: a,
        queues: [
          `app_${a}_resize_StageNext`,
          `app_${a}_encode_StageNext`,
          `app_${a}_upload_StageNext`,
        ],
        heartbeatIntervalSeconds: 7,
        messageBroker: { enabled: false, connectionString: null },
      });
      expect(r.body.workerId).not.toBe('');
      expect(r.body.sessionToken).not.toBe('');
      const expires = utcMillis(r.body.sessionExpiresAt);
      expect(expires).toBeGreaterThanOrEqual(before + 86_400_000);
      expect(expires).toBeLessThanOrEqual(after + 86_400_000);
    });

    it('answers queues [] without handlers and stores an Active worker record with a started event', async () => {
      const instanceId = unique('no-handlers');
      const r = await bootstrapCall({
        instanceId,
        workerName: 'w',
        sdkVersion: '1.2.3',
        hostname: 'host-1',
        metadata: { zone: 'a' },
      });
      expect(r.status, r.text).toBe(200);
      expect(r.body.queues).toEqual([]);
      const worker = await gw.db.worker.findUniqueOrThrow({ where: { id: r.body.workerId } });
      expect(worker).toMatchObject({
        applicationId: gw.appA.id,
        instanceId,
        workerName: 'w',
        sdkVersion: '1.2.3',
        hostname: 'host-1',
        status: 'Active',
        metadata: { zone: 'a' },
      });
      const events = await gw.db.workerEvent.findMany({ where: { workerId: r.body.workerId } });
      expect(events.map((e) => e.kind)).toEqual(['started']);
    });

    it('a second bootstrap with the same instanceId keeps workerId, issues a new token, and the old token gets 401 everywhere at once (heartbeat, lease, result)', async () => {
      const instanceId = unique('reboot');
      const first = await gw.bootstrap(instanceId, ['h']);
      // The first token works before the re-bootstrap.
      expectEmpty(
        await workerCall('/workers/heartbeat', first.sessionToken, { workerId: first.workerId }),
      );
      const second = await gw.bootstrap(instanceId, ['h']);
      expect(second.workerId).toBe(first.workerId);
      expect(second.sessionToken).not.toBe(first.sessionToken);
      expect(await gw.db.worker.count({ where: { instanceId } })).toBe(1);
      expect(
        await gw.db.workerEvent.count({ where: { workerId: first.workerId, kind: 'started' } }),
      ).toBe(2);

      const seeded = await gw.seedDispatched(gw.appA.id, {
        name: 'p',
        stages: [{ stageName: 's', stageHandlerName: 'h' }],
      });
      const stageId = seeded.stageIds[0]!;
      const executionId = seeded.executions[0]!.executionId;
      const old = { 'x-worker-session': first.sessionToken };
      expectProblem(
        await gw.call('POST', '/workers/heartbeat', {
          json: { workerId: first.workerId },
          headers: old,
        }),
        401,
        'unauthorized',
      );
      expectProblem(
        await gw.call('POST', '/workers/events', {
          json: { workerId: first.workerId, events: [{ kind: 'custom' }] },
          headers: old,
        }),
        401,
        'unauthorized',
      );
      expectProblem(
        await gw.call('POST', '/workers/shutdown', {
          json: { workerId: first.workerId },
          headers: old,
        }),
        401,
        'unauthorized',
      );
      expectProblem(
        await gw.call('POST', `/stages/${stageId}/lease/acquire`, {
          json: { executionId, workerId: first.workerId },
          headers: old,
        }),
        401,
        'unauthorized',
      );
      expectProblem(
        await gw.call('POST', `/stages/${stageId}/lease/renew`, {
          json: { executionId, workerId: first.workerId },
          headers: old,
        }),
        401,
        'unauthorized',
      );
      expectProblem(
        await gw.call('POST', `/stages/${stageId}/result`, {
          json: { stageId, executionId, attempt: 1, isSuccess: true },
          headers: { ...old, 'x-api-key': gw.appA.key },
        }),
        401,
        'unauthorized',
      );
      // The new token works.
      expectEmpty(
        await workerCall('/workers/heartbeat', second.sessionToken, { workerId: second.workerId }),
      );
      const lease = await gw.call('POST', `/stages/${stageId}/lease/acquire`, {
        json: { executionId, workerId: second.workerId },
        headers: { 'x-worker-session': second.sessionToken },
      });
      expect(lease.status, lease.text).toBe(200);
      expect(lease.body.acquired).toBe(true);
    });

    it('a bootstrap with another instanceId gets another workerId; the same instanceId in another application too', async () => {
      const instanceId = unique('inst');
      const a1 = await gw.bootstrap(instanceId, []);
      const a2 = await gw.bootstrap(unique('inst'), []);
      const b1 = await gw.bootstrap(instanceId, [], gw.appB.key);
      expect(a2.workerId).not.toBe(a1.workerId);
      expect(b1.workerId).not.toBe(a1.workerId);
      expect(b1.applicationId).toBe(gw.appB.id);
      // The other application's bootstrap did not supersede app A's session.
      expectEmpty(
        await workerCall('/workers/heartbeat', a1.sessionToken, { workerId: a1.workerId }),
      );
    });

    it('re-bootstrap sets a Stopped worker Active again', async () => {
      const instanceId = unique('restart');
      const w = await gw.bootstrap(instanceId, []);
      expectEmpty(await workerCall('/workers/shutdown', w.sessionToken, { workerId: w.workerId }));
      expect((await gw.db.worker.findUniqueOrThrow({ where: { id: w.workerId } })).status).toBe(
        'Stopped',
      );
      await gw.bootstrap(instanceId, []);
      expect((await gw.db.worker.findUniqueOrThrow({ where: { id: w.workerId } })).status).toBe(
        'Active',
      );
    });

    it('stores the session token only as a SHA-256 hash: no row of any table contains the token', async () => {
      const w = await gw.bootstrap(unique('hash'), ['h']);
      const session = await gw.db.workerSession.findUniqueOrThrow({
        where: { tokenHash: sha256(w.sessionToken) },
      });
      expect(session.workerId).toBe(w.workerId);
      const tables = await gw.db.$queryRaw<{ table_name: string }[]>`
        SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`;
      expect(tables.length).toBeGreaterThan(5);
      for (const { table_name } of tables) {
        const quoted = `"${table_name.replaceAll('"', '""')}"`;
        const rows = await gw.db.$queryRawUnsafe<{ n: number }[]>(
          `SELECT count(*)::int AS n FROM ${quoted} AS r WHERE strpos(r::text, $1) > 0`,
          w.sessionToken,
        );
        expect(rows[0]!.n, `table ${table_name}`).toBe(0);
      }
    });

    it('400 for a malformed body: instanceId missing, empty or over 200 characters', async () => {
      expectProblem(await bootstrapCall({ handlers: ['h'] }), 400, 'validation_failed', [
        '/instanceId',
      ]);
      expectProblem(await bootstrapCall({ instanceId: '' }), 400, 'validation_failed', [
        '/instanceId',
      ]);
      expectProblem(
        await bootstrapCall({ instanceId: 'i'.repeat(201) }),
        400,
        'validation_failed',
        ['/instanceId'],
      );
      expectProblem(await bootstrapCall({ instanceId: 42 }), 400, 'validation_failed', [
        '/instanceId',
      ]);
      const ok = await bootstrapCall({ instanceId: 'é'.repeat(200) });
      expect(ok.status, ok.text).toBe(200);
    });

    it('400 for handlers over 100 items, an empty handler, or one over 300 characters', async () => {
      const handlers = Array.from({ length: 101 }, (_, i) => `h${i}`);
      expectProblem(
        await bootstrapCall({ instanceId: unique('i'), handlers }),
        400,
        'validation_failed',
        ['/handlers'],
      );
      expectProblem(
        await bootstrapCall({ instanceId: unique('i'), handlers: ['ok', ''] }),
        400,
        'validation_failed',
        ['/handlers/1'],
      );
      expectProblem(
        await bootstrapCall({ instanceId: unique('i'), handlers: ['h'.repeat(301)] }),
        400,
        'validation_failed',
        ['/handlers/0'],
      );
      const ok = await bootstrapCall({ instanceId: unique('i'), handlers: handlers.slice(0, 100) });
      expect(ok.status, ok.text).toBe(200);
      expect(ok.body.queues).toHaveLength(100);
    });

    it('400 for metadata over 16384 bytes serialized (16384 accepted)', async () => {
      // JSON.stringify({ p: '' }) is 8 bytes.
      const exact = { p: 'x'.repeat(16_384 - 8) };
      expect(Buffer.byteLength(JSON.stringify(exact))).toBe(16_384);
      const ok = await bootstrapCall({ instanceId: unique('meta'), metadata: exact });
      expect(ok.status, ok.text).toBe(200);
      const over = { p: 'x'.repeat(16_384 - 7) };
      expectProblem(
        await bootstrapCall({ instanceId: unique('meta'), metadata: over }),
        400,
        'validation_failed',
        ['/metadata'],
      );
      expectProblem(
        await bootstrapCall({ instanceId: unique('meta'), metadata: ['not', 'an', 'object'] }),
        400,
        'validation_failed',
        ['/metadata'],
      );
    });

    it('400 for optional string fields over their limits, reporting every violation', async () => {
      const r = await bootstrapCall({
        instanceId: '',
        workerName: 'w'.repeat(201),
        sdkVersion: 'v'.repeat(101),
        hostname: 'h'.repeat(256),
      });
      expectProblem(r, 400, 'validation_failed', [
        '/instanceId',
        '/workerName',
        '/sdkVersion',
        '/hostname',
      ]);
    });

    it('400 at "" for a body that is not JSON or not an object', async () => {
      expectProblem(
        await gw.call('POST', '/workers/bootstrap', {
          raw: '{"instanceId":',
          headers: { 'x-api-key': gw.appA.key },
        }),
        400,
        'validation_failed',
        [''],
      );
      expectProblem(await bootstrapCall(['instanceId']), 400, 'validation_failed', ['']);
      expectProblem(
        await gw.call('POST', '/workers/bootstrap', { headers: { 'x-api-key': gw.appA.key } }),
        400,
        'validation_failed',
        [''],
      );
    });

    it('401 for a missing or invalid X-API-Key, checked before the body', async () => {
      const missing = await bootstrapCall({ instanceId: unique('k') }, null);
      expectProblem(missing, 401, 'unauthorized');
      expect(missing.body.instance).toBe('/workers/bootstrap');
      expectProblem(
        await bootstrapCall({ instanceId: unique('k') }, 'pos_not-a-real-key'),
        401,
        'unauthorized',
      );
      expectProblem(
        await bootstrapCall({ instanceId: 'x'.repeat(500) }, 'pos_not-a-real-key'),
        401,
        'unauthorized',
      );
    });
  });

  describe('POST /workers/heartbeat', () => {
    it('answers 200 with an empty body (Content-Length 0), records lastHeartbeatAt and the counters, and does not extend sessionExpiresAt', async () => {
      const w = await gw.bootstrap(unique('hb'), []);
      const session = await gw.db.workerSession.findUniqueOrThrow({
        where: { tokenHash: sha256(w.sessionToken) },
      });
      await sleep(20);
      const before = Date.now();
      const r = await workerCall('/workers/heartbeat', w.sessionToken, {
        workerId: w.workerId,
        inFlight: 2,
        processed: 40,
        failed: 3,
      });
      const after = Date.now();
      expectEmpty(r);
      const worker = await gw.db.worker.findUniqueOrThrow({ where: { id: w.workerId } });
      expect(worker).toMatchObject({ inFlight: 2, processed: 40, failed: 3, status: 'Active' });
      expect(worker.lastHeartbeatAt!.getTime()).toBeGreaterThanOrEqual(before - 1);
      expect(worker.lastHeartbeatAt!.getTime()).toBeLessThanOrEqual(after + 1);
      const later = await gw.db.workerSession.findUniqueOrThrow({
        where: { tokenHash: sha256(w.sessionToken) },
      });
      expect(later.expiresAt.getTime()).toBe(session.expiresAt.getTime());
    });

    it('accepts a heartbeat without counters', async () => {
      const w = await gw.bootstrap(unique('hb'), []);
      expectEmpty(await workerCall('/workers/heartbeat', w.sessionToken, { workerId: w.workerId }));
      const worker = await gw.db.worker.findUniqueOrThrow({ where: { id: w.workerId } });
      expect(worker.lastHeartbeatAt).not.toBeNull();
    });

    it("401 for another worker's workerId, a missing token or an invalid token", async () => {
      const w1 = await gw.bootstrap(unique('hb1'), []);
      const w2 = await gw.bootstrap(unique('hb2'), []);
      expectProblem(
        await workerCall('/workers/heartbeat', w1.sessionToken, { workerId: w2.workerId }),
        401,
        'unauthorized',
      );
      expectProblem(
        await workerCall('/workers/heartbeat', null, { workerId: w1.workerId }),
        401,
        'unauthorized',
      );
      expectProblem(
        await workerCall('/workers/heartbeat', 'pws_bogus', { workerId: w1.workerId }),
        401,
        'unauthorized',
      );
      const untouched = await gw.db.worker.findUniqueOrThrow({ where: { id: w2.workerId } });
      expect(untouched.lastHeartbeatAt).toBeNull();
    });

    it('a malformed heartbeat body gives 400 even with a non-matching session', async () => {
      const w1 = await gw.bootstrap(unique('hb1'), []);
      // Valid token of another worker / unknown token, malformed bodies: the body is checked first.
      expectProblem(
        await workerCall('/workers/heartbeat', w1.sessionToken, {}),
        400,
        'validation_failed',
        ['/workerId'],
      );
      expectProblem(
        await workerCall('/workers/heartbeat', 'pws_bogus', { workerId: 7 }),
        400,
        'validation_failed',
        ['/workerId'],
      );
      expectProblem(
        await workerCall('/workers/heartbeat', 'pws_bogus', {
          workerId: 'someone-else',
          inFlight: -1,
        }),
        400,
        'validation_failed',
        ['/inFlight'],
      );
      expectProblem(
        await workerCall('/workers/heartbeat', 'pws_bogus', {
          workerId: w1.workerId,
          processed: '5',
          failed: 1.5,
        }),
        400,
        'validation_failed',
        ['/processed', '/failed'],
      );
      expectProblem(
        await gw.call('POST', '/workers/heartbeat', {
          raw: 'not json',
          headers: { 'x-worker-session': 'pws_bogus' },
        }),
        400,
        'validation_failed',
        [''],
      );
    });
  });

  describe('POST /workers/events', () => {
    it('401 for a session that is not live before the batch is read: a malformed or oversized body does not get parsed first', async () => {
      for (const raw of ['{"workerId": ', `[${'0,'.repeat(200_000)}0]`]) {
        const r = await gw.call('POST', '/workers/events', { raw, headers: { 'x-worker-session': 'pws_not-a-session' } });
        expect(r.status).toBe(401);
        expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
      }
    });

    it('stores a batch of WORKER_EVENTS_MAX_BATCH events and answers 200 empty', async () => {
      const w = await gw.bootstrap(unique('ev'), []);
      const before = Date.now();
      const r = await workerCall('/workers/events', w.sessionToken, {
        workerId: w.workerId,
        events: [
          {
            kind: 'stage_started',
            stageId: 12,
            pipelineId: 3,
            message: 'go',
            at: '2025-03-01T13:00:00+01:00',
          },
          { kind: 'custom', data: { n: 1 } },
          { kind: 'lease_lost' },
        ],
      });
      const after = Date.now();
      expectEmpty(r);
      const rows = await gw.db.workerEvent.findMany({
        where: { workerId: w.workerId, kind: { not: 'started' } },
        orderBy: { id: 'asc' },
      });
      expect(rows.map((e) => e.kind)).toEqual(['stage_started', 'custom', 'lease_lost']);
      expect(rows[0]).toMatchObject({
        applicationId: gw.appA.id,
        message: 'go',
        stageId: 12n,
        pipelineId: 3n,
      });
      expect(rows[0]!.at.toISOString()).toBe('2025-03-01T12:00:00.000Z');
      expect(rows[1]!.data).toEqual({ n: 1 });
      // `at` defaults to now.
      expect(rows[2]!.at.getTime()).toBeGreaterThanOrEqual(before - 1);
      expect(rows[2]!.at.getTime()).toBeLessThanOrEqual(after + 1);
    });

    it('400 at /events for an empty batch, a missing batch, and a batch over WORKER_EVENTS_MAX_BATCH', async () => {
      const w = await gw.bootstrap(unique('ev'), []);
      expectProblem(
        await workerCall('/workers/events', w.sessionToken, { workerId: w.workerId, events: [] }),
        400,
        'validation_failed',
        ['/events'],
      );
      expectProblem(
        await workerCall('/workers/events', w.sessionToken, { workerId: w.workerId }),
        400,
        'validation_failed',
        ['/events'],
      );
      const four = Array.from({ length: 4 }, () => ({ kind: 'custom' }));
      expectProblem(
        await workerCall('/workers/events', w.sessionToken, { workerId: w.workerId, events: four }),
        400,
        'validation_failed',
        ['/events'],
      );
      expect(
        await gw.db.workerEvent.count({ where: { workerId: w.workerId, kind: 'custom' } }),
      ).toBe(0);
    });

    it('400 at /events/{i}/kind for an unknown kind, and at the item for other bad items', async () => {
      const w = await gw.bootstrap(unique('ev'), []);
      const post = (events: unknown[]) =>
        workerCall('/workers/events', w.sessionToken, { workerId: w.workerId, events });
      expectProblem(
        await post([{ kind: 'custom' }, { kind: 'exploded' }]),
        400,
        'validation_failed',
        ['/events/1/kind'],
      );
      expectProblem(await post([{ kind: 'Started' }]), 400, 'validation_failed', [
        '/events/0/kind',
      ]);
      expectProblem(await post([{ message: 'no kind' }]), 400, 'validation_failed', [
        '/events/0/kind',
      ]);
      expectProblem(
        await post([{ kind: 'custom', at: '2025-03-01T12:00:00' }]),
        400,
        'validation_failed',
        ['/events/0/at'],
      );
      expectProblem(
        await post([{ kind: 'custom', message: 'm'.repeat(4001) }]),
        400,
        'validation_failed',
        ['/events/0/message'],
      );
      expectProblem(
        await post([{ kind: 'custom', stageId: 0, pipelineId: '1' }]),
        400,
        'validation_failed',
        ['/events/0/stageId', '/events/0/pipelineId'],
      );
      expectProblem(
        await post([{ kind: 'custom', data: { p: 'x'.repeat(16_384) } }]),
        400,
        'validation_failed',
        ['/events/0/data'],
      );
      // PostgreSQL cannot store U+0000: refused as a bad item, not a 500.
      expectProblem(
        await post([{ kind: 'custom', message: 'nul\u0000here' }]),
        400,
        'validation_failed',
        ['/events/0/message'],
      );
      expect(
        await gw.db.workerEvent.count({ where: { workerId: w.workerId, kind: 'custom' } }),
      ).toBe(0);
    });

    it("401 for another worker's workerId or a missing token; a malformed body is 400 even then", async () => {
      const w1 = await gw.bootstrap(unique('ev1'), []);
      const w2 = await gw.bootstrap(unique('ev2'), []);
      expectProblem(
        await workerCall('/workers/events', w1.sessionToken, {
          workerId: w2.workerId,
          events: [{ kind: 'custom' }],
        }),
        401,
        'unauthorized',
      );
      expectProblem(
        await workerCall('/workers/events', null, {
          workerId: w1.workerId,
          events: [{ kind: 'custom' }],
        }),
        401,
        'unauthorized',
      );
      expectProblem(
        await workerCall('/workers/events', w1.sessionToken, {
          workerId: w2.workerId,
          events: [{ kind: 'nope' }],
        }),
        400,
        'validation_failed',
        ['/events/0/kind'],
      );
      expect(
        await gw.db.workerEvent.count({
          where: { workerId: { in: [w1.workerId, w2.workerId] }, kind: 'custom' },
        }),
      ).toBe(0);
    });
  });

  describe('POST /workers/shutdown', () => {
    it('marks the worker Stopped and records a stopped event with the reason; the token stays valid (heartbeat after shutdown 200 and worker Active again)', async () => {
      const w = await gw.bootstrap(unique('sd'), []);
      const r = await workerCall('/workers/shutdown', w.sessionToken, {
        workerId: w.workerId,
        reason: 'deploy',
      });
      expectEmpty(r);
      expect((await gw.db.worker.findUniqueOrThrow({ where: { id: w.workerId } })).status).toBe(
        'Stopped',
      );
      const stopped = await gw.db.workerEvent.findMany({
        where: { workerId: w.workerId, kind: 'stopped' },
      });
      expect(stopped).toHaveLength(1);
      expect(stopped[0]!.message).toBe('deploy');
      // Not revoked: the same token still authenticates everything.
      expectEmpty(
        await workerCall('/workers/events', w.sessionToken, {
          workerId: w.workerId,
          events: [{ kind: 'custom' }],
        }),
      );
      expectEmpty(await workerCall('/workers/heartbeat', w.sessionToken, { workerId: w.workerId }));
      expect((await gw.db.worker.findUniqueOrThrow({ where: { id: w.workerId } })).status).toBe(
        'Active',
      );
      expectEmpty(await workerCall('/workers/shutdown', w.sessionToken, { workerId: w.workerId }));
    });

    it("401 for another worker's workerId or a missing token; 400 for a malformed body", async () => {
      const w1 = await gw.bootstrap(unique('sd1'), []);
      const w2 = await gw.bootstrap(unique('sd2'), []);
      expectProblem(
        await workerCall('/workers/shutdown', w1.sessionToken, { workerId: w2.workerId }),
        401,
        'unauthorized',
      );
      expectProblem(
        await workerCall('/workers/shutdown', null, { workerId: w1.workerId }),
        401,
        'unauthorized',
      );
      expectProblem(
        await workerCall('/workers/shutdown', w1.sessionToken, {
          workerId: w1.workerId,
          reason: 'r'.repeat(1001),
        }),
        400,
        'validation_failed',
        ['/reason'],
      );
      expectProblem(
        await workerCall('/workers/shutdown', 'pws_bogus', {}),
        400,
        'validation_failed',
        ['/workerId'],
      );
      expect((await gw.db.worker.findUniqueOrThrow({ where: { id: w2.workerId } })).status).toBe(
        'Active',
      );
      expect((await gw.db.worker.findUniqueOrThrow({ where: { id: w1.workerId } })).status).toBe(
        'Active',
      );
    });
  });
});

describe('expired session (WORKER_SESSION_TTL=1)', () => {
  let gw: WorkerGatewayHarness;
  beforeAll(async () => {
    gw = await startWorkerGateway({ WORKER_SESSION_TTL: '1' });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('heartbeat, events, lease and result get 401 once the session expired, but shutdown 200', async () => {
    const before = Date.now();
    const r = await gw.call('POST', '/workers/bootstrap', {
      json: { instanceId: unique('ttl'), handlers: ['h'] },
      headers: { 'x-api-key': gw.appA.key },
    });
    const after = Date.now();
    expect(r.status, r.text).toBe(200);
    const expires = utcMillis(r.body.sessionExpiresAt);
    expect(expires).toBeGreaterThanOrEqual(before + 1000);
    expect(expires).toBeLessThanOrEqual(after + 1000);
    const { workerId, sessionToken } = r.body as { workerId: string; sessionToken: string };
    const seeded = await gw.seedDispatched(gw.appA.id, {
      name: 'p',
      stages: [{ stageName: 's', stageHandlerName: 'h' }],
    });
    const stageId = seeded.stageIds[0]!;
    const executionId = seeded.executions[0]!.executionId;
    const headers = { 'x-worker-session': sessionToken };
    // Still valid before expiry.
    expectEmpty(await gw.call('POST', '/workers/heartbeat', { json: { workerId }, headers }));

    await sleep(Math.max(0, expires - Date.now()) + 50);

    expectProblem(
      await gw.call('POST', '/workers/heartbeat', { json: { workerId }, headers }),
      401,
      'unauthorized',
    );
    expectProblem(
      await gw.call('POST', '/workers/events', {
        json: { workerId, events: [{ kind: 'custom' }] },
        headers,
      }),
      401,
      'unauthorized',
    );
    expectProblem(
      await gw.call('POST', `/stages/${stageId}/lease/acquire`, {
        json: { executionId, workerId },
        headers,
      }),
      401,
      'unauthorized',
    );
    expectProblem(
      await gw.call('POST', `/stages/${stageId}/lease/renew`, {
        json: { executionId, workerId },
        headers,
      }),
      401,
      'unauthorized',
    );
    expectProblem(
      await gw.call('POST', `/stages/${stageId}/result`, {
        json: { stageId, executionId, attempt: 1, isSuccess: true },
        headers: { ...headers, 'x-api-key': gw.appA.key },
      }),
      401,
      'unauthorized',
    );
    expectEmpty(
      await gw.call('POST', '/workers/shutdown', { json: { workerId, reason: 'late' }, headers }),
    );
    expect((await gw.db.worker.findUniqueOrThrow({ where: { id: workerId } })).status).toBe(
      'Stopped',
    );
    expect((await gw.db.stage.findUniqueOrThrow({ where: { id: BigInt(stageId) } })).status).toBe(
      'Pending',
    );
  });
});

describe('broker hand-out (WORKER_BROKER_HANDOUT=true)', () => {
  let empty: WorkerGatewayHarness;
  let configured: WorkerGatewayHarness;
  beforeAll(async () => {
    // The hand-out needs its acknowledgement to start at all (decision 0082).
    const handout = {
      WORKER_BROKER_HANDOUT: 'true',
      WORKER_BROKER_HANDOUT_ACK: 'tenants-share-redis',
    };
    [empty, configured] = await Promise.all([
      startWorkerGateway(handout),
      startWorkerGateway({
        ...handout,
        WORKER_BROKER_CONNECTION_STRING: 'redis://broker.example:6379/2',
      }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([empty?.close(), configured?.close()]);
  });

  it('503 broker_unavailable when hand-out is enabled with an empty connection string', async () => {
    const r = await empty.call('POST', '/workers/bootstrap', {
      json: { instanceId: 'i-1' },
      headers: { 'x-api-key': empty.appA.key },
    });
    expectProblem(r, 503, 'broker_unavailable');
    expect(await empty.db.worker.count()).toBe(0);
    // Credentials and body are still checked first.
    expectProblem(
      await empty.call('POST', '/workers/bootstrap', { json: { instanceId: 'i-1' } }),
      401,
      'unauthorized',
    );
    expectProblem(
      await empty.call('POST', '/workers/bootstrap', {
        json: {},
        headers: { 'x-api-key': empty.appA.key },
      }),
      400,
      'validation_failed',
      ['/instanceId'],
    );
  });

  it('enabled:true with the configured connection string', async () => {
    const r = await configured.call('POST', '/workers/bootstrap', {
      json: { instanceId: 'i-1' },
      headers: { 'x-api-key': configured.appA.key },
    });
    expect(r.status, r.text).toBe(200);
    expectValid(bootstrapResponseSchema, r.body);
    expect(r.body.messageBroker).toEqual({
      enabled: true,
      connectionString: 'redis://broker.example:6379/2',
    });
  });
});

describe('request size (API_MAX_BODY_BYTES=1024)', () => {
  let gw: WorkerGatewayHarness;
  beforeAll(async () => {
    gw = await startWorkerGateway({ API_MAX_BODY_BYTES: '1024' });
  });
  afterAll(async () => {
    await gw?.close();
  });

  /** `json` with a `pad` member that makes its serialization exactly `size` bytes. */
  function padded(json: Record<string, unknown>, size: number): string {
    const build = (n: number) => JSON.stringify({ ...json, pad: 'p'.repeat(n) });
    const raw = build(size - build(0).length);
    expect(Buffer.byteLength(raw)).toBe(size);
    return raw;
  }

  it('a worker-protocol body over API_MAX_BODY_BYTES gets 413 payload_too_large, after the credentials; 1024 bytes are accepted', async () => {
    const key = { 'x-api-key': gw.appA.key };
    const instanceId = unique('size');
    const ok = await gw.call('POST', '/workers/bootstrap', {
      raw: padded({ instanceId }, 1024),
      headers: key,
    });
    expect(ok.status, ok.text).toBe(200);
    const { workerId, sessionToken } = ok.body as { workerId: string; sessionToken: string };
    const session = { 'x-worker-session': sessionToken };

    expectProblem(
      await gw.call('POST', '/workers/bootstrap', {
        raw: padded({ instanceId }, 1025),
        headers: key,
      }),
      413,
      'payload_too_large',
    );
    expectProblem(
      await gw.call('POST', '/workers/bootstrap', { raw: padded({ instanceId }, 1025) }),
      401,
      'unauthorized',
    );
    expectProblem(
      await gw.call('POST', '/workers/heartbeat', {
        raw: padded({ workerId }, 1025),
        headers: session,
      }),
      413,
      'payload_too_large',
    );
    expectProblem(
      await gw.call('POST', '/workers/heartbeat', { raw: padded({ workerId }, 1025) }),
      401,
      'unauthorized',
    );
    expectProblem(
      await gw.call('POST', '/workers/events', {
        raw: padded({ workerId, events: [{ kind: 'custom' }] }, 1025),
        headers: session,
      }),
      413,
      'payload_too_large',
    );
    expectProblem(
      await gw.call('POST', '/workers/shutdown', {
        raw: padded({ workerId }, 1025),
        headers: session,
      }),
      413,
      'payload_too_large',
    );
    const queue = `app_${gw.appA.id}_h_StageNext`;
    expectProblem(
      await gw.call('POST', '/jobs/pull', { raw: padded({ queue }, 1025), headers: key }),
      413,
      'payload_too_large',
    );
    expectProblem(
      await gw.call('POST', '/jobs/pull', { raw: padded({ queue }, 1025) }),
      401,
      'unauthorized',
    );
    expectProblem(
      await gw.call('POST', '/jobs/ack', { raw: padded({ token: 't' }, 1025) }),
      413,
      'payload_too_large',
    );
    const lease = padded({ executionId: randomUUID(), workerId }, 1025);
    expectProblem(
      await gw.call('POST', '/stages/1/lease/acquire', { raw: lease, headers: session }),
      413,
      'payload_too_large',
    );
    expectProblem(
      await gw.call('POST', '/stages/1/lease/renew', { raw: lease }),
      401,
      'unauthorized',
    );
    // Path parameters are checked before the size.
    expectProblem(
      await gw.call('POST', '/stages/0/lease/acquire', { raw: lease, headers: session }),
      400,
      'validation_failed',
      ['stageId'],
    );
    expectEmpty(
      await gw.call('POST', '/workers/heartbeat', {
        raw: padded({ workerId }, 1024),
        headers: session,
      }),
    );
  });

  it('the result endpoint has its own 327680-byte limit, independent of API_MAX_BODY_BYTES', async () => {
    const w = await gw.bootstrap(unique('size'), ['h']);
    const seeded = await gw.seedDispatched(gw.appA.id, {
      name: 'p',
      stages: [{ stageName: 's', stageHandlerName: 'h' }],
    });
    const stageId = seeded.stageIds[0]!;
    const executionId = seeded.executions[0]!.executionId;
    const r = await gw.call('POST', `/stages/${stageId}/result`, {
      json: { stageId, executionId, attempt: 1, isSuccess: true, result: 'r'.repeat(4000) },
      headers: { 'x-api-key': gw.appA.key, 'x-worker-session': w.sessionToken },
    });
    expect(r.status, r.text).toBe(202);
  });

  it('an unknown route or method gets 404 not_found', async () => {
    expectProblem(await gw.call('GET', '/workers/bootstrap'), 404, 'not_found');
    expectProblem(await gw.call('POST', '/workers/nothing', { json: {} }), 404, 'not_found');
  });
});
