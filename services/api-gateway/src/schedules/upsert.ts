import type { Schedule, ScheduleUpsertRequest } from '@po/contracts';
import {
  findScheduleByName,
  insertSchedule,
  isUniqueViolation,
  lockScheduleByName,
  recentRuns,
  updateSchedule,
  type DbOrTx,
  type ScheduleRecord,
  type ScheduleSettingsWrite,
} from '@po/db';
import { HEALTH_WINDOW, compareSchedules, normaliseUpsert, type ScheduleSettings, type ScheduleUpsertBody } from '@po/domain';
import type { Deps } from '../deps.js';
import { checkUpsertBody } from './check.js';
import { replanFrom, unplanned } from './plan.js';
import { scheduleResponse, storedSettings } from './view.js';

export interface UpsertOutcome {
  created: boolean;
  schedule: Schedule;
}

const toWrite = (s: ScheduleSettings): ScheduleSettingsWrite => ({ ...s });

/**
 * PUT /schedules/{name} (addendum §14.7). A new name is created Active, version 1, planned from
 * now. An existing one (matched case-insensitively, stored spelling kept) is compared with the
 * normalised body: unchanged → nothing stored; only definition.traceId differs → stored,
 * version and plan kept; any other difference → stored, version + 1, re-planned from now.
 * Archived becomes Active with a re-plan.
 */
export async function upsertSchedule(deps: Deps, applicationId: number, name: string, raw: unknown): Promise<UpsertOutcome> {
  const now = deps.clock();
  const existing = await findScheduleByName(deps.db, applicationId, name);
  const body = checkUpsertBody(raw, now, existing?.runAt ?? null);
  // The runs are read under the schedule's row lock, which every writer of its runs takes first.
  const storeAndRespond = async (tx: DbOrTx): Promise<UpsertOutcome> => {
    const { created, record } = await store(tx, applicationId, name, body, now);
    const runs = await recentRuns(tx, [record.id], HEALTH_WINDOW);
    return { created, schedule: scheduleResponse(record, runs.get(record.id) ?? [], now) };
  };
  try {
    return await deps.db.$transaction(storeAndRespond);
  } catch (err) {
    // A concurrent PUT created the name first: this one becomes an update of it.
    if (!isUniqueViolation(err, 'schedules_application_id_name_key_key')) throw err;
    return deps.db.$transaction(storeAndRespond);
  }
}

async function store(
  tx: DbOrTx,
  applicationId: number,
  name: string,
  body: ScheduleUpsertRequest,
  now: Date,
): Promise<{ created: boolean; record: ScheduleRecord }> {
  const stored = await lockScheduleByName(tx, applicationId, name);
  const settings = normaliseUpsert(body as unknown as ScheduleUpsertBody, stored ? storedSettings(stored) : null);
  if (!stored) {
    const inserted = await insertSchedule(tx, { applicationId, name, now, ...toWrite(settings), ...unplanned(now) });
    // The jitter of the first tick depends on the id, known only now.
    return { created: true, record: await updateSchedule(tx, inserted.id, replanFrom(inserted, now)) };
  }
  const change = compareSchedules(settings, storedSettings(stored));
  const reactivate = stored.status === 'Archived';
  if (change === 'unchanged' && !reactivate) return { created: false, record: stored };
  const status = reactivate ? 'Active' : stored.status;
  const replan = change === 'changed' || reactivate;
  const record = await updateSchedule(tx, stored.id, {
    ...toWrite(settings),
    status,
    updatedAt: now,
    ...(change === 'changed' ? { definitionVersion: stored.definitionVersion + 1 } : {}),
    ...(replan ? (status === 'Active' ? replanFrom({ ...settings, id: stored.id }, now) : unplanned(now)) : {}),
  });
  return { created: false, record };
}
