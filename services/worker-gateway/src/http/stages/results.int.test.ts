// POST /stages/{stageId}/result (api-spec "Worker protocol" behaviour rule 3, Authentication,
// Errors, Limits; addendum §1 request size, §3 check order, §5.2, §13, §15).
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, expectValid } from '@po/testing';
import { stageResultAcceptedSchema } from '@po/contracts';
import type { StageResultMessage } from '@po/queues';
import { TEST_REDIS_URL } from '@po/testing';
import { startWorkerGateway, type WorkerGatewayHarness } from '../../testing/harness.js';
import { openResultsQueues, type ResultsQueues } from '../../testing/results-queues.js';

// ---------------------------------------------------------------------------------------------
// Assertions shared by this file

// ---------------------------------------------------------------------------------------------

type Session = { workerId: string; sessionToken: string };

describe('stage results (results are published to stage-results)', () => {
  let gw: WorkerGatewayHarness;
  let redis: Redis;
  let results: ResultsQueues;
  let wA: Session;
  let wB: Session;
  beforeAll(async () => {
    gw = await startWorkerGateway();
    redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    results = openResultsQueues(redis, gw.prefix);
    [wA, wB] = await Promise.all([
      gw.bootstrap('result-wA', ['h']),
      gw.bootstrap('result-wB', ['h'], gw.appB.key),
    ]);
  });
  afterAll(async () => {
    await results?.close();
    await redis?.quit();
    await gw?.close();
  });

  const submit = (
    stageId: number | string,
    json: unknown,
    headers: { key?: string | null; session?: string | null } = {},
  ) => {
    const h: Record<string, string> = {};
    const key = headers.key === undefined ? gw.appA.key : headers.key;
    const session = headers.session === undefined ? wA.sessionToken : headers.session;
    if (key !== null) h['x-api-key'] = key;
    if (session !== null) h['x-worker-session'] = session;
    return gw.call(
      'POST',
      `/stages/${stageId}/result`,
      typeof json === 'string' ? { raw: json, headers: h } : { json, headers: h },
    );
  };
  /** A pipeline of app A (or B) with its first stage dispatched. */
  async function dispatched(applicationId?: number, stageCount = 1) {
    const stages = Array.from({ length: stageCount }, (_, i) => ({
      stageName: `s${i}`,
      stageHandlerName: 'h',
    }));
    const seeded = await gw.seedDispatched(
      applicationId ?? gw.appA.id,
      { name: 'result', stages },
      [0],
    );
    return {
      pipelineId: seeded.pipelineId,
      stageId: seeded.stageIds[0]!,
      executionId: seeded.executions[0]!.executionId,
    };
  }
  const published = async (executionId: string): Promise<StageResultMessage[]> => {
    const jobs = await results.getJobs(['waiting']);
    return jobs
      .map((j) => j.data as StageResultMessage)
      .filter((m) => m.result.executionId === executionId);
  };
  const body = (
    d: { stageId: number; executionId: string },
    extra: Record<string, unknown> = {},
  ) => ({
    stageId: d.stageId,
    executionId: d.executionId,
    attempt: 1,
    isSuccess: true,
    ...extra,
  });

  describe('accepted', () => {
    it('answers 202 {accepted, stageId, executionId} and the job is in the stage-results queue with the body', async () => {
      const d = await dispatched();
      const sent = body(d, {
        pipelineId: d.pipelineId,
        result: '{"ok":true}',
        errorCode: 'E_SOMETHING',
        retryable: false,
        logs: [{ message: 'done', logLevel: 'Debug', created: '2025-03-01T12:00:00.000Z' }],
        contextItems: [{ key: 'k', value: 'v' }],
        appendedStages: [
          { stageName: 'extra', stageHandlerName: 'h', options: { dependsOn: ['s0'] } },
        ],
      });
      const before = Date.now();
      const r = await submit(d.stageId, sent);
      expect(r.status, r.text).toBe(202);
      expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expectValid(stageResultAcceptedSchema, r.body);
      expect(r.body).toEqual({ accepted: true, stageId: d.stageId, executionId: d.executionId });
      const messages = await published(d.executionId);
      expect(messages).toHaveLength(1);
      expect(messages[0]).toEqual({
        applicationId: gw.appA.id,
        stageId: d.stageId,
        pipelineId: d.pipelineId,
        workerId: wA.workerId,
        receivedAt: expect.any(String),
        result: sent,
      });
      expect(Date.parse(messages[0]!.receivedAt)).toBeGreaterThanOrEqual(before - 1);
      // 202 does not touch the stage: the result consumer applies it.
      expect(
        await gw.db.stage.findUniqueOrThrow({ where: { id: BigInt(d.stageId) } }),
      ).toMatchObject({ status: 'Pending', output: null });
    });

    it('accepts unknown fields, a null pipelineId, and a result without a lease (fencing is the consumer’s job)', async () => {
      const d = await dispatched();
      const r = await submit(d.stageId, {
        ...body(d, { isSuccess: false }),
        pipelineId: null,
        somethingNew: { a: 1 },
        nextStageId: 77,
        runNextIfCurrentFailed: true,
      });
      expect(r.status, r.text).toBe(202);
      expect(r.body).toEqual({ accepted: true, stageId: d.stageId, executionId: d.executionId });
      const [message] = await published(d.executionId);
      expect(message!.result).toMatchObject({
        stageId: d.stageId,
        executionId: d.executionId,
        attempt: 1,
        isSuccess: false,
      });
    });

    it('a duplicate submission is accepted again (202); each attempt\'s result waits on the queue once (decision 0062)', async () => {
      const d = await dispatched();
      expect((await submit(d.stageId, body(d))).status).toBe(202);
      expect((await submit(d.stageId, body(d))).status).toBe(202);
      expect(await published(d.executionId)).toHaveLength(1);
      // Another attempt of the same execution is another result.
      expect((await submit(d.stageId, body(d, { attempt: 2 }))).status).toBe(202);
      expect(await published(d.executionId)).toHaveLength(2);
    });
  });

  describe('execution ids no dispatch issued (addendum §1 opaque ids, §9 UUIDs, §12 fencing; decision 0117)', () => {
    const allJobs = async () => (await results.getJobs(['waiting', 'active', 'delayed', 'failed', 'completed'])).length;

    it('executionId "a:b" (once a 503: BullMQ refuses `:` in the job id) is accepted and discarded: 202, nothing published, the stage unchanged', async () => {
      const d = await dispatched();
      const before = await allJobs();
      const r = await submit(d.stageId, body(d, { executionId: 'a:b' }));
      expect(r.status, r.text).toBe(202);
      expectValid(stageResultAcceptedSchema, r.body);
      expect(r.body).toEqual({ accepted: true, stageId: d.stageId, executionId: 'a:b' });
      expect(await allJobs()).toBe(before);
      expect(await gw.db.stage.findUniqueOrThrow({ where: { id: BigInt(d.stageId) } })).toMatchObject({ status: 'Pending', output: null });
    });

    it('odd executionIds never answer 5xx: empty, with NUL or a lone surrogate a 400 at /executionId, one past the body limit a 413, any other string a 202 that reaches no broker', async () => {
      const d = await dispatched();
      const before = await allJobs();
      expectProblem(await submit(d.stageId, body(d, { executionId: '' })), 400, 'validation_failed', ['/executionId']);
      // Every JSON string refuses NUL and lone surrogates (decisions 0010, 0080).
      expectProblem(await submit(d.stageId, body(d, { executionId: 'a\u0000b' })), 400, 'validation_failed', ['/executionId']);
      expectProblem(await submit(d.stageId, body(d, { executionId: '\ud800' })), 400, 'validation_failed', ['/executionId']);
      expectProblem(await submit(d.stageId, body(d, { executionId: 'x'.repeat(400_000) })), 413, 'payload_too_large');
      const odd = [
        ' ',
        'has spaces in it',
        ':',
        'r-1-1',
        '*',
        '../../etc',
        '{"$ne":null}',
        'x'.repeat(300_000),
        'é',
        '执行-🙂',
        'tab\tand\nnewline',
        `${d.executionId} `,
        ` ${d.executionId}`,
        d.executionId.replace(/-/g, ''),
        `${d.executionId}:1`,
      ];
      for (const executionId of odd) {
        const r = await submit(d.stageId, body(d, { executionId }));
        expect(r.status, `${JSON.stringify(executionId.slice(0, 40))}: ${r.text.slice(0, 300)}`).toBe(202);
        expect(r.body).toMatchObject({ accepted: true, stageId: d.stageId });
      }
      expect(await allJobs()).toBe(before);
      // The real execution id still goes through.
      expect((await submit(d.stageId, body(d))).status).toBe(202);
      expect(await published(d.executionId)).toHaveLength(1);
    });
  });

  describe('validation', () => {
    it('400 at /stageId when the body stageId differs from the route', async () => {
      const d = await dispatched();
      const other = await dispatched();
      expectProblem(
        await submit(d.stageId, body(d, { stageId: other.stageId })),
        400,
        'validation_failed',
        ['/stageId'],
      );
      expect(await published(d.executionId)).toHaveLength(0);
    });

    it("400 at /pipelineId when pipelineId is not the stage's pipeline", async () => {
      const d = await dispatched();
      const other = await dispatched();
      expectProblem(
        await submit(d.stageId, body(d, { pipelineId: other.pipelineId })),
        400,
        'validation_failed',
        ['/pipelineId'],
      );
      expect(await published(d.executionId)).toHaveLength(0);
    });

    it('400 at stageId for an invalid route stageId', async () => {
      const d = await dispatched();
      for (const bad of ['0', '007', '9007199254740992']) {
        expectProblem(await submit(bad, body(d)), 400, 'validation_failed', ['stageId']);
      }
    });

    it('a route stageId that is not a positive integer at all: 401 without valid credentials, then 400 at stageId (addendum §1, §3; decision 0117)', async () => {
      const d = await dispatched();
      for (const bad of ['abc', '-1', '1.5', '1e3', '%20', '%E2%91%A0', '%ZZ', 'a:b']) {
        const r = await submit(bad, body(d));
        expectProblem(r, 400, 'validation_failed', ['stageId']);
        expect(r.body.instance).toBe(`/stages/${bad}/result`);
        expectProblem(await submit(bad, {}), 400, 'validation_failed', ['stageId']);
        expectProblem(await submit(bad, body(d), { key: null, session: null }), 401, 'unauthorized');
        expectProblem(await submit(bad, body(d), { key: null }), 401, 'unauthorized');
        expectProblem(await submit(bad, body(d), { session: null }), 401, 'unauthorized');
        expectProblem(await submit(bad, body(d), { session: 'pws_bogus' }), 401, 'unauthorized');
        expectProblem(await submit(bad, body(d), { key: gw.appB.key }), 401, 'unauthorized');
      }
      expect(await published(d.executionId)).toHaveLength(0);
    });

    it('400 for missing required fields and wrong types, reporting every violation', async () => {
      const d = await dispatched();
      expectProblem(await submit(d.stageId, {}), 400, 'validation_failed', [
        '/stageId',
        '/executionId',
        '/attempt',
      ]);
      expectProblem(
        await submit(d.stageId, {
          stageId: String(d.stageId),
          executionId: '',
          attempt: 0,
          isSuccess: 'true',
        }),
        400,
        'validation_failed',
        ['/stageId', '/executionId', '/attempt', '/isSuccess'],
      );
      expectProblem(
        await submit(d.stageId, body(d, { logs: [{ logLevel: 'Info' }], retryable: 'no' })),
        400,
        'validation_failed',
        ['/logs/0/message', '/retryable'],
      );
      expectProblem(await submit(d.stageId, '{"stageId":'), 400, 'validation_failed', ['']);
      expectProblem(await submit(d.stageId, '[1]'), 400, 'validation_failed', ['']);
      expect(await published(d.executionId)).toHaveLength(0);
    });

    it('400 for more than 100 logs or 64 context items, a log date-time without offset, or a bad context item', async () => {
      const d = await dispatched();
      const logs = (n: number) => Array.from({ length: n }, (_, i) => ({ message: `m${i}` }));
      const items = (n: number) =>
        Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: 'v' }));
      expectProblem(
        await submit(d.stageId, body(d, { logs: logs(101) })),
        400,
        'validation_failed',
        ['/logs'],
      );
      expectProblem(
        await submit(d.stageId, body(d, { contextItems: items(65) })),
        400,
        'validation_failed',
        ['/contextItems'],
      );
      expectProblem(
        await submit(
          d.stageId,
          body(d, { logs: [{ message: 'm', created: '2025-03-01T12:00:00' }] }),
        ),
        400,
        'validation_failed',
        ['/logs/0/created'],
      );
      expectProblem(
        await submit(d.stageId, body(d, { contextItems: [{ key: '', value: 'v' }] })),
        400,
        'validation_failed',
        ['/contextItems/0/key'],
      );
      expect(await published(d.executionId)).toHaveLength(0);
      const ok = await submit(d.stageId, body(d, { logs: logs(100), contextItems: items(64) }));
      expect(ok.status, ok.text).toBe(202);
    });

    it('400 at /result for a result string over 262144 bytes (bytes, not characters); exactly 262144 accepted', async () => {
      const d = await dispatched();
      const ok = await submit(d.stageId, body(d, { result: 'x'.repeat(262_144) }));
      expect(ok.status, ok.text).toBe(202);
      expectProblem(
        await submit(d.stageId, body(d, { result: 'x'.repeat(262_145) })),
        400,
        'validation_failed',
        ['/result'],
      );
      // 131073 characters, 262146 bytes.
      expectProblem(
        await submit(d.stageId, body(d, { result: 'é'.repeat(131_073) })),
        400,
        'validation_failed',
        ['/result'],
      );
      expect(await published(d.executionId)).toHaveLength(1);
    });

    it('400 at /errorCode for an errorCode with a control character or over 200 characters', async () => {
      const d = await dispatched();
      for (const errorCode of ['BAD\u0001CODE', 'LINE\nBREAK', 'TAB\t', 'DEL\u007f', 'C1\u0085']) {
        expectProblem(
          await submit(d.stageId, body(d, { isSuccess: false, errorCode })),
          400,
          'validation_failed',
          ['/errorCode'],
        );
      }
      expectProblem(
        await submit(d.stageId, body(d, { isSuccess: false, errorCode: 'E'.repeat(201) })),
        400,
        'validation_failed',
        ['/errorCode'],
      );
      const ok = await submit(d.stageId, body(d, { isSuccess: false, errorCode: 'É'.repeat(200) }));
      expect(ok.status, ok.text).toBe(202);
    });

    it('400 for appendedStages with a dependsOn naming no existing stage nor an earlier item; 202 when it does', async () => {
      const d = await dispatched(undefined, 2);
      const unknown = await submit(
        d.stageId,
        body(d, {
          appendedStages: [
            { stageName: 'a', stageHandlerName: 'h', options: { dependsOn: ['s1', 'nope'] } },
          ],
        }),
      );
      expectProblem(unknown, 400, 'validation_failed', ['/appendedStages/0/options/dependsOn/1']);
      const later = await submit(
        d.stageId,
        body(d, {
          appendedStages: [
            { stageName: 'a', stageHandlerName: 'h', options: { dependsOn: ['b'] } },
            { stageName: 'b', stageHandlerName: 'h' },
          ],
        }),
      );
      expectProblem(later, 400, 'validation_failed', ['/appendedStages/0/options/dependsOn/0']);
      const ok = await submit(
        d.stageId,
        body(d, {
          appendedStages: [
            { stageName: 'a', stageHandlerName: 'h', options: { dependsOn: ['s0', 's1'] } },
            { stageName: 'b', stageHandlerName: 'h', options: { dependsOn: ['a'] } },
          ],
        }),
      );
      expect(ok.status, ok.text).toBe(202);
      expect(await published(d.executionId)).toHaveLength(1);
    });

    it('400 for appendedStages that take the pipeline over 100 stages (exactly 100 accepted)', async () => {
      const d = await dispatched(undefined, 3);
      const stages = (n: number) =>
        Array.from({ length: n }, (_, i) => ({ stageName: `x${i}`, stageHandlerName: 'h' }));
      expectProblem(
        await submit(d.stageId, body(d, { appendedStages: stages(98) })),
        400,
        'validation_failed',
        ['/appendedStages'],
      );
      expectProblem(
        await submit(d.stageId, body(d, { appendedStages: stages(101) })),
        400,
        'validation_failed',
        ['/appendedStages'],
      );
      const ok = await submit(d.stageId, body(d, { appendedStages: stages(97) }));
      expect(ok.status, ok.text).toBe(202);
    });

    it('400 for an appended stage that breaks the StageInfo rules', async () => {
      const d = await dispatched();
      expectProblem(
        await submit(
          d.stageId,
          body(d, { appendedStages: [{ stageName: '', stageHandlerName: 'h' }] }),
        ),
        400,
        'validation_failed',
        ['/appendedStages/0/stageName'],
      );
      expectProblem(
        await submit(d.stageId, body(d, { appendedStages: [{ stageName: 'a' }] })),
        400,
        'validation_failed',
        ['/appendedStages/0/stageHandlerName'],
      );
      expectProblem(
        await submit(
          d.stageId,
          body(d, {
            appendedStages: [
              { stageName: 'a', stageHandlerName: 'h', input: { big: 'x'.repeat(262_144) } },
            ],
          }),
        ),
        400,
        'validation_failed',
        ['/appendedStages/0/input'],
      );
    });
  });

  describe('request size', () => {
    /** A result body of exactly `size` bytes: the padding sits in a log message. */
    function bodyOfSize(d: { stageId: number; executionId: string }, size: number): string {
      const build = (pad: number) =>
        JSON.stringify(
          body(d, { result: 'r'.repeat(200_000), logs: [{ message: 'p'.repeat(pad) }] }),
        );
      const raw = build(size - build(0).length);
      expect(Buffer.byteLength(raw)).toBe(size);
      return raw;
    }

    it('a body of 327680 bytes is accepted; 327681 bytes gets 413 payload_too_large', async () => {
      const d = await dispatched();
      const ok = await submit(d.stageId, bodyOfSize(d, 327_680));
      expect(ok.status, ok.text).toBe(202);
      const tooLarge = await submit(d.stageId, bodyOfSize(d, 327_681));
      expectProblem(tooLarge, 413, 'payload_too_large');
      expect(await published(d.executionId)).toHaveLength(1);
    });

    it('the size check runs after the credentials and before body validation', async () => {
      const d = await dispatched();
      const raw = bodyOfSize(d, 327_681);
      expectProblem(await submit(d.stageId, raw, { key: null }), 401, 'unauthorized');
      expectProblem(await submit(d.stageId, raw, { session: null }), 401, 'unauthorized');
      expectProblem(await submit('0', raw), 400, 'validation_failed', ['stageId']);
      const invalid = `{"stageId":"x","pad":"${'p'.repeat(327_700)}"}`;
      expectProblem(await submit(d.stageId, invalid), 413, 'payload_too_large');
    });
  });

  describe('credentials and ownership', () => {
    it("403 for another application's stage", async () => {
      const d = await dispatched(gw.appB.id);
      const r = await submit(d.stageId, body(d));
      expectProblem(r, 403, 'forbidden');
      expect(r.body.instance).toBe(`/stages/${d.stageId}/result`);
      expect(await published(d.executionId)).toHaveLength(0);
    });

    it('404 for an unknown stage', async () => {
      expectProblem(
        await submit(999_999_999, {
          stageId: 999_999_999,
          executionId: randomUUID(),
          attempt: 1,
          isSuccess: true,
        }),
        404,
        'not_found',
      );
    });

    it('body validation comes before existence: an unknown stage with a malformed body gets 400', async () => {
      expectProblem(
        await submit(999_999_999, { stageId: 999_999_999, executionId: randomUUID(), attempt: 0 }),
        400,
        'validation_failed',
        ['/attempt'],
      );
    });

    it('401 for a session of another application than the key', async () => {
      const d = await dispatched();
      expectProblem(
        await submit(d.stageId, body(d), { session: wB.sessionToken }),
        401,
        'unauthorized',
      );
      const dB = await dispatched(gw.appB.id);
      expectProblem(
        await submit(dB.stageId, body(dB), { session: wA.sessionToken, key: gw.appB.key }),
        401,
        'unauthorized',
      );
      expect(await published(d.executionId)).toHaveLength(0);
      expect(await published(dB.executionId)).toHaveLength(0);
    });

    it('401 for a missing or invalid key, and for a missing or invalid session', async () => {
      const d = await dispatched();
      expectProblem(await submit(d.stageId, body(d), { key: null }), 401, 'unauthorized');
      expectProblem(await submit(d.stageId, body(d), { key: 'pos_invalid' }), 401, 'unauthorized');
      expectProblem(await submit(d.stageId, body(d), { session: null }), 401, 'unauthorized');
      expectProblem(
        await submit(d.stageId, body(d), { session: 'pws_invalid' }),
        401,
        'unauthorized',
      );
      // Credentials come before the path parameter and the body.
      expectProblem(await submit('0', {}, { key: null }), 401, 'unauthorized');
      expectProblem(await submit('0', {}, { session: null }), 401, 'unauthorized');
      expect(await published(d.executionId)).toHaveLength(0);
    });
  });
});

