import { statement, type Queryable, type Statement } from '../sql.js';
import { pipelineMatchSql, scheduleIdOf, type PipelineFilter } from './pipeline-search.js';

/**
 * Bulk rerun and cancel (decision 0133): an operation, the pipelines it matched when it was
 * created (operation_items), and what its runner (pipeline-service) reads and writes. Every read
 * of the API is scoped by application; the runner's are by operation id, which it claimed.
 */

export type OperationKind = 'rerun' | 'cancel';
export type OperationStatus = 'Running' | 'Succeeded' | 'Cancelled' | 'Failed';

export interface OperationRecord {
  id: number;
  applicationId: number;
  kind: OperationKind;
  status: OperationStatus;
  filter: unknown;
  rerunFrom: string | null;
  maxPerSecond: number;
  matched: number;
  done: number;
  failed: number;
  createdAt: Date;
  finishedAt: Date | null;
}

interface Row {
  id: string;
  application_id: number;
  kind: OperationKind;
  status: OperationStatus;
  filter: unknown;
  rerun_from: string | null;
  max_per_second: number;
  matched: number;
  done: number;
  failed: number;
  created_at: Date;
  finished_at: Date | null;
}

const COLUMNS = 'id, application_id, kind, status, filter, rerun_from, max_per_second, matched, done, failed, created_at, finished_at';

const record = (r: Row): OperationRecord => ({
  id: Number(r.id),
  applicationId: r.application_id,
  kind: r.kind,
  status: r.status,
  filter: r.filter,
  rerunFrom: r.rerun_from,
  maxPerSecond: r.max_per_second,
  matched: r.matched,
  done: r.done,
  failed: r.failed,
  createdAt: r.created_at,
  finishedAt: r.finished_at,
});

/** A filter's matches, at most `cap`: their count (cap + 1 means more) and the first `sample` ids. */
export async function countMatches(
  tx: Queryable,
  filter: PipelineFilter,
  cap: number,
  sample: number,
): Promise<{ matched: number; sample: number[] }> {
  const scheduleId = await scheduleIdOf(tx, filter.applicationId, filter.scheduleNameKey);
  if (scheduleId === undefined) return { matched: 0, sample: [] };
  const m = pipelineMatchSql(filter, scheduleId, [cap + 1, sample]);
  const text = `WITH m AS MATERIALIZED (${m.ids} LIMIT $${m.next}::int)
    SELECT (SELECT count(*)::int FROM m) AS matched,
           coalesce((SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM m ORDER BY id LIMIT $${m.next + 1}::int) s), '{}') AS sample`;
  const [row] = await tx.query<{ matched: number; sample: string[] }>({ name: 'operation_count', text, custom: true } as Statement, m.values);
  return { matched: row!.matched, sample: row!.sample.map(Number) };
}

const INSERT = statement(
  'operation_insert',
  `INSERT INTO operations (application_id, kind, filter, rerun_from, max_per_second, created_at, updated_at)
   VALUES ($1::int, $2::text, $3::jsonb, $4::text, $5::int, $6::timestamptz, $6::timestamptz)
   ON CONFLICT (application_id, kind) WHERE status = 'Running' DO NOTHING
   RETURNING ${COLUMNS}`,
);
const RUNNING_OF_KIND = statement(
  'operation_running_of_kind',
  `SELECT id FROM operations WHERE application_id = $1::int AND kind = $2::text AND status = 'Running'`,
);

/**
 * Creates a Running operation and its items, the filter's matches now, in the caller's
 * transaction; `{ running }` (its id) when one of the kind already runs for the application.
 */
