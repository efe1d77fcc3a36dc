import { ErrorCode, type Job } from 'bullmq';
import { validateStageNextMessage } from '@po/contracts';
import type { StageNextBatchJob, StageNextJob } from './stage-next.js';

/**
 * The BullMQ job a fetched message came in, with the lock token that owns it: the message's own,
 * or a batch job of several (`batch` set), completed once every message of it is settled.
 */
export interface Carrier {
  job: Job<StageNextJob | StageNextBatchJob>;
  lockToken: string;
  batch?: {
    /** Every execution id it carries: its `batched` fields, removed when it completes. */
    ids: string[];
    /** Messages neither acked, requeued nor dropped yet. */
    unsettled: number;
    /** Acked messages whose `batched` fields are still to be removed (see StageNextFetcher.settleMessage). */
    forget?: string[];
    forgetTimer?: NodeJS.Timeout;
  };
}

/** A message fetched for one HTTP delivery. */
export interface FetchedMessage {
  /** The executionId: the delivery's messageId. */
  id: string;
  data: StageNextJob;
  /** The BullMQ lock token of the job holding it. */
  lockToken: string;
  /** The worker-facing queue name it was fetched from. */
  queue: string;
  /** About the byte length of its stored job data (see stageNextMessageBytes). */
  bytes: number;
  /** When the job holding it was fetched (epoch ms, taken before the call): its BullMQ lock runs from about then. */
  fetchedAt: number;
  /** The fetcher's own: the job that holds it. */
  readonly carrier: Carrier;
}

const UUID = /^[\da-f]{8}-[\da-f]{4}-[\da-f]{4}-[\da-f]{4}-[\da-f]{12}$/i;

/** A §5.1 payload, or one whose context is named by a snapshot id (decision 0121). */
export function isStageNextJob(data: StageNextJob): boolean {
  if (typeof data !== 'object' || data === null) return false;
  const { contextSnapshotId, ...message } = data;
  if (
    contextSnapshotId !== undefined &&
    !(typeof contextSnapshotId === 'string' && UUID.test(contextSnapshotId))
  )
    return false;
  return validateStageNextMessage(message).ok;
}

/** A BullMQ error that means this process no longer owns the job: its lock lapsed and the stalled check took it back. */
export const lostLock = (err: unknown): boolean =>
  [
    ErrorCode.JobNotExist,
    ErrorCode.JobLockNotExist,
    ErrorCode.JobNotInState,
    ErrorCode.JobLockMismatch,
  ].includes((err as { code?: unknown }).code as ErrorCode);

/**
 * Settles one message of its job: true when that was the last one, and the job is to be completed
 * now (a single at once, a batch once all its messages are settled).
 */
export function settle(message: FetchedMessage): boolean {
  const batch = message.carrier.batch;
  if (!batch) return true;
  batch.unsettled -= 1;
  return batch.unsettled === 0;
}

/** Undoes `settle` when completing the job failed: the message is held again. */
export function unsettle(message: FetchedMessage): void {
  if (message.carrier.batch) message.carrier.batch.unsettled += 1;
}
