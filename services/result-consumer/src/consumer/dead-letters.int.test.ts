import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '@po/db';
import { insertPipeline } from '@po/engine';
import { grantLease, lockExecutionState, startExecutions } from '@po/engine';
import { planPipeline } from '@po/domain';
import {
  ResultDeadLettered,
  createPipelineEventsProducer,
  createRedis,
  createStageNextPublisher,
  createStageResultDeadLetters,
  createStageResultsProducer,
  resultJobId,
  resultReceiptsKey,
  stageResultsQueue,
  type StageResultMessage,
} from '@po/queues';
import { Queue } from 'bullmq';
import { createLogger, metricsText, observeResultDeadLetters } from '@po/telemetry';
import { TEST_REDIS_URL, cleanupRedisPrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from '@po/testing';
import { createResultApplier, type ConsumerDeps, type ResultApplier } from './apply-result.js';
import { consumeResults } from './consume.js';

// Issue 28: a result that cannot be applied is retried RESULTS_MAX_ATTEMPTS times, then kept as a
// dead letter (decision 0119); real PostgreSQL and Redis throughout. The poison is a trigger that
// refuses one context key, as a constraint the code did not expect would.
const MAX_ATTEMPTS = 3;
const SECRET = 's3cret-token-of-the-poison';

let database: TestDatabase;
let deps: ConsumerDeps;
let applier: ResultApplier;
const lines: string[] = [];
const prefix = testQueuePrefix('rc-dead');
const producerRedis = createRedis(TEST_REDIS_URL, 'producer');
const workerRedis = createRedis(TEST_REDIS_URL, 'worker');
const results = createStageResultsProducer(producerRedis, prefix);
const deadLetters = createStageResultDeadLetters(producerRedis, prefix);
const logger = createLogger({
  service: 'result-consumer',
  destination: new Writable({
    write(chunk: Buffer, _e, done) {
      lines.push(chunk.toString());
      done();
    },
  }),
});

beforeAll(async () => {
  database = await createTestDatabase();
  deps = {
    db: database.db,
    publisher: createStageNextPublisher(producerRedis, prefix),
    events: createPipelineEventsProducer(producerRedis, prefix),
    logger,
    random: () => 0.5,
    maxActiveStages: 0,
  };
  applier = createResultApplier(deps, { maxBatch: 16, maxConcurrent: 1 });
  observeResultDeadLetters(() => deadLetters.count());
});

afterAll(async () => {
  await applier.drain();
  await deadLetters.close();
  await results.close();
  await deps.events.close();
  await deps.publisher.close();
  await cleanupRedisPrefix(prefix);
  await workerRedis.quit();
  await producerRedis.quit();
  await database.drop();
});

/** A pipeline whose only stage is Running under a granted lease, as after pull + acquire. */
async function runningStage(applicationId?: number) {
  const app = applicationId === undefined ? await database.db.application.create({ data: { name: 'rc-dead' } }) : { id: applicationId };
  const planned = planPipeline({ name: 'p', stages: [{ stageName: 'a', stageHandlerName: 'h' }] }, { applicationId: app.id });
  if (!planned.ok) throw new Error('invalid');
  const now = new Date();
  const pipelineId = await database.db.$transaction((tx) => insertPipeline(tx, planned.pipeline, now));
  const stage = await database.db.stage.findFirstOrThrow({ where: { pipelineId: BigInt(pipelineId), position: 0 } });
  const executionId = randomUUID();
  await database.db.$transaction(async (tx) => {
    await tx.pipeline.update({ where: { id: BigInt(pipelineId) }, data: { dispatched: true, status: 'Running' } });
    await startExecutions(tx, app.id, [{ stageId: Number(stage.id), executionId }], now);
    const state = await lockExecutionState(tx, Number(stage.id), executionId, { lockPipeline: false });
    await grantLease(tx, state!, { executionId, attempt: 1, workerId: 'w', now, leaseExpiresAt: new Date(now.getTime() + 60_000) });
  });
  return { applicationId: app.id, pipelineId, stageId: Number(stage.id), executionId };
}

type Running = Awaited<ReturnType<typeof runningStage>>;

const success = (s: Running, contextItems: { key: string; value: string; isSensitive?: boolean }[] = []): StageResultMessage => ({
  applicationId: s.applicationId,
  pipelineId: s.pipelineId,
  stageId: s.stageId,
  workerId: 'w',
  receivedAt: new Date().toISOString(),
  result: { stageId: s.stageId, executionId: s.executionId, attempt: 1, isSuccess: true, result: 'out', contextItems },
});

const statusOf = async (s: Running) => (await database.db.stage.findUniqueOrThrow({ where: { id: BigInt(s.stageId) } })).status;

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

describe('a result that cannot be applied (issue 28, decision 0119)', () => {
  it('is tried RESULTS_MAX_ATTEMPTS times and dead-lettered while the results beside it are applied; replayed once fixed, it is applied', async () => {
    await database.db.$executeRawUnsafe(`
      CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.key = 'poison' THEN RAISE EXCEPTION 'context value % refused', NEW.value; END IF;
        RETURN NEW;
      END $$`);
    await database.db.$executeRawUnsafe('CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON context_items FOR EACH ROW EXECUTE FUNCTION refuse_poison()');

    const good = await Promise.all([runningStage(), runningStage(), runningStage(), runningStage()]);
    const poisoned = await runningStage();
    const poisonJob = resultJobId(poisoned.executionId, 1, 'w');
    // Queued before the consumer starts, so the first result's batch runs alone and the others,
    // arriving meanwhile, share the next one with the poison.
    for (const s of good.slice(0, 2)) await results.publish(success(s, [{ key: 'k', value: 'v' }]));
    await results.publish(success(poisoned, [{ key: 'poison', value: SECRET, isSensitive: true }]));
    for (const s of good.slice(2)) await results.publish(success(s, [{ key: 'k', value: 'v' }]));

    const failures: { jobId: string | undefined; deadLettered: boolean }[] = [];
    const consumers = consumeResults(workerRedis, prefix, applier, logger, { concurrency: 8, maxAttempts: MAX_ATTEMPTS, retryDelay: () => 50 });
    for (const c of consumers) c.on('failed', (job, err) => failures.push({ jobId: job?.id, deadLettered: err instanceof ResultDeadLettered }));
    try {
      await until('the dead letter', async () => (await deadLetters.count()) === 1);

      for (const s of good) expect(await statusOf(s)).toBe('Completed');
      expect(await statusOf(poisoned)).toBe('Running');
      // Only the poison spent attempts: MAX_ATTEMPTS failures, the last one final.
      expect(failures).toEqual(Array.from({ length: MAX_ATTEMPTS }, (_, i) => ({ jobId: poisonJob, deadLettered: i === MAX_ATTEMPTS - 1 })));

      const [letter, ...others] = await deadLetters.list(10);
      expect(others).toEqual([]);
      expect(letter).toEqual({
        jobId: poisonJob,
        applicationId: poisoned.applicationId,
        pipelineId: poisoned.pipelineId,
        stageId: poisoned.stageId,
        executionId: poisoned.executionId,
        attempt: 1,
        failedReason: expect.stringMatching(/^error after 3 attempts: \[P0001\] .*context value \[REDACTED\] refused/),
        failedAt: expect.any(String),
        attemptsMade: MAX_ATTEMPTS,
      });
      expect(JSON.stringify(letter)).not.toContain(SECRET);
      expect(lines.join('')).not.toContain(SECRET);
      expect(lines.some((l) => l.includes('result dead-lettered') && l.includes(poisonJob))).toBe(true);

      const metrics = (await metricsText()).body;
      expect(metrics).toContain('po_results_dead_lettered_total{reason="error"} 1');
      expect(metrics).toContain('po_results_dead_lettered_total{reason="contention"} 0');
      expect(metrics).toMatch(/^po_results_dead_letters 1$/m);

      // The cause fixed, the operator replays it (the admin command's operation): it is applied.
      await database.db.$executeRawUnsafe('DROP TRIGGER refuse_poison ON context_items');
      expect(await deadLetters.replay(poisonJob)).toBe(true);
      await until('the replayed result applied', async () => (await statusOf(poisoned)) === 'Completed');
      const stored = await database.db.contextItem.findUniqueOrThrow({ where: { pipelineId_key: { pipelineId: BigInt(poisoned.pipelineId), key: 'poison' } } });
      expect(stored.isSensitive).toBe(true);
      expect(await deadLetters.count()).toBe(0);
      expect(await deadLetters.replay(poisonJob)).toBe(false);
      expect(failures).toHaveLength(MAX_ATTEMPTS);
    } finally {
      await Promise.all(consumers.map((c) => c.close()));
    }
  });

  it('waits out a database outage without spending attempts, then applies the result', async () => {
    const s = await runningStage();
    // A pool whose server refuses connections: the failures are real ECONNREFUSED errors.
    const unreachable = createDb('postgresql://postgres@127.0.0.1:1/none', { max: 1 });
    const down = createResultApplier({ ...deps, db: unreachable }, { maxBatch: 16, maxConcurrent: 1 });
    let current = down;
    let calls = 0;
    const failures: string[] = [];
    const consumers = consumeResults(
      workerRedis,
      prefix,
      {
        apply: (message) => {
          calls += 1;
          return current.apply(message);
        },
        drain: () => current.drain(),
      },
      logger,
      { concurrency: 8, maxAttempts: MAX_ATTEMPTS, retryDelay: () => 50 },
    );
    for (const c of consumers) c.on('failed', (job) => failures.push(job?.id ?? ''));
    try {
      await results.publish(success(s));
      // Past MAX_ATTEMPTS tries a failure that spent attempts would have been dead-lettered.
      await until('more outage retries than attempts allowed', async () => calls > MAX_ATTEMPTS);
      current = applier;
      await until('the result applied after the outage', async () => (await statusOf(s)) === 'Completed');
      expect(failures).toEqual([]);
      expect(await deadLetters.count()).toBe(0);
      expect(lines.some((l) => l.includes('results wait for it without spending attempts'))).toBe(true);
    } finally {
      await Promise.all(consumers.map((c) => c.close()));
      await down.drain();
      await unreachable.$disconnect();
    }
  });
});

describe('results committed as a group (decision 0125)', () => {
  /** Posts the results at once, as concurrent requests do: the first commits alone, the rest ride together. */
  const postTogether = (messages: StageResultMessage[]) => Promise.all(messages.map((m) => results.publish(m)));
  const openShard = (applicationId: number) => new Queue(stageResultsQueue(applicationId), { connection: producerRedis, prefix });

  it('travel as one job with a receipt each that the sweeper honours; once applied, every stage is Completed and the receipts are gone', async () => {
    const first = await runningStage();
    const stages = [first];
    for (let i = 0; i < 11; i++) stages.push(await runningStage(first.applicationId));
    const shards = new Map(stages.map((s) => [stageResultsQueue(s.applicationId), openShard(s.applicationId)]));
    try {
      await postTogether(stages.map((s) => success(s)));
      const jobs = (await Promise.all([...shards.values()].map((q) => q.getJobs(['waiting'])))).flat();
      const carried = jobs.flatMap((j) => (j.name === 'results' ? (j.data as { results: StageResultMessage[] }).results : [j.data as StageResultMessage]));
      // Every result exactly once, in fewer jobs than results.
      expect(carried.map((m) => m.result.executionId).sort()).toEqual(stages.map((s) => s.executionId).sort());
      expect(jobs.some((j) => j.name === 'results')).toBe(true);
      expect(jobs.length).toBeLessThan(stages.length);
      const asked = stages.map((s) => ({ applicationId: s.applicationId, executionId: s.executionId, attempt: 1, workerId: 'w' }));
      expect([...(await results.waiting(asked))].sort()).toEqual(stages.map((s) => s.executionId).sort());

      const consumers = consumeResults(workerRedis, prefix, applier, logger, { concurrency: 8, maxAttempts: MAX_ATTEMPTS, retryDelay: () => 50 });
      try {
        await until('every grouped result applied', async () => (await Promise.all(stages.map(statusOf))).every((st) => st === 'Completed'));
        await until('the receipts removed', async () => {
          const left = await Promise.all([...shards.values()].map((q) => producerRedis.hlen(resultReceiptsKey(q))));
          return left.every((n) => n === 0);
        });
        expect(await results.waiting(asked)).toEqual(new Set());
      } finally {
        await Promise.all(consumers.map((c) => c.close()));
      }
    } finally {
      await Promise.all([...shards.values()].map((q) => q.close()));
    }
  });

  it('a result of a group that cannot be applied leaves it as its own job: retried, dead-lettered, while the rest of the group is applied', async () => {
    await database.db.$executeRawUnsafe(`
      CREATE FUNCTION refuse_poison2() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.key = 'poison2' THEN RAISE EXCEPTION 'refused'; END IF;
        RETURN NEW;
      END $$`);
    await database.db.$executeRawUnsafe('CREATE TRIGGER refuse_poison2 BEFORE INSERT OR UPDATE ON context_items FOR EACH ROW EXECUTE FUNCTION refuse_poison2()');
    const first = await runningStage();
    const good = [first, ...(await Promise.all([runningStage(first.applicationId), runningStage(first.applicationId)]))];
    const poisoned = await runningStage(first.applicationId);
    const poisonJob = resultJobId(poisoned.executionId, 1, 'w');
    const before = await deadLetters.count();
    await postTogether([...good.map((s) => success(s)), success(poisoned, [{ key: 'poison2', value: 'x' }])]);
    const shard = openShard(poisoned.applicationId);
    // The poison rides in a group with two of the others.
    const groups = (await shard.getJobs(['waiting'])).filter((j) => j.name === 'results');
    expect(groups.map((j) => (j.data as { results: StageResultMessage[] }).results.length)).toEqual([3]);
    const failures: { jobId: string | undefined; deadLettered: boolean }[] = [];
    const consumers = consumeResults(workerRedis, prefix, applier, logger, { concurrency: 8, maxAttempts: MAX_ATTEMPTS, retryDelay: () => 50 });
    for (const c of consumers) c.on('failed', (job, err) => failures.push({ jobId: job?.id, deadLettered: err instanceof ResultDeadLettered }));
    try {
      await until('the poison dead-lettered', async () => (await deadLetters.count()) === before + 1);
      for (const s of good) expect(await statusOf(s)).toBe('Completed');
      expect(await statusOf(poisoned)).toBe('Running');
      // The group itself never failed: the poison's own job spent every attempt.
      expect(failures).toEqual(Array.from({ length: MAX_ATTEMPTS }, (_, i) => ({ jobId: poisonJob, deadLettered: i === MAX_ATTEMPTS - 1 })));
      expect(await shard.getJobState(poisonJob)).toBe('failed');
      expect(await producerRedis.hlen(resultReceiptsKey(shard))).toBe(0);
      expect(await deadLetters.drop(poisonJob)).toBe(true);
    } finally {
      await Promise.all(consumers.map((c) => c.close()));
      await database.db.$executeRawUnsafe('DROP TRIGGER refuse_poison2 ON context_items');
      await shard.close();
    }
  });

  it('the same result twice in one group (a retry after a dropped response) is applied once', async () => {
    const first = await runningStage();
    const other = await runningStage(first.applicationId);
    const shard = openShard(first.applicationId);
    await postTogether([success(other), success(first), success(first)]);
    const groups = (await shard.getJobs(['waiting'])).filter((j) => j.name === 'results');
    expect(groups.map((j) => (j.data as { results: StageResultMessage[] }).results.map((m) => m.stageId))).toEqual([[first.stageId, first.stageId]]);
    const failures: string[] = [];
    const consumers = consumeResults(workerRedis, prefix, applier, logger, { concurrency: 8, maxAttempts: MAX_ATTEMPTS, retryDelay: () => 50 });
    for (const c of consumers) c.on('failed', (job) => failures.push(job?.id ?? ''));
    try {
      await until('both stages applied', async () => (await statusOf(first)) === 'Completed' && (await statusOf(other)) === 'Completed');
      await until('the group done', async () => (await shard.getJobs(['waiting', 'active', 'delayed'])).length === 0);
      const executions = await database.db.stageExecution.findMany({ where: { stageId: BigInt(first.stageId) } });
      expect(executions.map((e) => e.endReason)).toEqual(['result']);
      expect(failures).toEqual([]);
    } finally {
      await Promise.all(consumers.map((c) => c.close()));
      await shard.close();
    }
  });

  it('a group waits out a database outage whole, without spending attempts, then every result is applied', async () => {
    const first = await runningStage();
    const stages = [first, ...(await Promise.all([runningStage(first.applicationId), runningStage(first.applicationId)]))];
    const unreachable = createDb('postgresql://postgres@127.0.0.1:1/none', { max: 1 });
    const down = createResultApplier({ ...deps, db: unreachable }, { maxBatch: 16, maxConcurrent: 1 });
    let current = down;
    let calls = 0;
    const failures: string[] = [];
    await postTogether(stages.map((s) => success(s)));
    const consumers = consumeResults(
      workerRedis,
      prefix,
      { apply: (message) => ((calls += 1), current.apply(message)), drain: () => current.drain() },
      logger,
      { concurrency: 8, maxAttempts: MAX_ATTEMPTS, retryDelay: () => 50 },
    );
    for (const c of consumers) c.on('failed', (job) => failures.push(job?.id ?? ''));
    try {
      await until('more outage retries than attempts allowed', async () => calls > stages.length * (MAX_ATTEMPTS + 1));
      current = applier;
      await until('the group applied after the outage', async () => (await Promise.all(stages.map(statusOf))).every((st) => st === 'Completed'));
      expect(failures).toEqual([]);
    } finally {
      await Promise.all(consumers.map((c) => c.close()));
      await down.drain();
      await unreachable.$disconnect();
    }
  });

  it('under load a commit waits its linger, so a result posted meanwhile joins the group queued before it (RESULTS_COMMIT_LINGER_MS)', async () => {
    const lingering = createStageResultsProducer(producerRedis, prefix, { commitLingerMs: 300 });
    const first = await runningStage();
    const [second, third] = await Promise.all([runningStage(first.applicationId), runningStage(first.applicationId)]);
    const shard = openShard(first.applicationId);
    const carried = async () =>
      (await shard.getJobs(['waiting']))
        .map((j) => (j.name === 'results' ? (j.data as { results: StageResultMessage[] }).results : [j.data as StageResultMessage]).map((m) => m.stageId))
        .sort((a, b) => a.length - b.length);
    try {
      // Idle: the first goes at once; the second queues behind its commit.
      const posted = [lingering.publish(success(first)), lingering.publish(success(second))];
      await posted[0];
      // Without the linger the second would be on its way alone by now.
      posted.push(lingering.publish(success(third)));
      await Promise.all(posted);
      expect(await carried()).toEqual([[first.stageId], [second.stageId, third.stageId]]);
      const consumers = consumeResults(workerRedis, prefix, applier, logger, { concurrency: 8, maxAttempts: MAX_ATTEMPTS, retryDelay: () => 50 });
      try {
        await until('all three applied', async () => (await Promise.all([first, second, third].map(statusOf))).every((st) => st === 'Completed'));
      } finally {
        await Promise.all(consumers.map((c) => c.close()));
      }
    } finally {
      await lingering.close();
      await shard.close();
    }
  });
});