export async function createOperation(
  tx: Queryable,
  o: { kind: OperationKind; filter: PipelineFilter; filterJson: unknown; rerunFrom: string | null; maxPerSecond: number; now: Date },
): Promise<OperationRecord | { running: number }> {
  const [row] = await tx.query<Row>(INSERT, [o.filter.applicationId, o.kind, JSON.stringify(o.filterJson), o.rerunFrom, o.maxPerSecond, o.now.toISOString()]);
  if (!row) {
    const [running] = await tx.query<{ id: string }>(RUNNING_OF_KIND, [o.filter.applicationId, o.kind]);
    return { running: Number(running?.id ?? 0) };
  }
  const scheduleId = await scheduleIdOf(tx, o.filter.applicationId, o.filter.scheduleNameKey);
  let matched = 0;
  if (scheduleId !== undefined) {
    const m = pipelineMatchSql(o.filter, scheduleId, [row.id]);
    const text = `WITH ins AS (INSERT INTO operation_items (operation_id, pipeline_id) SELECT $${m.next}::bigint, x.id FROM (${m.ids}) x RETURNING 1)
      UPDATE operations SET matched = (SELECT count(*)::int FROM ins) WHERE id = $${m.next}::bigint RETURNING matched`;
    const [updated] = await tx.query<{ matched: number }>({ name: 'operation_items_insert', text, custom: true } as Statement, m.values);
    matched = updated!.matched;
  }
  return { ...record(row), matched };
}

const READ = statement('operation_read', `SELECT ${COLUMNS} FROM operations WHERE id = $1::bigint AND application_id = $2::int`);

/** The application's operation, or null. */
export async function readOperation(db: Queryable, applicationId: number, id: number): Promise<OperationRecord | null> {
  const [row] = await db.query<Row>(READ, [id, applicationId]);
  return row ? record(row) : null;
}

const FAILURES = statement(
  'operation_failures',
  `SELECT pipeline_id, reason FROM operation_items WHERE operation_id = $1::bigint AND state = 'failed' ORDER BY pipeline_id LIMIT $2::int`,
);

/** The first `limit` items that could not be applied, with their reasons. */
export async function readOperationFailures(db: Queryable, id: number, limit: number): Promise<{ pipelineId: number; reason: string }[]> {
  const rows = await db.query<{ pipeline_id: string; reason: string | null }>(FAILURES, [id, limit]);
  return rows.map((r) => ({ pipelineId: Number(r.pipeline_id), reason: r.reason ?? '' }));
}

const CANCEL = statement(
  'operation_cancel',
  `UPDATE operations SET status = 'Cancelled', finished_at = $3::timestamptz, updated_at = $3::timestamptz,
     done = (SELECT count(*)::int FROM operation_items WHERE operation_id = $1::bigint AND state = 'done'),
     failed = (SELECT count(*)::int FROM operation_items WHERE operation_id = $1::bigint AND state = 'failed')
   WHERE id = $1::bigint AND application_id = $2::int AND status = 'Running'
   RETURNING ${COLUMNS}`,
);

/**
 * Cancels the application's Running operation; null when it is not Running (or not there). It
 * waits for an item being applied (the runner holds the row lock in that item's transaction), so
 * no item is started after the cancel commits.
 */
export async function cancelOperation(db: Queryable, applicationId: number, id: number, now: Date): Promise<OperationRecord | null> {
  const [row] = await db.query<Row>(CANCEL, [id, applicationId, now.toISOString()]);
  return row ? record(row) : null;
}

// ---------------------------------------------------------------------------------------------
// The runner's side (pipeline-service)

const CLAIM = statement(
  'operation_claim',
  `UPDATE operations o SET runner = $1::text, runner_until = $2::timestamptz + make_interval(secs => $3::int), updated_at = $2::timestamptz
   FROM (SELECT id FROM operations
         WHERE status = 'Running' AND (runner_until IS NULL OR runner_until < $2::timestamptz OR runner = $1::text)
         ORDER BY id LIMIT $4::int FOR UPDATE SKIP LOCKED) c
   WHERE o.id = c.id
   RETURNING o.*`,
);

/**
 * Claims (or renews this runner's claim of) up to `limit` Running operations for `leaseSeconds`:
 * another runner takes one over only after its lease lapsed.
 */
export async function claimOperations(db: Queryable, runner: string, now: Date, leaseSeconds: number, limit: number): Promise<OperationRecord[]> {
  return (await db.query<Row>(CLAIM, [runner, now.toISOString(), leaseSeconds, limit])).map(record);
}

