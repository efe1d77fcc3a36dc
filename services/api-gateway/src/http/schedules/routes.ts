import { apiKeyAuth, createRouter, jsonBody, optionalJsonBody, pathParam, queryParams, sendJson, type ApiKeyResolver, type AppState, type Router } from '@po/http';
import {
  bodyLimits,
  parseCursor,
  parseLimit,
  parseScheduleName,
  parseScheduleStatus,
  validateScheduleBackfill,
  validateScheduleTrigger,
  type ScheduleBackfillRequest,
  type ScheduleStatus,
  type ScheduleTriggerRequest,
} from '@po/contracts';
import type { Deps } from '../../deps.js';
import { listRunsPage, listSchedulesPage, getSchedule } from '../../schedules/read.js';
import { backfillSchedule } from '../../schedules/backfill.js';
import { archiveSchedule, pauseSchedule, resumeSchedule } from '../../schedules/lifecycle.js';
import { triggerSchedule } from '../../schedules/trigger.js';
import { upsertSchedule } from '../../schedules/upsert.js';


/** The PUT body is validated by the operation, which needs the stored schedule (§14.1 runAt rule). */
const acceptAny = (value: unknown) => ({ ok: true as const, value });

export function scheduleRoutes(deps: Deps, resolveKey: ApiKeyResolver, maxBodyBytes: number): Router {
  const router = createRouter();
  const auth = apiKeyAuth(resolveKey);
  const nameParam = pathParam('name', parseScheduleName);
  const name = (ctx: { state: AppState }) => ctx.state.params.name as string;
  const app = (ctx: { state: AppState }) => ctx.state.applicationId!;
  const page = (ctx: { state: AppState }) => ({
    cursor: ctx.state.params.cursor as string | undefined,
    limit: ctx.state.params.limit as number,
  });

  router.get('/schedules', auth, queryParams({ status: parseScheduleStatus, cursor: parseCursor, limit: parseLimit }), async (ctx) => {
    const status = ctx.state.params.status as ScheduleStatus | undefined;
    sendJson(ctx, 200, await listSchedulesPage(deps, app(ctx), { ...page(ctx), status }));
  });

  router.put('/schedules/:name', auth, nameParam, jsonBody(acceptAny, maxBodyBytes), async (ctx) => {
    const outcome = await upsertSchedule(deps, app(ctx), name(ctx), ctx.state.body);
    sendJson(ctx, outcome.created ? 201 : 200, outcome.schedule);
  });

  router.get('/schedules/:name', auth, nameParam, async (ctx) => {
    sendJson(ctx, 200, await getSchedule(deps, app(ctx), name(ctx)));
  });

  router.get('/schedules/:name/runs', auth, nameParam, queryParams({ cursor: parseCursor, limit: parseLimit }), async (ctx) => {
    sendJson(ctx, 200, await listRunsPage(deps, app(ctx), name(ctx), page(ctx)));
  });

  router.post('/schedules/:name/pause', auth, nameParam, async (ctx) => {
    sendJson(ctx, 200, await pauseSchedule(deps, app(ctx), name(ctx)));
  });

  router.post('/schedules/:name/resume', auth, nameParam, async (ctx) => {
    sendJson(ctx, 200, await resumeSchedule(deps, app(ctx), name(ctx)));
  });

  router.post('/schedules/:name/archive', auth, nameParam, async (ctx) => {
    sendJson(ctx, 200, await archiveSchedule(deps, app(ctx), name(ctx)));
  });

  router.post('/schedules/:name/trigger', auth, nameParam, optionalJsonBody(validateScheduleTrigger, Math.min(bodyLimits.scheduleTrigger, maxBodyBytes)), async (ctx) => {
    sendJson(ctx, 201, await triggerSchedule(deps, app(ctx), name(ctx), ctx.state.body as ScheduleTriggerRequest));
  });

  router.post('/schedules/:name/backfill', auth, nameParam, jsonBody(validateScheduleBackfill, Math.min(bodyLimits.scheduleBackfill, maxBodyBytes)), async (ctx) => {
    sendJson(ctx, 200, await backfillSchedule(deps, app(ctx), name(ctx), ctx.state.body as ScheduleBackfillRequest));
  });

  return router;
}
