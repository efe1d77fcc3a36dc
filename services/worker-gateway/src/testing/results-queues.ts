import { Queue, type JobType } from 'bullmq';
import { RESULT_GROUP_JOB, stageResultsQueues, type RedisConnection, type StageResultGroup, type StageResultMessage } from '@po/queues';

/** A queued result: its own job, or one result of a group job (decision 0125). */
export interface QueuedResult {
  jobId: string | undefined;
  data: StageResultMessage;
}

/** Every results queue (the application shards) read as one, for tests that look at what the gateway queued. */
export interface ResultsQueues {
  getJobs(states: JobType[]): Promise<QueuedResult[]>;
  close(): Promise<void>;
}

export function openResultsQueues(connection: RedisConnection, prefix: string): ResultsQueues {
  const queues = stageResultsQueues({ legacy: false }).map((name) => new Queue(name, { connection, prefix }));
  return {
    getJobs: async (states) =>
      (await Promise.all(queues.map((q) => q.getJobs(states))))
        .flat()
        .flatMap((job) =>
          job.name === RESULT_GROUP_JOB
            ? (job.data as StageResultGroup).results.map((data) => ({ jobId: job.id, data }))
            : [{ jobId: job.id, data: job.data as StageResultMessage }],
        ),
    close: async () => void (await Promise.all(queues.map((q) => q.close()))),
  };
}
