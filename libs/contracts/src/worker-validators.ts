// Compiled validators of the worker protocol's bodies (schemas in workers.ts).
import { limits } from './limits.js';
import { compile } from './validate.js';
import type { Validator } from './validate.js';
import {
  ackJobRequestSchema,
  bootstrapRequestSchema,
  eventsSchema,
  heartbeatRequestSchema,
  pullJobRequestSchema,
  shutdownRequestSchema,
  stageLeaseRequestSchema,
  stageNextMessageSchema,
  stageResultSubmitSchema,
  workerEventsRequestSchema,
} from './workers.js';
import type {
  AckJobRequest,
  BootstrapRequest,
  HeartbeatRequest,
  PullJobRequest,
  ShutdownRequest,
  StageLeaseRequest,
  StageNextMessage,
  StageResultSubmit,
  WorkerEventsRequest,
} from './workers.js';

export const validateBootstrap: Validator<BootstrapRequest> = compile(bootstrapRequestSchema);
export const validateHeartbeat: Validator<HeartbeatRequest> = compile(heartbeatRequestSchema);
export const validateShutdown: Validator<ShutdownRequest> = compile(shutdownRequestSchema);
export const validatePull: Validator<PullJobRequest> = compile(pullJobRequestSchema);
export const validateAck: Validator<AckJobRequest> = compile(ackJobRequestSchema);
export const validateLease: Validator<StageLeaseRequest> = compile(stageLeaseRequestSchema);
export const validateResultSubmit: Validator<StageResultSubmit> = compile(stageResultSubmitSchema);
/** Validates a StageNextMessage exactly as received (queue consumers; nothing is dropped). */
export const validateStageNextMessage: Validator<StageNextMessage> = compile(
  stageNextMessageSchema,
  { normalise: false },
);

const eventsValidators = new Map<number, Validator<WorkerEventsRequest>>([
  [limits.workerEventsMaxBatchDefault, compile(workerEventsRequestSchema)],
]);

/**
 * The events validator for a configured WORKER_EVENTS_MAX_BATCH (compiled once per value).
 * An empty batch or one over `maxBatch` is an error at `/events`; item errors point at the item.
 */
export function eventsRequestValidator(maxBatch: number): Validator<WorkerEventsRequest> {
  if (!Number.isSafeInteger(maxBatch) || maxBatch < 1) {
    throw new RangeError(`maxBatch must be a positive integer, got ${String(maxBatch)}`);
  }
  let validator = eventsValidators.get(maxBatch);
  if (validator === undefined) {
    validator = compile<WorkerEventsRequest>(eventsSchema(maxBatch, false));
    eventsValidators.set(maxBatch, validator);
  }
  return validator;
}
