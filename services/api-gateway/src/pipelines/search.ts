import {
  STAGE_STATUSES,
  type PipelinePage,
  type PipelineSearchQuery,
  type PipelineSummary,
  type StageStatusCounts,
} from '@po/contracts';
import { scheduleNameKey, searchPipelines, type PipelineFilter, type PipelineSummaryRecord } from '@po/db';
import { ValidationFailed, isTerminalPipeline } from '@po/domain';
import { listingOf, pageOf, readCursor } from '@po/http';
import type { Deps } from '../deps.js';

/**
 * GET /pipelines (decision 0089): the application's pipelines newest first, filtered, a keyset
 * page at a time. The cursor names the last pipeline's (createdAt, id) and is signed over the
 * application and the normalised filters, so it only continues the listing it came from.
 */

export interface PipelineListQuery extends PipelineSearchQuery {
  cursor: string | undefined;
  limit: number;
}

/**
 * What a cursor is bound to: the application and every filter, normalised (statuses and keywords
 * as sets, date-times in UTC milliseconds, the schedule name case-folded as schedules match it).
 * The name prefix is kept as given: the database folds its case.
 */
export function searchListing(applicationId: number, q: PipelineSearchQuery): string {
  return listingOf('pipelines', {
    applicationId,
    status: q.status.length > 0 ? q.status : null,
    name: q.name,
    keyword: q.keyword.length > 0 ? q.keyword.map((k) => [k.key, k.value]) : null,
    scheduleName: q.scheduleName === undefined ? null : scheduleNameKey(q.scheduleName),
    createdAfter: q.createdAfter,
    createdBefore: q.createdBefore,
    stageHandlerName: q.stageHandlerName,
  });
}

function stageStatusCounts(counts: PipelineSummaryRecord['stageCounts']): StageStatusCounts {
  return Object.fromEntries(STAGE_STATUSES.map((s) => [s, counts[s] ?? 0])) as StageStatusCounts;
}

export function pipelineSummary(r: PipelineSummaryRecord): PipelineSummary {
  const counts = stageStatusCounts(r.stageCounts);
  return {
    id: r.id,
    name: r.name,
    status: r.status,
    isTerminal: isTerminalPipeline(r.status),
    traceId: r.traceId,
    createdAt: r.createdAt.toISOString(),
    finishedAt: r.finishedAt ? r.finishedAt.toISOString() : null,
    scheduleName: r.scheduleName,
    rerunOf: r.rerunOf,
    stageCount: Object.values(counts).reduce((a, b) => a + b, 0),
    stageStatusCounts: counts,
  };
}

/** The validated filters as the database reads them: GET /pipelines, and a bulk operation's match. */
export function pipelineFilterOf(applicationId: number, q: PipelineSearchQuery): PipelineFilter {
  return {
    applicationId,
    statuses: q.status,
    namePrefix: q.name ?? null,
    keywords: q.keyword,
    scheduleNameKey: q.scheduleName === undefined ? null : scheduleNameKey(q.scheduleName),
    createdAfter: q.createdAfter === undefined ? null : new Date(q.createdAfter),
    createdBefore: q.createdBefore === undefined ? null : new Date(q.createdBefore),
    stageHandlerName: q.stageHandlerName ?? null,
  };
}

export async function listPipelinesPage(deps: Deps, applicationId: number, q: PipelineListQuery): Promise<PipelinePage> {
  const token = readCursor(q.cursor, ['time', 'id']);
  if (q.createdAfter !== undefined && q.createdBefore !== undefined && q.createdBefore <= q.createdAfter) {
    throw ValidationFailed.at('createdBefore', 'must be later than createdAfter');
  }
  const listing = searchListing(applicationId, q);
  const cursors = await deps.cursors();
  const after = cursors.verifyOptional(listing, token);
  const rows = await searchPipelines(deps.sql, {
    ...pipelineFilterOf(applicationId, q),
    after: after ? { createdAt: new Date(after[0] as number), id: after[1] as number } : null,
    take: q.limit + 1,
  });
  return pageOf(rows, q.limit, (last) => cursors.issue(listing, [last.createdAt.getTime(), last.id]), pipelineSummary);
}
