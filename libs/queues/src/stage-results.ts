import { createHash } from 'node:crypto';
import { UnrecoverableError } from 'bullmq';
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

export const validateStageResultMessage = compile<StageResultMessage>(stageResultMessageSchema, {
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
export const RESULT_JOB_OPTIONS = {
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

/**
 * Results committed together as one job (decision 0125): those that arrive at one gateway for one
 * shard while the previous commit to it is under way. A lone result is still its own job under
 * `resultJobId`, as before; a group is one add, one WAIT and one consumer pass for all of them.
 */
export interface StageResultGroup {
  results: StageResultMessage[];
}

export const RESULT_GROUP_JOB = 'results';
/**
 * The hash, in the shard's own slot, from each grouped result's `resultJobId` to its group's job
 * id: the sweeper's receipt of a grouped result (decision 0062), removed by the consumer once the
 * group is applied. A field whose group is gone (applied, or never added) reads as no receipt.
 */
export function resultReceiptsKey(queue: { toKey(suffix: string): string }): string {
  return queue.toKey('receipts');
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
