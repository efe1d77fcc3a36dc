import { statement, type Queryable } from '../sql.js';
import type { StageLogRecord } from './pipeline-view.js';

/**
 * Pages of one stage's logs, ordered by created then id like the logs of a pipeline read
 * (addendum §4), for the logs that read leaves out (STAGE_LOG_WINDOW). One statement checks that
 * the stage belongs to the pipeline and the pipeline to the application, and reads the page.
 */

/**
 * Message text a page carries at most (the first log of a page always): with up to 200 logs of
 * up to ~320 KiB each, a count alone would let one page be 64 MiB.
 */
export const STAGE_LOG_PAGE_BYTES = 1_048_576;

// The page is the first `limit` rows after the position whose running message size stays within
// $6; its messages are selected only for those rows, so the look-ahead row and the rows past the
// budget cost their index entry and size, not their text. '-infinity' starts at the first log,
// keeping the row comparison an index condition of (stage_id, created, id).
const PAGE = statement(
  'stage_log_page',
  `SELECT w.id, w.log_level, w.created, w.carried_over, CASE WHEN w.in_page THEN w.message END AS message
   FROM stages st
   JOIN pipelines p ON p.id = st.pipeline_id AND p.application_id = $1::int
   LEFT JOIN LATERAL (
     SELECT l.id, l.log_level, l.created, l.carried_over, l.message,
            (row_number() OVER after) <= $5::int
              AND ((row_number() OVER after) = 1 OR (sum(octet_length(l.message)) OVER after) <= $6::bigint) AS in_page
     FROM (SELECT id, log_level, created, carried_over, message FROM stage_logs
           WHERE stage_id = st.id AND (created, id) > ($4::timestamptz, $7::bigint)
           ORDER BY created, id LIMIT $5::int + 1) l
     WINDOW after AS (ORDER BY l.created, l.id)
   ) w ON true
   WHERE st.id = $3::bigint AND st.pipeline_id = $2::bigint
   ORDER BY w.created, w.id`,
);

interface RawLog {
  /** int8 as text (pg); null on the one row of a stage without logs after the position. */
  id: string | null;
  log_level: string;
  created: Date;
  carried_over: boolean;
  message: string | null;
}

export interface StageLogPage {
  logs: StageLogRecord[];
  /** More logs follow the last one of `logs`. */
  more: boolean;
}

/**
 * The logs of an application's stage of a pipeline after `after` (created, id), at most `limit`
 * and STAGE_LOG_PAGE_BYTES of messages; null when the application has no such stage in that
 * pipeline.
 */
export async function readStageLogPage(
  db: Queryable,
  scope: { applicationId: number; pipelineId: number; stageId: number },
  query: { after?: { created: Date; id: number }; limit: number },
): Promise<StageLogPage | null> {
  const rows = await db.query<RawLog>(PAGE, [
    scope.applicationId,
    scope.pipelineId,
    scope.stageId,
    query.after?.created ?? '-infinity',
    query.limit,
    STAGE_LOG_PAGE_BYTES,
    query.after?.id ?? 0,
  ]);
  if (rows.length === 0) return null;
  const logs: StageLogRecord[] = [];
  let fetched = 0;
  for (const r of rows) {
    if (r.id === null) continue;
    fetched += 1;
    // in_page holds for a prefix of the rows: the running size only grows.
    if (r.message !== null && fetched === logs.length + 1) {
      logs.push({ id: Number(r.id), stageId: scope.stageId, message: r.message, logLevel: r.log_level, created: r.created, carriedOver: r.carried_over });
    }
  }
  return { logs, more: fetched > logs.length };
}
