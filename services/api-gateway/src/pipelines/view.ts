import { REDACTED, isTerminalPipeline, isTerminalStage, nextRetryAtOf, normaliseOptions, type StageOptions } from '@po/domain';
import type { PipelineRecord, StageLogRecord, StageRecord } from '@po/db';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** jsonb reorders members; re-normalising restores the documented field order. */
function storedOptions(value: unknown): StageOptions {
  const stored = value as StageOptions;
  return normaliseOptions(stored, stored.runNextIfFailed);
}

/** PipelineResponse (api-spec, addendum §4): every field present, sensitive values redacted. */
export function pipelineResponse(p: PipelineRecord, wasExisting = false) {
  const stages = p.stages.map((s, i) => stageResponse(s, p.stages[i + 1] ?? null));
  return {
    id: Number(p.id),
    name: p.name,
    traceId: p.traceId,
    status: p.status,
    createdAt: p.createdAt.toISOString(),
    finishedAt: iso(p.finishedAt),
    applicationId: p.applicationId,
    stageStatuses: p.stages.map((s) => s.status),
    stages,
    pipelineContextItems: p.contextItems.map((c) => ({
      key: c.key,
      value: c.isSensitive ? REDACTED : c.value,
      valueType: c.valueType,
      isSensitive: c.isSensitive,
      isDeleted: false,
    })),
    pipelineKeywords: p.keywords.map((k) => ({ key: k.key, value: k.value })),
    isEvent: p.stages.some((s) => s.isEvent),
    idempotencyKey: p.idempotencyKey,
    isTerminal: isTerminalPipeline(p.status),
    wasExisting,
    rerunOf: p.rerunOf,
    reruns: p.reruns,
  };
}

export type PipelineResponse = ReturnType<typeof pipelineResponse>;

function stageResponse(s: StageRecord, next: StageRecord | null) {
  return {
    id: Number(s.id),
    pipelineId: Number(s.pipelineId),
    spanId: s.spanId,
    name: s.name,
    stageHandlerName: s.handlerName,
    description: s.description,
    status: s.status,
    createdAt: s.createdAt.toISOString(),
    finishedAt: iso(s.finishedAt),
    startedAt: iso(s.startedAt),
    nextRetryAt: iso(nextRetryAtOf(s.status, s.nextRetryAt)),
    output: s.output,
    input: s.input,
    isSkipped: s.status === 'Skipped',
    isEvent: s.isEvent,
    nextStageId: next ? Number(next.id) : null,
    logs: s.logs.map(stageLog),
    logsTruncated: s.logsTruncated,
    options: storedOptions(s.options),
    failureCount: s.failureCount,
    lastFailedAt: iso(s.lastFailedAt),
    hasFailureHistory: s.failureCount > 0,
    attempt: s.attempt,
    retryAttempt: s.retryAttempt,
    lastErrorCode: s.lastErrorCode,
    failureDisposition: s.failureDisposition,
    isTerminal: isTerminalStage(s.status),
    workerId: s.workerId,
    attemptStartedAt: iso(s.attemptStartedAt),
    attemptEndedAt: iso(s.attemptEndedAt),
    carriedOverFrom: s.carriedOverFrom === null ? null : Number(s.carriedOverFrom),
  };
}

/** StageLog (addendum §4): `id` and `stageId` always present. */
export function stageLog(l: StageLogRecord) {
  return {
    id: Number(l.id),
    stageId: Number(l.stageId),
    message: l.message,
    logLevel: l.logLevel,
    created: l.created.toISOString(),
    carriedOver: l.carriedOver,
  };
}

type StageRow = Omit<StageRecord, 'logs' | 'logsTruncated'>;

/** StageDto of an append response (api-spec): optional fields always present. */
export function stageDto(s: StageRow, next: StageRow | null) {
  const options = storedOptions(s.options);
  return {
    id: Number(s.id),
    pipelineId: Number(s.pipelineId),
    name: s.name,
    stageHandlerName: s.handlerName,
    status: s.status,
    createdAt: s.createdAt.toISOString(),
    isSkipped: s.status === 'Skipped',
    isEvent: s.isEvent,
    runNextIfCurrentFailed: options.runNextIfFailed,
    input: s.input,
    nextStageId: next ? Number(next.id) : null,
    finishedAt: iso(s.finishedAt),
    startedAt: iso(s.startedAt),
  };
}
