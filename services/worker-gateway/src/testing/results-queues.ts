import { Queue, type Job, type JobType } from 'bullmq';
import { stageResultsQueues, type RedisConnection } from '@po/queues';

/** Every results queue (the application shards) read as one, for tests that look at what the gateway queued. */
export interface ResultsQueues {
  getJobs(states: JobType[]): Promise<Job[]>;
  close(): Promise<void>;
}

export function openResultsQueues(connection: RedisConnection, prefix: string): ResultsQueues {
  const queues = stageResultsQueues({ legacy: false }).map((name) => new Queue(name, { connection, prefix }));
  return {
    getJobs: async (states) => (await Promise.all(queues.map((q) => q.getJobs(states)))).flat(),
    close: async () => void (await Promise.all(queues.map((q) => q.close()))),
  };
}
