import { DelayedError, Queue, Worker, type Job, type Processor, type WorkerOptions } from 'bullmq';
import { isCluster, type RedisConnection } from './connection.js';
import {
  RESULT_GROUP_JOB,
  RESULT_JOB_OPTIONS,
  RESULTS_MAX_ATTEMPTS_DEFAULT,
  ResultDeadLettered,
  resultJobId,
  resultReceiptsKey,
  resultRetryDelay,
  stageResultsQueues,
  validateStageResultMessage,
  type ResultFailureClass,
  type StageResultGroup,
  type StageResultMessage,
} from './stage-results.js';

/** The longest an outage makes a result wait before it is tried again. */
const OUTAGE_MAX_DELAY_MS = 30_000;

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

/**
 * BullMQ's Worker asks for another job (its `moveToActive` script) after each one it is woken for,
 * and that script finding the queue empty is how it learns to block again: under a steady trickle of
 * groups that empty call cost Redis as much as the group's own fetch. Two counts answer the same
 * question for a fraction of the work: nothing waiting and nothing delayed (a due delayed job needs
 * the script, which promotes it) means drained. Results use neither priorities nor pauses, the
 * script's other sources. A job added after the counts leaves BullMQ's marker, which ends the
 * worker's next blocking wait at once.
 */
class ResultsWorker extends Worker {
  constructor(
    name: string,
    processor: Processor,
    opts: WorkerOptions,
    private readonly redis: RedisConnection,
  ) {
    super(name, processor, opts);
  }

  protected override async moveToActive(token: string, name?: string): Promise<Job> {
    const answers = await this.redis.pipeline().llen(this.toKey('wait')).zcard(this.toKey('delayed')).exec();
    // Unsure (an error) is not empty: the script decides.
    const empty = answers?.length === 2 && answers.every(([err, count]) => err === null && count === 0);
    if (empty) return this.nextJobFromJobData();
    return super.moveToActive(token, name);
  }
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
      queue = new Queue(job.queueName, {
        connection,
        prefix,
        defaultJobOptions: RESULT_JOB_OPTIONS,
      });
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
    const worker = new ResultsWorker(name, process, {
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
    }, connection);
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