describe('stage results when the broker does not confirm', () => {
  let gw: WorkerGatewayHarness;
  let w: Session;
  beforeAll(async () => {
    gw = await startWorkerGateway(
      {},
      {
        results: {
          publish: async () => {
            throw new Error('down');
          },
          waiting: async () => new Set<string>(),
          close: async () => {},
        },
      },
    );
    w = await gw.bootstrap('broker-down', ['h']);
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('503 broker_unavailable when the results producer fails', async () => {
    const seeded = await gw.seedDispatched(gw.appA.id, {
      name: 'down',
      stages: [{ stageName: 's', stageHandlerName: 'h' }],
    });
    const stageId = seeded.stageIds[0]!;
    const executionId = seeded.executions[0]!.executionId;
    const r = await gw.call('POST', `/stages/${stageId}/result`, {
      json: { stageId, executionId, attempt: 1, isSuccess: true },
      headers: { 'x-api-key': gw.appA.key, 'x-worker-session': w.sessionToken },
    });
    expectProblem(r, 503, 'broker_unavailable');
    // Checks before publishing still answer with their own status.
    const unknown = await gw.call('POST', '/stages/999999999/result', {
      json: { stageId: 999_999_999, executionId, attempt: 1, isSuccess: true },
      headers: { 'x-api-key': gw.appA.key, 'x-worker-session': w.sessionToken },
    });
    expectProblem(unknown, 404, 'not_found');
  });
});
