import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapWorker, findEnabledApiKeyIgnoringExpiry, findValidApiKey } from '@po/db';
import { hashSecret } from '@po/http';
import {
  stageResultsQueue,
  createRedis,
  createStageResultDeadLetters,
  createStageResultsConsumer,
  createStageResultsProducer,
  resultJobId,
  type StageResultMessage,
} from '@po/queues';
import { TEST_REDIS_URL, cleanupRedisPrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from '@po/testing';
import { UsageError, runAdmin, type AdminQueues } from './commands.js';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.drop());

describe('admin command (addendum §2)', () => {
  it('apps create prints the application and a pos_ key of 43 base64url characters, stored only as its hash', async () => {
    const out = (await runAdmin(database.db, ['apps', 'create', '--name', 'billing'])) as Record<string, unknown>;
    expect(out).toEqual({ applicationId: expect.any(Number), name: 'billing', apiKey: expect.stringMatching(/^pos_[A-Za-z0-9_-]{43}$/), keyId: expect.any(Number) });
    const row = await database.db.apiKey.findUniqueOrThrow({ where: { id: out.keyId as number } });
    expect(row.keyHash).toBe(hashSecret(out.apiKey as string));
    expect(JSON.stringify(row)).not.toContain(out.apiKey as string);
  });

  it('apps keys create adds a key to an existing application, with an optional expiry', async () => {
    const app = await runAdmin(database.db, ['apps', 'create', '--name', 'ops']);
    const key = await runAdmin(database.db, ['apps', 'keys', 'create', '--app', String(app.applicationId), '--expires-at', '2030-01-01T00:00:00+01:00']);
    expect(key).toEqual({ keyId: expect.any(Number), applicationId: app.applicationId, apiKey: expect.stringMatching(/^pos_/), expiresAt: '2029-12-31T23:00:00.000Z' });
    expect(await findValidApiKey(database.db, hashSecret(key.apiKey as string), new Date('2029-06-01T00:00:00Z'))).toEqual({ applicationId: app.applicationId, keyId: key.keyId });
    // expired: invalid for the API, still matched by POST /logs, which ignores expiry
    expect(await findValidApiKey(database.db, hashSecret(key.apiKey as string), new Date('2031-01-01T00:00:00Z'))).toBeNull();
    expect(await findEnabledApiKeyIgnoringExpiry(database.db, hashSecret(key.apiKey as string))).not.toBeNull();
  });

  it('apps keys disable makes the key invalid everywhere', async () => {
    const app = await runAdmin(database.db, ['apps', 'create', '--name', 'temp']);
    expect(await runAdmin(database.db, ['apps', 'keys', 'disable', '--key-id', String(app.keyId)])).toEqual({ keyId: app.keyId, disabled: true });
    const hash = hashSecret(app.apiKey as string);
    expect(await findValidApiKey(database.db, hash, new Date())).toBeNull();
    expect(await findEnabledApiKeyIgnoringExpiry(database.db, hash)).toBeNull();
  });

  it('apps keys disable ends the worker sessions the key bootstrapped (decision 0082), and only those', async () => {
    const app = await runAdmin(database.db, ['apps', 'create', '--name', 'workers']);
    const applicationId = app.applicationId as number;
    const sibling = await runAdmin(database.db, ['apps', 'keys', 'create', '--app', String(applicationId)]);
    const elsewhere = await runAdmin(database.db, ['apps', 'create', '--name', 'elsewhere']);
    const now = new Date();
    const session = async (appId: number, instanceId: string, apiKeyId: number | null) => {
      const tokenHash = hashSecret(`${instanceId}-token`);
      await database.db.$transaction((tx) =>
        bootstrapWorker(tx, { applicationId: appId, instanceId, workerName: null, handlers: [], sdkVersion: null, hostname: null, metadata: null, tokenHash, apiKeyId, now, expiresAt: new Date(now.getTime() + 86_400_000) }),
      );
      return tokenHash;
    };
    const own = await session(applicationId, 'own', app.keyId as number);
    const legacy = await session(applicationId, 'legacy', null);
    const siblings = await session(applicationId, 'sibling', sibling.keyId as number);
    const foreign = await session(elsewhere.applicationId as number, 'foreign', elsewhere.keyId as number);
    await runAdmin(database.db, ['apps', 'keys', 'disable', '--key-id', String(app.keyId)]);
    const ended = async (tokenHash: string) => (await database.db.workerSession.findUniqueOrThrow({ where: { tokenHash } })).supersededAt !== null;
    // Its own session, and one from before sessions knew their key (it may be its).
    expect(await ended(own)).toBe(true);
    expect(await ended(legacy)).toBe(true);
    // Another key's session, of this application or another, lives on.
    expect(await ended(siblings)).toBe(false);
    expect(await ended(foreign)).toBe(false);
  });

  it('refuses bad usage with a message', async () => {
    await expect(runAdmin(database.db, ['apps', 'create'])).rejects.toBeInstanceOf(UsageError);
    await expect(runAdmin(database.db, ['apps', 'keys', 'create', '--app', '999999'])).rejects.toThrow(/does not exist/);
    await expect(runAdmin(database.db, ['apps', 'keys', 'create', '--app', '1', '--expires-at', '2030-01-01T00:00:00'])).rejects.toThrow(/offset/);
    await expect(runAdmin(database.db, ['apps', 'keys', 'disable', '--key-id', 'x'])).rejects.toThrow(/positive integer/);
    await expect(runAdmin(database.db, ['nope'])).rejects.toThrow(/usage/);
  });
});

