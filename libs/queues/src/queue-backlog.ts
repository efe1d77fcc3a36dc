import { Queue } from 'bullmq';
import { dropIfSetupFails, type RedisConnection } from './connection.js';
import { PIPELINE_EVENTS_QUEUE } from './pipeline-events.js';
import { STAGE_RESULTS_SHARDS, stageResultsQueue } from './stage-results.js';

/** Jobs of one BullMQ queue by state. */
export interface QueueJobCounts {
  /** Jobs no consumer has taken yet (BullMQ wait and prioritized). */
  waiting: number;
  /** Jobs a consumer holds and has not finished. */
  active: number;
  /** Jobs waiting for their time: retries after a failure, delayed wake-ups. */
  delayed: number;
}

export interface BacklogSample {
  /** One entry per results shard `{stage-results-K}`, K from 0 to STAGE_RESULTS_SHARDS - 1. */
  resultShards: (QueueJobCounts & { shard: number })[];
  pipelineEvents: QueueJobCounts;
}

export interface BacklogStats {
  /** Reads the job counts of the results shards and the pipeline-events queue. */
  read(): Promise<BacklogSample>;
  close(): Promise<void>;
}

/** BullMQ's counts as the three states the gauges serve. */
export function toJobCounts(counts: Record<string, number | undefined>): QueueJobCounts {
  return {
    waiting: (counts.wait ?? 0) + (counts.prioritized ?? 0),
    active: counts.active ?? 0,
    delayed: counts.delayed ?? 0,
  };
}

/**
 * Backlog of the queues between the services, for the gauges read on scrape: the results shards
 * (the result-consumer's input) and pipeline-events (the pipeline-service's). Unlike StageNext
 * queues, these are a fixed set of nine, so every one is read on every scrape: nine BullMQ
 * `getJobCounts` calls, each on one queue's keys (one cluster slot). A results group job counts as
 * one job however many results it carries (decision 0125).
 */
export function createBacklogStats(connection: RedisConnection, prefix: string): BacklogStats {
  // Opened lazily and kept: a Queue per name costs nothing on Redis until it is asked something.
  const queues = new Map<string, Queue>();
  const queue = (name: string) => {
    const open = queues.get(name);
    if (open) return open;
    const made: Queue = dropIfSetupFails(new Queue(name, { connection, prefix }), () => {
      if (queues.get(name) === made) queues.delete(name);
    });
    queues.set(name, made);
    return made;
  };
  const counts = async (name: string) => toJobCounts(await queue(name).getJobCounts('wait', 'prioritized', 'active', 'delayed'));

  return {
    async read() {
      const shards = Array.from({ length: STAGE_RESULTS_SHARDS }, (_, shard) => shard);
      const [resultShards, pipelineEvents] = await Promise.all([
        Promise.all(shards.map(async (shard) => ({ shard, ...(await counts(stageResultsQueue(shard))) }))),
        counts(PIPELINE_EVENTS_QUEUE),
      ]);
      return { resultShards, pipelineEvents };
    },
    async close() {
      const open = [...queues.values()];
      queues.clear();
      await Promise.all(open.map((q) => q.close()));
    },
  };
}
