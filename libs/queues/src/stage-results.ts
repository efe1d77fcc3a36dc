import { createHash, randomUUID } from 'node:crypto';
import { DelayedError, Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import {
  confirmReplicated,
  isCluster,
  reopeningQueue,
  type RedisConnection,
} from './connection.js';
import { compile, type StageResultSubmit } from '@po/contracts';

/**
 * Accepted worker results on their way from the worker-gateway to the result-consumer: one of
 * STAGE_RESULTS_SHARDS queues, chosen by the application, each its own hash tag, so on a Redis
 * Cluster the results of different applications spread over the slots while each queue's keys stay
 * in one (decision 0123). The count is fixed: changing it would strand results queued in a shard
 * that no longer exists.
 */
export const STAGE_RESULTS_SHARDS = 8;

export function stageResultsQueue(applicationId: number): string {
  return `{stage-results-${applicationId % STAGE_RESULTS_SHARDS}}`;
}

/** Every results queue, the 0.5 one (no hash tag) last: see `legacy` in StageResultsConsumerOptions. */
export function stageResultsQueues(options: { legacy: boolean }): string[] {
  const shards = Array.from({ length: STAGE_RESULTS_SHARDS }, (_, shard) =>
    stageResultsQueue(shard),
  );
  return options.legacy ? [...shards, LEGACY_STAGE_RESULTS_QUEUE] : shards;
}

/** The one results queue of 0.5 and before, which gateways of an older release still publish to during an upgrade. */
export const LEGACY_STAGE_RESULTS_QUEUE = 'stage-results';

export interface StageResultMessage {
  applicationId: number;
  stageId: number;
  /** The stage's pipeline, as the worker-gateway read it (messages queued by older gateways lack it). */
  pipelineId?: number;
  workerId: string;
  receivedAt: string;
  result: StageResultSubmit;
  /** W3C traceparent of the worker-gateway's result span: the apply span is its child. */
  traceparent?: string;
}

export const stageResultMessageSchema = {
  $id: 'StageResultMessage',
  type: 'object',
  required: ['applicationId', 'stageId', 'workerId', 'receivedAt', 'result'],
  properties: {
    applicationId: { type: 'integer', minimum: 1 },
    stageId: { type: 'integer', minimum: 1 },
    pipelineId: { type: 'integer', minimum: 1 },
    workerId: { type: 'string', minLength: 1 },
    receivedAt: { type: 'string' },
    traceparent: { type: 'string', maxLength: 256 },
    result: {
      type: 'object',
      required: ['stageId', 'executionId', 'attempt'],
      properties: {
        stageId: { type: 'integer', minimum: 1 },
        executionId: { type: 'string', minLength: 1 },
        attempt: { type: 'integer', minimum: 1 },
      },
    },
  },
} as const;

const validateStageResultMessage = compile<StageResultMessage>(stageResultMessageSchema, {
  normalise: false,
});

/**
 * A result that got 202 is never dropped because PostgreSQL or Redis was away for a while (an
 * outage, a long restart): those failures wait it out without spending an attempt. Any other
 * failure spends one, and after the consumer's `maxAttempts` (RESULTS_MAX_ATTEMPTS) the job is
 * dead-lettered: it stays in this queue's failed set, with its reason, until an operator replays or
 * drops it (decision 0119). `attempts` is left unbounded here because the consumer decides, and
 * jobs queued before that still carry it.
 */
const RETRY_MAX_DELAY_MS = 60_000;
const OUTAGE_MAX_DELAY_MS = 30_000;
const JOB_OPTIONS = {
  attempts: Number.MAX_SAFE_INTEGER,
  backoff: { type: 'capped-exponential', delay: 1000 },
  removeOnComplete: true,
  removeOnFail: false,
} as const;

/** Failed applications of one result before it is dead-lettered, unless the consumer says otherwise. */
export const RESULTS_MAX_ATTEMPTS_DEFAULT = 8;

/**
 * The delay before retry `attemptsMade` of a result whose application failed: 1 s doubling, at
 * most RETRY_MAX_DELAY_MS — with 8 attempts, about two minutes from the first failure to the dead
 * letter, long enough for whatever made one transaction fail to have passed.
 */
export function resultRetryDelay(attemptsMade: number): number {
  return Math.min(RETRY_MAX_DELAY_MS, 1000 * 2 ** Math.min(20, Math.max(0, attemptsMade - 1)));
}

/**
 * The result job of one execution attempt posted by one worker: a repeated post of the same result
 * while one is queued adds nothing, and a result another worker posted for the same execution and
 * attempt (which the engine discards, decision 0117) never takes the holder's id. The worker is a
 * hash of its id, since BullMQ refuses `:` in custom ids. Without a worker: the id results were
 * queued under before (still looked for, see `waiting`).
 */
export function resultJobId(executionId: string, attempt: number, workerId?: string): string {
  if (workerId === undefined) return `r-${executionId}-${attempt}`;
  return `r-${executionId}-${attempt}-${createHash('sha256').update(workerId).digest('hex').slice(0, 12)}`;
}

export interface StageResultsProducer {
  /**
   * Resolves once Redis confirmed the job and, with `minReplicasAck`, once that many replicas hold
   * it (else ReplicasNotConfirmed): only then may the gateway answer 202.
   */
  publish(message: StageResultMessage): Promise<void>;
  /**
   * The executions among `results` whose result for that attempt waits on the queue to be applied
   * (or is being applied): the receipt of a 202 that the sweeper honours (decision 0062).
   */
  waiting(
    results: readonly {
      applicationId: number;
      executionId: string;
      attempt: number;
      workerId: string | null;
    }[],
  ): Promise<Set<string>>;
  close(): Promise<void>;
}

export interface StageResultsProducerOptions {
  /** Replicas that must hold a result before publish resolves (REDIS_MIN_REPLICAS_ACK); 0: the primary's reply is enough. */
  minReplicasAck?: number;
  replicaAckTimeoutMs?: number;
}

/**
 * Results committed together as one job (decision 0125): those that arrive at one gateway for one
 * shard while the previous commit to it is under way. A lone result is still its own job under
 * `resultJobId`, as before; a group is one add, one WAIT and one consumer pass for all of them.
 */
export interface StageResultGroup {
  results: StageResultMessage[];
}

export const RESULT_GROUP_JOB = 'results';
/** The most results, and about the most bytes, one group carries. */
const GROUP_MAX_RESULTS = 64;
const GROUP_MAX_BYTES = 1 << 20;

/**
 * The hash, in the shard's own slot, from each grouped result's `resultJobId` to its group's job
 * id: the sweeper's receipt of a grouped result (decision 0062), removed by the consumer once the
 * group is applied. A field whose group is gone (applied, or never added) reads as no receipt.
 */
export function resultReceiptsKey(queue: { toKey(suffix: string): string }): string {
  return queue.toKey('receipts');
}

/** About the bytes of a result message: its strings are nearly all of it. */
function resultMessageBytes(m: StageResultMessage): number {
  const r = m.result;
  let bytes = 512 + (r.result?.length ?? 0);
  for (const log of r.logs ?? []) bytes += 64 + log.message.length;
  for (const item of r.contextItems ?? [])
    bytes += 64 + item.key.length + (item.value?.length ?? 0);
  for (const stage of r.appendedStages ?? []) bytes += 256 + JSON.stringify(stage).length;
  return bytes;
}

interface Pending {
  message: StageResultMessage;
  bytes: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export function createStageResultsProducer(
  connection: RedisConnection,
  prefix: string,
  options: StageResultsProducerOptions = {},
): StageResultsProducer {
  const shards = new Map<string, ReturnType<typeof reopeningQueue<Queue>>>();
  const queueOf = (name: string) => {
    let queue = shards.get(name);
    if (!queue) {
      queue = reopeningQueue(
        () => new Queue(name, { connection, prefix, defaultJobOptions: JOB_OPTIONS }),
      );
      shards.set(name, queue);
    }
    return queue.get();
  };
  const minReplicas = options.minReplicasAck ?? 0;
  const replicaTimeout = options.replicaAckTimeoutMs ?? 1000;

  const commit = async (name: string, messages: StageResultMessage[]) => {
    const queue = queueOf(name);
    const [only] = messages;
    if (messages.length === 1 && only) {
      const jobId = resultJobId(only.result.executionId, only.result.attempt, only.workerId);
      // A repeated post finds its job there already and waits for the replicas all the same.
      await queue.add('result', only, { jobId });
      await confirmReplicated(connection, queue.toKey(jobId), minReplicas, replicaTimeout);
      return;
    }
    const groupId = `g-${randomUUID()}`;
    const receipts = resultReceiptsKey(queue);
    const fields = messages.map((m) =>
      resultJobId(m.result.executionId, m.result.attempt, m.workerId),
    );
    try {
      await Promise.all([
        connection.hset(receipts, Object.fromEntries(fields.map((f) => [f, groupId]))),
        queue.add(RESULT_GROUP_JOB, { results: messages } satisfies StageResultGroup, {
          jobId: groupId,
        }),
      ]);
    } catch (err) {
      // Receipts of a group that may not exist would only read as "no receipt"; drop them anyway.
      void connection.hdel(receipts, ...fields).catch(() => undefined);
      throw err;
    }
    await confirmReplicated(connection, queue.toKey(groupId), minReplicas, replicaTimeout);
  };

  // Per shard: the results waiting for the commit under way to finish. One commit at a time per
  // shard, so a busy gateway's results ride together and an idle one's go at once (group commit).
  const pendingOf = new Map<string, { queued: Pending[]; committing: boolean }>();
  const drain = async (name: string, shard: { queued: Pending[]; committing: boolean }) => {
    shard.committing = true;
    try {
      while (shard.queued.length > 0) {
        let bytes = 0;
        let n = 0;
        while (
          n < shard.queued.length &&
          n < GROUP_MAX_RESULTS &&
          (n === 0 || bytes + shard.queued[n]!.bytes <= GROUP_MAX_BYTES)
        ) {
          bytes += shard.queued[n]!.bytes;
          n += 1;
        }
        const group = shard.queued.splice(0, n);
        try {
          await commit(
            name,
            group.map((p) => p.message),
          );
          for (const p of group) p.resolve();
        } catch (err) {
          // Those queued behind a failed commit fail with it rather than each wait out its own
          // command timeout in turn (a frozen Redis would answer the k-th group after k timeouts).
          for (const p of [...group, ...shard.queued.splice(0)]) p.reject(err);
        }
      }
    } finally {
      shard.committing = false;
      if (shard.queued.length === 0) pendingOf.delete(name);
    }
  };

  return {
    publish(message) {
      // BullMQ sets a queue up on its first use and waits for Redis to do so: a gateway whose first
      // result comes during an outage would hold it until Redis is back. Fail fast, as producers do.
      if (connection.status !== 'ready')
        return Promise.reject(new Error(`Redis connection ${connection.status}`));
      const name = stageResultsQueue(message.applicationId);
      let shard = pendingOf.get(name);
      if (!shard) pendingOf.set(name, (shard = { queued: [], committing: false }));
      const queued = shard;
      return new Promise<void>((resolve, reject) => {
        queued.queued.push({ message, bytes: resultMessageBytes(message), resolve, reject });
        if (!queued.committing) void drain(name, queued);
      });
    },
    async waiting(results) {
      const found = new Set<string>();
      if (results.length === 0) return found;
      // The lease holder's job, and a job queued under the id without a worker (before decision 0117);
      // in the application's shard, and in the 0.5 queue where a result queued before the upgrade waits.
      const candidates = results.flatMap((r) =>
        [
          stageResultsQueue(r.applicationId),
          ...(isCluster(connection) ? [] : [LEGACY_STAGE_RESULTS_QUEUE]),
        ].flatMap((queue) => [
          ...(r.workerId === null
            ? []
            : [
                {
                  queue,
                  executionId: r.executionId,
                  id: resultJobId(r.executionId, r.attempt, r.workerId),
                },
              ]),
          { queue, executionId: r.executionId, id: resultJobId(r.executionId, r.attempt) },
        ]),
      );
      const byQueue = new Map<string, typeof candidates>();
      for (const c of candidates) byQueue.set(c.queue, [...(byQueue.get(c.queue) ?? []), c]);
      // One pipeline per queue: each queue is its own cluster slot.
      await Promise.all(
        [...byQueue].map(async ([name, list]) => {
          const queue = queueOf(name);
          const pipeline = connection.pipeline();
          for (const c of list) pipeline.exists(queue.toKey(c.id));
          // A grouped result has no job of its own: its receipt names its group's (decision 0125).
          pipeline.hmget(resultReceiptsKey(queue), ...list.map((c) => c.id));
          const answers = (await pipeline.exec()) ?? [];
          // Redis away is not "no result waits": the caller must not expire what it cannot check (decision 0120).
          const failed = answers.find(([err]) => err)?.[0];
          if (failed) throw failed;
          const groups = (answers[list.length]?.[1] ?? []) as (string | null)[];
          const pending = async (id: string) => {
            const state = await queue.getJobState(id);
            return state !== 'failed' && state !== 'completed' && state !== 'unknown';
          };
          // A job that exists may still have failed for good (malformed): only pending ones count.
          await Promise.all(
            list.map(async (c, i) => {
              const group = groups[i];
              if (answers[i]?.[1] !== 0 && (await pending(c.id))) found.add(c.executionId);
              else if (group && (await pending(group))) found.add(c.executionId);
            }),
          );
        }),
      );
      return found;
    },
    close: async () => {
      await Promise.all([...shards.values()].map((q) => q.close()));
    },
  };
}

/** How a failed application counts (the consumer classifies; this queue only acts on it). */
export type ResultFailureClass = 'outage' | 'contention' | 'error';

/** Why a result was dead-lettered: its message was malformed, or its attempts ran out on this class of failure. */
export const DEAD_LETTER_REASONS = [
  'invalid_message',
  'contention',
  'error',
] as const satisfies readonly ('invalid_message' | Exclude<ResultFailureClass, 'outage'>)[];
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

/**
 * The error a result job fails for good with: BullMQ moves it to the failed set at once (it is an
 * UnrecoverableError), where it stays as the dead letter with this message as its failedReason.
 */
export class ResultDeadLettered extends UnrecoverableError {
  constructor(
    readonly reason: DeadLetterReason,
    message: string,
  ) {
    super(message);
  }
}

export interface StageResultsConsumerOptions {
  concurrency?: number;
  /** Failed applications (outages aside) before the result is dead-lettered: RESULTS_MAX_ATTEMPTS. */
  maxAttempts?: number;
  /** Every failure spends an attempt unless this calls it an outage. */
  classify?: (err: unknown) => ResultFailureClass;
  /** The dead letter's text for the last failure: no secrets (it is shown to operators). */
  describe?: (err: unknown, message: StageResultMessage) => string;
  /** The delay before retry `attemptsMade` of a failed application (tests shorten it). */
  retryDelay?: (attemptsMade: number) => number;
  /** Called once when an outage starts (the first outage failure since an application succeeded). */
  onOutage?: (err: unknown) => void;
  /**
   * Also consume the 0.5 queue (`stage-results`, no hash tag), which gateways of the previous release
   * publish to during a rolling upgrade. Never on a cluster: its keys span slots.
   */
  legacy?: boolean;
}

/** One BullMQ worker per results queue (every shard, and the 0.5 queue unless on a cluster). */
export function createStageResultsConsumer(
  connection: RedisConnection,
  prefix: string,
  apply: (message: StageResultMessage) => Promise<void>,
  options: StageResultsConsumerOptions = {},
): Worker[] {
  const maxAttempts = options.maxAttempts ?? RESULTS_MAX_ATTEMPTS_DEFAULT;
  const classify = options.classify ?? (() => 'error' as const);
  const describe =
    options.describe ??
    ((err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 500));
  // During an outage every result waits as long as the outage has lasted so far (so the waits double,
  // whatever the concurrency), between 200 ms and OUTAGE_MAX_DELAY_MS.
  let outageSince: number | undefined;
  const waitOutOutage = async (
    job: Job,
    token: string | undefined,
    err: unknown,
  ): Promise<never> => {
    const now = Date.now();
    if (outageSince === undefined) {
      outageSince = now;
      options.onOutage?.(err);
    }
    // Moved to delayed without counting an attempt: BullMQ leaves attemptsMade alone.
    await job.moveToDelayed(
      now + Math.min(OUTAGE_MAX_DELAY_MS, Math.max(200, now - outageSince)),
      token,
    );
    throw new DelayedError();
  };
  const processOne = async (job: Job, token?: string) => {
    const checked = validateStageResultMessage(job.data);
    if (!checked.ok)
      throw new ResultDeadLettered(
        'invalid_message',
        `invalid stage result message: ${JSON.stringify(checked.errors)}`,
      );
    try {
      await apply(checked.value);
      outageSince = undefined;
    } catch (err) {
      const failure = classify(err);
      if (failure === 'outage') return waitOutOutage(job, token, err);
      const attempts = job.attemptsMade + 1;
      if (attempts >= maxAttempts) {
        throw new ResultDeadLettered(
          failure,
          `${failure} after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${describe(err, checked.value)}`,
        );
      }
      throw err;
    }
  };
  /**
   * A group (decision 0125) is applied result by result (the applier batches them again). An outage
   * delays the whole group, as it would each result; a result that fails otherwise, or is malformed,
   * leaves the group as a job of its own, where the single-result rules (retries, dead letter) take
   * it. Its id is fixed by the group, so a group applied twice (its consumer died) splits it once.
   */
  const splitQueues = new Map<string, Queue>();
  const processGroup = async (job: Job, token?: string) => {
    const group = job.data as Partial<StageResultGroup> | undefined;
    const items: unknown[] = Array.isArray(group?.results) ? group.results : [];
    const outcomes = await Promise.all(
      items.map(async (item, index) => {
        const checked = validateStageResultMessage(item);
        const message = checked.ok ? checked.value : undefined;
        const id = message
          ? resultJobId(message.result.executionId, message.result.attempt, message.workerId)
          : `${String(job.id)}-${index}`;
        if (!message)
          return { item, id, message, failure: 'error' as ResultFailureClass, err: undefined };
        try {
          await apply(message);
          return { item, id, message, failure: null };
        } catch (err) {
          return { item, id, message, failure: classify(err), err };
        }
      }),
    );
    if (outcomes.some((o) => o.failure === null)) outageSince = undefined;
    const outage = outcomes.find((o) => o.failure === 'outage');
    if (outage) return waitOutOutage(job, token, outage.err);
    let queue = splitQueues.get(job.queueName);
    if (!queue) {
      queue = new Queue(job.queueName, { connection, prefix, defaultJobOptions: JOB_OPTIONS });
      // Connection errors reach the worker's own listener; this queue's copies are dropped.
      queue.on('error', () => undefined);
      splitQueues.set(job.queueName, queue);
    }
    const failed = outcomes.filter((o) => o.failure !== null);
    if (failed.length > 0)
      await queue.addBulk(
        failed.map((o) => ({ name: 'result', data: o.item, opts: { jobId: o.id } })),
      );
    const receipts = outcomes.filter((o) => o.message).map((o) => o.id);
    if (receipts.length > 0) await connection.hdel(resultReceiptsKey(queue), ...receipts);
  };
  const process = (job: Job, token?: string) =>
    job.name === RESULT_GROUP_JOB ? processGroup(job, token) : processOne(job, token);
  return stageResultsQueues({
    legacy: options.legacy ?? !isCluster(connection),
  }).map((name) => {
    const worker = new Worker(name, process, {
      connection,
      prefix,
      concurrency: options.concurrency ?? 64,
      // A consumer killed mid-batch (or cut from Redis) leaves its jobs active: their lock lapses
      // within 10 s and the stalled check returns them within 5 s more, as often as that happens.
      // Meanwhile the execution's receipt keeps the sweeper from expiring it (decision 0062).
      maxStalledCount: Number.MAX_SAFE_INTEGER,
      lockDuration: 10_000,
      stalledInterval: 5_000,
      settings: { backoffStrategy: options.retryDelay ?? resultRetryDelay },
    });
    worker.on(
      'closed',
      () =>
        void splitQueues
          .get(name)
          ?.close()
          .catch(() => undefined),
    );
    return worker;
  });
}
