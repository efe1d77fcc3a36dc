import type { PipelineDefinition } from '@po/contracts';
import type { FieldError } from './errors.js';
import { newTraceId } from './ids.js';
import { DEFAULT_PRIORITY, checkAddedStages, stageFromCreate, type NewStage } from './stage-definition.js';

/** A validated PipelineDefinition (creation body or a schedule's definition), the wire type. */
export type PipelineDefinitionInput = PipelineDefinition;

export interface NewPipeline {
  applicationId: number;
  name: string;
  traceId: string;
  policies: Record<string, unknown>[] | null;
  idempotencyKey: string | null;
  scheduleId: number | null;
  /** 1..5, lower first: the default of its stages, appended ones included (issue 31). */
  priority: number;
  stages: NewStage[];
  contextItems: { key: string; value: string; valueType: string | null; isSensitive: boolean }[];
  keywords: { key: string; value: string }[];
}

/**
 * Turns a validated definition into the pipeline to store, applying the rules that span stages
 * (addendum §6). The one creation path for legacy, idempotent and scheduled pipelines.
 */
export function planPipeline(
  definition: PipelineDefinitionInput,
  origin: { applicationId: number; idempotencyKey?: string; scheduleId?: number },
  pointer = '',
): { ok: true; pipeline: NewPipeline } | { ok: false; errors: FieldError[] } {
  const priority = definition.priority ?? DEFAULT_PRIORITY;
  const stages = definition.stages.map((s) => stageFromCreate(s, priority));
  const errors = checkAddedStages([], stages, `${pointer}/stages`);
  if (errors.length > 0) return { ok: false, errors };
  return {
    ok: true,
    pipeline: {
      applicationId: origin.applicationId,
      name: definition.name,
      traceId: definition.traceId ?? newTraceId(),
      policies: definition.policies ?? null,
      idempotencyKey: origin.idempotencyKey ?? null,
      scheduleId: origin.scheduleId ?? null,
      priority,
      stages,
      // A tombstone in the initial context removes nothing and is simply not stored.
      contextItems: (definition.pipelineContextItems ?? [])
        .filter((c) => !c.isDeleted)
        .map((c) => ({ key: c.key, value: c.value ?? '', valueType: c.valueType ?? null, isSensitive: c.isSensitive ?? false })),
      keywords: definition.pipelineKeywords ?? [],
    },
  };
}
