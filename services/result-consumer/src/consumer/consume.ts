import { DEAD_LETTER_REASONS, ResultDeadLettered, createStageResultsConsumer } from '@po/queues';
import { resultsDeadLettered, type Logger } from '@po/telemetry';
import type { ResultApplier } from './apply-result.js';
import { classifyFailure, describeFailure, rememberResultSecrets } from './failures.js';

export interface ResultConsumerOptions {
  /** Results held at once per results queue (RESULT_CONSUMER_CONCURRENCY; the queues are the application shards). */
  concurrency: number;
  /** Failed applications before a result is dead-lettered (RESULTS_MAX_ATTEMPTS). */
  maxAttempts: number;
  /** The delay before retry `attemptsMade` (tests shorten it; @po/queues' resultRetryDelay otherwise). */
  retryDelay?: (attemptsMade: number) => number;
}

/**
 * Takes results from the results queues (every application shard) and applies them. A failure is retried with backoff; an
 * outage without spending an attempt; a result whose attempts ran out is dead-lettered, counted and
 * logged, and waits in the queue's failed set for an operator (decision 0119).
 */
export function consumeResults(
  connection: Parameters<typeof createStageResultsConsumer>[0],
  prefix: string,
  applier: ResultApplier,
  logger: Logger,
  options: ResultConsumerOptions,
) {
  // Every reason served from the start, so increase() sees the first dead letter of each.
  for (const reason of DEAD_LETTER_REASONS) resultsDeadLettered().inc({ reason }, 0);
  const consumers = createStageResultsConsumer(connection, prefix, async (message) => void (await applier.apply(message)), {
    ...options,
    classify: classifyFailure,
    describe: describeFailure,
    onOutage: (err) => logger.warn({ err }, 'PostgreSQL or Redis unavailable: results wait for it without spending attempts'),
  });
  const onFailed = (job: { id?: string; data?: unknown; attemptsMade?: number } | undefined, err: Error) => {
    // The error may quote what the result carried: its secrets are censored from the line.
    rememberResultSecrets(job?.data);
    if (err instanceof ResultDeadLettered) {
      resultsDeadLettered().inc({ reason: err.reason });
      logger.error(
        { jobId: job?.id, reason: err.reason, attemptsMade: job?.attemptsMade, failedReason: err.message },
        'result dead-lettered; `npm run admin -- results dead-letters list` shows it',
      );
      return;
    }
    logger.warn({ err, jobId: job?.id, attemptsMade: job?.attemptsMade }, 'result application failed; retried with backoff');
  };
  for (const consumer of consumers) consumer.on('failed', onFailed);
  return consumers;
}