const NEXT_ITEMS = statement(
  'operation_next_items',
  `SELECT pipeline_id FROM operation_items WHERE operation_id = $1::bigint AND state = 'todo' ORDER BY pipeline_id LIMIT $2::int`,
);

export async function nextOperationItems(db: Queryable, operationId: number, limit: number): Promise<number[]> {
  return (await db.query<{ pipeline_id: string }>(NEXT_ITEMS, [operationId, limit])).map((r) => Number(r.pipeline_id));
}

const LOCK_RUNNING = statement(
  'operation_lock_running',
  `SELECT status FROM operations WHERE id = $1::bigint FOR SHARE`,
);

/**
 * Whether the operation is still Running, holding it for the caller's transaction: a cancel's
 * UPDATE waits for the items being applied, so none starts after the cancel commits. A share
 * lock: the runner's batches of one operation go side by side.
 */
export async function lockRunningOperation(tx: Queryable, operationId: number): Promise<boolean> {
  const [row] = await tx.query<{ status: OperationStatus }>(LOCK_RUNNING, [operationId]);
  return row?.status === 'Running';
}

const LOCK_ITEM = statement(
  'operation_lock_item',
  `SELECT state FROM operation_items WHERE operation_id = $1::bigint AND pipeline_id = $2::bigint FOR UPDATE`,
);

/** Locks one item for the caller's transaction; whether it is still to do (not done by another runner). */
export async function lockOperationItem(tx: Queryable, operationId: number, pipelineId: number): Promise<boolean> {
  const [row] = await tx.query<{ state: string }>(LOCK_ITEM, [operationId, pipelineId]);
  return row?.state === 'todo';
}

const SETTLE_ITEM = statement(
  'operation_settle_item',
  `UPDATE operation_items SET state = $3::text, result_pipeline_id = $4::bigint, reason = $5::text, finished_at = $6::timestamptz
   WHERE operation_id = $1::bigint AND pipeline_id = $2::bigint AND state = 'todo'
   RETURNING state`,
);

/** Marks a to-do item done (with a rerun's new pipeline) or failed (with why); false when it was not to do. */
export async function settleOperationItem(
  tx: Queryable,
  operationId: number,
  pipelineId: number,
  outcome: { state: 'done'; resultPipelineId: number | null } | { state: 'failed'; reason: string },
  now: Date,
): Promise<boolean> {
  const values = [
    operationId,
    pipelineId,
    outcome.state,
    outcome.state === 'done' ? outcome.resultPipelineId : null,
    outcome.state === 'failed' ? outcome.reason.slice(0, 1000) : null,
    now.toISOString(),
  ];
  return (await tx.query(SETTLE_ITEM, values)).length === 1;
}

const COUNT = statement(
  'operation_count_items',
  `UPDATE operations SET
     done = (SELECT count(*)::int FROM operation_items WHERE operation_id = $1::bigint AND state = 'done'),
     failed = (SELECT count(*)::int FROM operation_items WHERE operation_id = $1::bigint AND state = 'failed'),
     updated_at = $2::timestamptz
   WHERE id = $1::bigint`,
);

/** Brings the operation's done and failed counts up to its items (after the runner's batches commit). */
export async function countOperationItems(db: Queryable, operationId: number, now: Date): Promise<void> {
  await db.query(COUNT, [operationId, now.toISOString()]);
}

const FINISH = statement(
  'operation_finish',
  `UPDATE operations SET status = 'Succeeded', finished_at = $2::timestamptz, updated_at = $2::timestamptz, runner = NULL, runner_until = NULL
   WHERE id = $1::bigint AND status = 'Running'
     AND NOT EXISTS (SELECT 1 FROM operation_items WHERE operation_id = $1::bigint AND state = 'todo')
   RETURNING id`,
);

/** Ends a Running operation that has nothing left to do, with its final counts; whether it did. */
export async function finishOperation(db: Queryable, operationId: number, now: Date): Promise<boolean> {
  await countOperationItems(db, operationId, now);
  return (await db.query(FINISH, [operationId, now.toISOString()])).length === 1;
}
