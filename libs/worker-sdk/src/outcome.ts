// Turns what a handler returned or threw into the result body, within the protocol's limits.
import { isApprovalRequest } from './approval.js';
import { errorMessage } from './context.js';
import type { Collected } from './context.js';
import { StageError, StageTimeoutError, WorkerStoppingError } from './errors.js';
import { LIMITS } from './protocol.js';
import type { StageNextMessage, StageResultLog, StageResultSubmit } from './protocol.js';
import { nowIso, truncate } from './util.js';

export interface Outcome {
  isSuccess: boolean;
  isWaitingForApproval: boolean;
  result?: string;
  errorCode?: string;
  retryable?: boolean;
  /** Lines added after the handler's own (the failure message). */
  extraLogs: StageResultLog[];
}

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

function failure(code: string, message: string, retryable?: boolean): Outcome {
  const outcome: Outcome = {
    isSuccess: false,
    isWaitingForApproval: false,
    errorCode: code,
    extraLogs: [{ message: `${code}: ${message}`, logLevel: 'Error', created: nowIso() }],
  };
  if (retryable !== undefined) outcome.retryable = retryable;
  return outcome;
}

/** undefined and null → no result; a string as is; anything else JSON-serialised. */
function serialise(
  value: unknown,
): { ok: true; result: string | undefined } | { ok: false; why: string } {
  if (value === undefined || value === null) return { ok: true, result: undefined };
  if (typeof value === 'string') return { ok: true, result: value };
  try {
    return { ok: true, result: JSON.stringify(value) };
  } catch (err) {
    return { ok: false, why: errorMessage(err) };
  }
}

/** The outcome of a handler that returned `value`. */
export function fromReturn(value: unknown): Outcome {
  const approval = isApprovalRequest(value);
  const s = serialise(approval ? value.result : value);
  if (!s.ok)
    return failure('RESULT_NOT_SERIALIZABLE', `the handler's return value: ${s.why}`, false);
  if (s.result !== undefined && bytes(s.result) > LIMITS.resultBytes) {
    return failure(
      'RESULT_TOO_LARGE',
      `the result has ${bytes(s.result)} bytes; at most ${LIMITS.resultBytes} are allowed`,
      false,
    );
  }
  const outcome: Outcome = { isSuccess: true, isWaitingForApproval: approval, extraLogs: [] };
  if (s.result !== undefined) outcome.result = s.result;
  return outcome;
}

// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/g;

/** A code the server accepts: no control characters, at most 200 characters. */
export function cleanErrorCode(code: string): string {
  const cleaned = truncate(code.replace(CONTROL_CHARACTERS, '_'), LIMITS.errorCodeChars);
  return cleaned.trim() === '' ? 'HANDLER_ERROR' : cleaned;
}

/** The outcome of a handler that threw `err`, given why ctx.signal aborted (if it did). */
export function fromThrow(err: unknown, abortReason: unknown): Outcome {
  const message = errorMessage(err);
  if (err instanceof StageError) return failure(cleanErrorCode(err.code), message, err.retryable);
  if (abortReason instanceof StageTimeoutError) return failure('TIMEOUT', message);
  if (abortReason instanceof WorkerStoppingError) return failure('WORKER_STOPPING', message, true);
  const e = err as { code?: unknown; retryable?: unknown } | null;
  const code =
    typeof e === 'object' && e !== null && typeof e.code === 'string' ? e.code : undefined;
  const retryable =
    typeof e === 'object' && e !== null && typeof e.retryable === 'boolean'
      ? e.retryable
      : undefined;
  return failure(code === undefined ? 'HANDLER_ERROR' : cleanErrorCode(code), message, retryable);
}

function capLogs(collected: Collected, extra: StageResultLog[]): StageResultLog[] {
  let dropped = collected.droppedLogs;
  let own = collected.logs;
  const room = LIMITS.resultLogs - extra.length;
  if (dropped > 0 || own.length > room) {
    const keep = Math.min(own.length, room - 1); // one line for the marker
    dropped += own.length - keep;
    own = own.slice(0, keep);
  }
  const marker: StageResultLog[] =
    dropped > 0
      ? [
          {
            message: `${dropped} more log lines were dropped (at most ${LIMITS.resultLogs} per result)`,
            logLevel: 'Warning',
            created: nowIso(),
          },
        ]
      : [];
  return [...own, ...marker, ...extra];
}

/** The result body for one execution, fitted under the request size limit. */
export function buildResultBody(
  message: StageNextMessage,
  attempt: number,
  outcome: Outcome,
  collected: Collected,
): StageResultSubmit {
  const body: StageResultSubmit = {
    stageId: message.stageId,
    executionId: message.executionId,
    attempt,
    pipelineId: message.pipelineId,
    isSuccess: outcome.isSuccess,
    isWaitingForApproval: outcome.isWaitingForApproval,
    logs: capLogs(collected, outcome.extraLogs),
    contextItems: [...collected.contextItems.values()],
    appendedStages: collected.appendedStages,
  };
  if (outcome.result !== undefined) body.result = outcome.result;
  if (outcome.errorCode !== undefined) body.errorCode = outcome.errorCode;
  if (outcome.retryable !== undefined) body.retryable = outcome.retryable;
  return fit(body, outcome);
}

function fit(body: StageResultSubmit, outcome: Outcome): StageResultSubmit {
  const size = (b: StageResultSubmit) => bytes(JSON.stringify(b));
  if (size(body) <= LIMITS.resultRequestBytes) return body;
  const logs = body.logs ?? [];
  const shortLogs = logs.map((l) => ({ ...l, message: truncate(l.message, 1000) }));
  const shorter = { ...body, logs: shortLogs };
  if (size(shorter) <= LIMITS.resultRequestBytes) return shorter;
  // Keep only the failure line (if any): the handler's own lines go first.
  const essentials = {
    ...body,
    logs: shortLogs.slice(shortLogs.length - outcome.extraLogs.length),
  };
  if (size(essentials) <= LIMITS.resultRequestBytes) return essentials;
  const failed = failure(
    'RESULT_TOO_LARGE',
    `the result body exceeds ${LIMITS.resultRequestBytes} bytes even without logs`,
    false,
  );
  return {
    stageId: body.stageId,
    executionId: body.executionId,
    attempt: body.attempt,
    pipelineId: body.pipelineId,
    isSuccess: false,
    isWaitingForApproval: false,
    errorCode: failed.errorCode,
    retryable: false,
    logs: failed.extraLogs,
    contextItems: [],
    appendedStages: [],
  };
}
