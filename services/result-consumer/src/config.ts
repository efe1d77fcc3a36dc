import { commonConfig, envReader, type CommonConfig } from '@po/config';
import { RESULTS_MAX_ATTEMPTS_DEFAULT } from '@po/queues';

export interface ResultConsumerConfig extends CommonConfig {
  /** Results held at once (BullMQ worker concurrency): what a batch can gather. */
  concurrency: number;
  /** Results applied in one transaction at most. */
  batchSize: number;
  /** Batches written at once. */
  batchConcurrency: number;
  maxActiveStages: number;
  /** Failed applications of one result (outages aside) before it is dead-lettered (decision 0119). */
  resultsMaxAttempts: number;
}

export function parseConfig(env: Record<string, string | undefined>): ResultConsumerConfig {
  const read = envReader(env);
  const config = {
    ...commonConfig(read, 8084),
    concurrency: read.int('RESULT_CONSUMER_CONCURRENCY', 64, { min: 1, max: 1024 }),
    batchSize: read.int('RESULT_CONSUMER_BATCH', 64, { min: 1, max: 500 }),
    batchConcurrency: read.int('RESULT_CONSUMER_BATCH_CONCURRENCY', 1, { min: 1, max: 16 }),
    maxActiveStages: read.int('APP_MAX_ACTIVE_STAGES', 0, { min: 0 }),
    resultsMaxAttempts: read.int('RESULTS_MAX_ATTEMPTS', RESULTS_MAX_ATTEMPTS_DEFAULT, { min: 1, max: 100 }),
  };
  read.done();
  return config;
}
