import {
  SCHEDULE_KINDS,
  dedupeErrors,
  isRfc3339DateTime,
  toUtcMillis,
  validatePipelineDefinition,
  validateScheduleUpsert,
  type FieldError,
  type ScheduleUpsertRequest,
} from '@po/contracts';
import { ValidationFailed, planPipeline, validatePlan, type PipelineDefinitionInput, type PlanInput } from '@po/domain';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The plan fields of a raw body whose JSON types are right; null when the kind is not valid. */
function planInputOf(body: Record<string, unknown>): PlanInput | null {
  const kind = SCHEDULE_KINDS.find((k) => k === body.kind);
  if (kind === undefined) return null;
  const runAt = body.runAt;
  return {
    kind,
    cronExpression: typeof body.cronExpression === 'string' ? body.cronExpression : null,
    intervalSeconds: typeof body.intervalSeconds === 'number' ? body.intervalSeconds : null,
    runAt: typeof runAt === 'string' && isRfc3339DateTime(runAt) ? new Date(toUtcMillis(runAt)) : null,
    timeZone: typeof body.timeZone === 'string' ? body.timeZone : 'UTC',
  };
}

/**
 * Every 400 of a PUT body at once (addendum §3, §14.1, §14.2): the schema and kind rules, the
 * plan rules (cron dialect, IANA zone, interval range, future runAt unless it equals the stored
 * one), and the definition's cross-stage rules of pipeline creation (planPipeline), under
 * `/definition`. A plan rule is not reported for a field whose JSON type is already wrong.
 */
export function checkUpsertBody(raw: unknown, now: Date, storedRunAt: Date | null): ScheduleUpsertRequest {
  const checked = validateScheduleUpsert(raw);
  const errors: FieldError[] = checked.ok ? [] : [...checked.errors];
  if (isObject(raw)) {
    const plan = planInputOf(raw);
    if (plan) {
      const schemaFields = new Set(errors.map((e) => e.field));
      errors.push(...validatePlan(plan, now, storedRunAt).filter((e) => !schemaFields.has(e.field)));
    }
    const definition = validatePipelineDefinition(raw.definition);
    if (definition.ok) {
      const planned = planPipeline(definition.value as PipelineDefinitionInput, { applicationId: 1 }, '/definition');
      if (!planned.ok) errors.push(...planned.errors);
    }
  }
  const all = dedupeErrors(errors);
  if (all.length > 0 || !checked.ok) throw new ValidationFailed(all);
  return checked.value;
}
