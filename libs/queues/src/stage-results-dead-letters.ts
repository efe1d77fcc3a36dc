import { Queue, type Job } from 'bullmq';
import { isCluster, reopeningQueue, type RedisConnection } from './connection.js';
import { stageResultsQueues } from './stage-results.js';

/**
 * One dead-lettered result as an operator sees it: ids, counts and the failure, never the result
 * itself (its output, logs and context values stay in the job, out of this view).
 */
export interface ResultDeadLetter {
  jobId: string;
  applicationId: number | null;
  pipelineId: number | null;
  stageId: number | null;
  executionId: string | null;
  /** The execution attempt the result reported. */
  attempt: number | null;
  failedReason: string;
  failedAt: string | null;
  /** Applications tried and failed (outages not counted). */
  attemptsMade: number;
}

/** The dead letters of the results queues: their failed sets (decision 0119), every shard together. */
export interface StageResultDeadLetters {
  count(): Promise<number>;
  /** The newest `limit` dead letters, newest first. */
  list(limit: number): Promise<ResultDeadLetter[]>;
  /**
   * Queues a dead letter to be applied again, its attempts reset (BullMQ's retry of a failed job:
   * same id and data). False when no dead letter has that id.
   */
  replay(jobId: string): Promise<boolean>;
  /** Replays every dead letter there is now (not those that fail again meanwhile); how many. */
  replayAll(): Promise<number>;
  /** Deletes a dead letter for good. False when no dead letter has that id. */
  drop(jobId: string): Promise<boolean>;
  close(): Promise<void>;
}

const integer = (value: unknown): number | null => (Number.isSafeInteger(value) ? (value as number) : null);
const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

function view(job: Job): ResultDeadLetter {
  // A dead letter may be a malformed message: read each field for what it is, and nothing else.
  const data = (typeof job.data === 'object' && job.data !== null ? job.data : {}) as Record<string, unknown>;
  const result = (typeof data.result === 'object' && data.result !== null ? data.result : {}) as Record<string, unknown>;
  return {
    jobId: job.id ?? '',
    applicationId: integer(data.applicationId),
    pipelineId: integer(data.pipelineId),
    stageId: integer(data.stageId),
    executionId: text(result.executionId),
    attempt: integer(result.attempt),
    failedReason: job.failedReason ?? '',
    failedAt: job.finishedOn ? new Date(job.finishedOn).toISOString() : null,
    attemptsMade: job.attemptsMade,
  };
}

export function createStageResultDeadLetters(connection: RedisConnection, prefix: string): StageResultDeadLetters {
  // Remade after a failed setup: the result-consumer reads the count on every scrape, through outages.
  const queues = stageResultsQueues({ legacy: !isCluster(connection) }).map((name) => reopeningQueue(() => new Queue(name, { connection, prefix })));
  const all = () => queues.map((q) => q.get());
  // A result's job id names its execution, attempt and worker: it is in one shard at most.
  const failedJob = async (jobId: string): Promise<Job | undefined> => {
    for (const queue of all()) {
      const job = await queue.getJob(jobId);
      if (job && (await job.isFailed())) return job;
    }
    return undefined;
  };
  const replay = async (job: Job) => job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
  return {
    count: async () => (await Promise.all(all().map((q) => q.getFailedCount()))).reduce((a, b) => a + b, 0),
    async list(limit) {
      // Each shard's newest `limit`, then the newest of them all. A job removed between the read
      // of the set and of its hash comes back empty.
      const jobs = (await Promise.all(all().map((q) => q.getFailed(0, limit - 1)))).flat();
      return jobs
        .filter((job): job is Job => Boolean(job))
        .sort((a, b) => (b.finishedOn ?? 0) - (a.finishedOn ?? 0))
        .slice(0, limit)
        .map(view);
    },
    async replay(jobId) {
      const job = await failedJob(jobId);
      if (!job) return false;
      await replay(job);
      return true;
    },
    async replayAll() {
      // The ids first: a replayed result that fails for good at once (a malformed message) comes
      // back into the set it is being read from.
      let replayed = 0;
      for (const queue of all()) {
        const ids = await queue.getRanges(['failed'], 0, -1);
        for (const id of ids) {
          const job = await queue.getJob(id);
          if (!job || !(await job.isFailed())) continue;
          await replay(job);
          replayed += 1;
        }
      }
      return replayed;
    },
    async drop(jobId) {
      const job = await failedJob(jobId);
      if (!job) return false;
      await job.remove();
      return true;
    },
    close: async () => {
      await Promise.all(queues.map((q) => q.close()));
    },
  };
}
