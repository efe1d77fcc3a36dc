import type { Schedule, ScheduleRun } from '@po/contracts';
import type { ScheduleRecord, ScheduleRunRecord } from '@po/db';
import { SCHEDULE_NEXT_RUNS } from '@po/contracts';
import { scheduleHealth, upcomingFires, type ScheduleSettings } from '@po/domain';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/**
 * Schedule (api-spec + addendum §5.5): every field present; nextRunAt is the jittered fire time
 * and null unless Active; nextRuns the next fire instants after `now` from the stored plan, by the
 * scheduler's own rules (upcomingFires); last-run fields and health come from the newest runs
 * (newest first).
 */
export function scheduleResponse(s: ScheduleRecord, runsNewestFirst: readonly ScheduleRunRecord[], now: Date): Schedule {
  const newest = runsNewestFirst[0];
  const health = scheduleHealth(runsNewestFirst);
  return {
    id: s.id,
    applicationId: s.applicationId,
    name: s.name,
    status: s.status,
    kind: s.kind,
    cronExpression: s.kind === 'Cron' ? s.cronExpression : null,
    timeZone: s.timeZone,
    intervalSeconds: s.kind === 'Interval' ? s.intervalSeconds : null,
    runAt: s.kind === 'Once' ? iso(s.runAt) : null,
    definition: s.definition as unknown as Schedule['definition'],
    definitionVersion: s.definitionVersion,
    overlapPolicy: s.overlapPolicy as Schedule['overlapPolicy'],
    catchupPolicy: s.catchupPolicy as Schedule['catchupPolicy'],
    catchupMax: s.catchupMax,
    jitterSeconds: s.jitterSeconds,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
    nextRunAt: s.status === 'Active' ? iso(s.nextRunAt) : null,
    nextRuns: s.status === 'Active' ? upcomingFires(s, now, SCHEDULE_NEXT_RUNS).map((d) => d.toISOString()) : [],
    lastRunAt: newest ? newest.createdAt.toISOString() : null,
    lastRunStatus: newest ? (newest.pipelineId !== null && newest.pipelineStatus !== null ? newest.pipelineStatus : newest.status) : null,
    lastPipelineId: newest?.pipelineId ?? null,
    health: { ...health, lastFailureAt: iso(health.lastFailureAt) },
  };
}

/** ScheduleRun (addendum §5.6); pipelineStatus is the live status of its pipeline. */
export function runResponse(r: ScheduleRunRecord): ScheduleRun {
  return {
    id: r.id,
    scheduleId: r.scheduleId,
    trigger: r.trigger,
    status: r.status,
    scheduledFor: r.scheduledFor.toISOString(),
    createdAt: r.createdAt.toISOString(),
    pipelineId: r.pipelineId,
    pipelineStatus: r.pipelineStatus,
    reason: r.reason,
  };
}

/** The stored schedule as the settings a PUT is compared with (addendum §14.7). */
export function storedSettings(s: ScheduleRecord): ScheduleSettings {
  return {
    kind: s.kind,
    cronExpression: s.cronExpression,
    intervalSeconds: s.intervalSeconds,
    runAt: s.runAt,
    timeZone: s.timeZone,
    overlapPolicy: s.overlapPolicy as ScheduleSettings['overlapPolicy'],
    catchupPolicy: s.catchupPolicy as ScheduleSettings['catchupPolicy'],
    catchupMax: s.catchupMax,
    jitterSeconds: s.jitterSeconds,
    definition: s.definition as Record<string, unknown>,
  };
}