describe('admin results dead-letters (issue 28, decision 0119)', () => {
  const prefix = testQueuePrefix('admin-dead');
  const redis = createRedis(TEST_REDIS_URL, 'producer');
  const workerRedis = createRedis(TEST_REDIS_URL, 'worker');
  const queues: AdminQueues = { deadLetters: createStageResultDeadLetters(redis, prefix) };
  const results = createStageResultsProducer(redis, prefix);
  const queue = new Queue(stageResultsQueue(7), { connection: redis, prefix });
  const SECRET = 'hunter2-the-context-secret';
  const admin = (...argv: string[]) => runAdmin(database.db, argv, new Date(), queues);

  const receivedAt = new Date().toISOString();
  const message = (n: number): StageResultMessage => ({
    applicationId: 7,
    pipelineId: 70 + n,
    stageId: 700 + n,
    workerId: 'w',
    receivedAt,
    result: {
      stageId: 700 + n,
      executionId: `00000000-0000-4000-8000-00000000000${n}`,
      attempt: 2,
      isSuccess: true,
      result: `private output ${n}`,
      contextItems: [{ key: 'token', value: SECRET, isSensitive: true }],
    },
  });

  afterAll(async () => {
    await queue.close();
    await results.close();
    await queues.deadLetters.close();
    await cleanupRedisPrefix(prefix);
    await workerRedis.quit();
    await redis.quit();
  });

  /** Dead letters made the consumer's way: results its apply refuses, with one attempt each, and a malformed message. */
  beforeAll(async () => {
    for (const n of [1, 2]) await results.publish(message(n));
    await queue.add('result', { applicationId: 7, stageId: 'not a number' }, { jobId: 'r-malformed-1' });
    const consumers = createStageResultsConsumer(
      workerRedis,
      prefix,
      async (m) => {
        throw new Error(`stage ${m.stageId} cannot take this result`);
      },
      { maxAttempts: 1, describe: (err) => (err as Error).message },
    );
    try {
      for (let i = 0; (await queue.getFailedCount()) < 3; i += 1) {
        if (i > 400) throw new Error('the dead letters did not appear');
        await sleep(25);
      }
    } finally {
      await Promise.all(consumers.map((c) => c.close()));
    }
  });

  it('list shows ids, attempts and the failure of every application\'s dead letters, newest first, never the result itself', async () => {
    const out = await admin('results', 'dead-letters', 'list');
    expect(out.total).toBe(3);
    const letters = out.deadLetters as Record<string, unknown>[];
    expect(letters.map((l) => l.jobId).sort()).toEqual([resultJobId(message(1).result.executionId, 2, 'w'), resultJobId(message(2).result.executionId, 2, 'w'), 'r-malformed-1'].sort());
    expect(letters.find((l) => l.jobId === resultJobId(message(1).result.executionId, 2, 'w'))).toEqual({
      jobId: resultJobId(message(1).result.executionId, 2, 'w'),
      applicationId: 7,
      pipelineId: 71,
      stageId: 701,
      executionId: message(1).result.executionId,
      attempt: 2,
      failedReason: 'error after 1 attempt: stage 701 cannot take this result',
      failedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      attemptsMade: 1,
    });
    expect(letters.find((l) => l.jobId === 'r-malformed-1')).toMatchObject({ applicationId: 7, stageId: null, executionId: null, failedReason: expect.stringMatching(/^invalid stage result message/) });
    const failedAt = letters.map((l) => l.failedAt as string);
    expect(failedAt).toEqual([...failedAt].sort().reverse());
    const printed = JSON.stringify(out);
    expect(printed).not.toContain(SECRET);
    expect(printed).not.toContain('private output');

    const one = await admin('results', 'dead-letters', 'list', '--limit', '1');
    expect(one).toEqual({ total: 3, deadLetters: [letters[0]] });
  });

  it('replay queues one dead letter again with its attempts reset; drop deletes one; replay --all the rest', async () => {
    const first = resultJobId(message(1).result.executionId, 2, 'w');
    const second = resultJobId(message(2).result.executionId, 2, 'w');
    expect(await admin('results', 'dead-letters', 'replay', first)).toEqual({ jobId: first, replayed: true });
    const replayed = await queue.getJob(first);
    expect(await replayed!.getState()).toBe('waiting');
    expect(replayed).toMatchObject({ attemptsMade: 0, data: message(1) });
    await expect(admin('results', 'dead-letters', 'replay', first)).rejects.toThrow(`no dead letter ${first}`);

    expect(await admin('results', 'dead-letters', 'drop', 'r-malformed-1')).toEqual({ jobId: 'r-malformed-1', dropped: true });
    expect(await queue.getJob('r-malformed-1')).toBeUndefined();
    await expect(admin('results', 'dead-letters', 'drop', 'r-malformed-1')).rejects.toBeInstanceOf(UsageError);

    expect(await admin('results', 'dead-letters', 'replay', '--all')).toEqual({ replayed: 1 });
    expect(await (await queue.getJob(second))!.getState()).toBe('waiting');
    expect(await admin('results', 'dead-letters', 'list')).toEqual({ total: 0, deadLetters: [] });
  });

  it('refuses bad usage, and needs Redis', async () => {
    await expect(admin('results', 'dead-letters', 'replay')).rejects.toThrow(/a job id or --all/);
    await expect(admin('results', 'dead-letters', 'replay', 'r-x-1', '--all')).rejects.toThrow(/a job id or --all/);
    await expect(admin('results', 'dead-letters', 'drop', 'a:b')).rejects.toThrow(/result job id/);
    await expect(admin('results', 'dead-letters', 'list', '--limit', '1001')).rejects.toThrow(/at most 1000/);
    await expect(runAdmin(database.db, ['results', 'dead-letters', 'list'])).rejects.toThrow(/need Redis/);
  });
});
