import { OVERVIEW_BUCKET_SECONDS, OVERVIEW_BUCKETS, stageQueueName, type Overview, type OverviewBucket } from '@po/contracts';
import { readOverviewCounts } from '@po/db';
import { BrokerUnavailable } from '@po/domain';
import type { Deps } from '../deps.js';

const BUCKET_MS = OVERVIEW_BUCKET_SECONDS * 1000;

/**
 * The overview's window: twelve five-minute buckets ending with the current one. Aligned to
 * five-minute boundaries, so two reads a few seconds apart cover the same window and, unless
 * something finished or a queue moved, have the same body: a polling dashboard gets its 304.
 */
export function overviewWindow(now: Date): { from: Date; to: Date } {
  const to = (Math.floor(now.getTime() / BUCKET_MS) + 1) * BUCKET_MS;
  return { from: new Date(to - OVERVIEW_BUCKETS * BUCKET_MS), to: new Date(to) };
}

/**
 * GET /overview (issue 13): what finished in the last hour by bucket, the live pipelines by status
 * (PostgreSQL, one statement) and the depth of each of the application's StageNext queues
 * (Redis, two pipelined round trips). Only this application's rows and queues are read.
 */
export async function readOverview(deps: Deps, applicationId: number): Promise<Overview> {
  const { from, to } = overviewWindow(deps.clock());
  const counts = await readOverviewCounts(deps.sql, applicationId, { from, to, bucketSeconds: OVERVIEW_BUCKET_SECONDS });
  let depths;
  try {
    depths = await deps.queueDepths(counts.handlers.map((h) => stageQueueName(applicationId, h)));
  } catch (err) {
    deps.logger.warn({ err }, 'queue depth not read');
    throw new BrokerUnavailable('The queue depths cannot be read now; retry the request.');
  }
  const buckets: OverviewBucket[] = Array.from({ length: OVERVIEW_BUCKETS }, (_, i) => ({
    start: new Date(from.getTime() + i * BUCKET_MS).toISOString(),
    stagesCompleted: 0,
    stagesFailed: 0,
    pipelinesCompleted: 0,
    pipelinesFailed: 0,
    ...counts.buckets.get(i),
  }));
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    bucketSeconds: OVERVIEW_BUCKET_SECONDS,
    buckets,
    pipelinesByStatus: counts.pipelinesByStatus,
    queues: counts.handlers.map((handlerName, i) => {
      const d = depths[i];
      return { handlerName, waiting: d?.waiting ?? 0, delayed: d?.delayed ?? 0, oldestWaitingAgeMs: d?.oldestWaitingAgeMs ?? null };
    }),
  };
}
