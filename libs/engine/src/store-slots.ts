import { statement, type Queryable } from '@po/db';

/**
 * What flow control reads and writes inside an engine batch (decisions 0132 and §7's
 * APP_MAX_ACTIVE_STAGES): the application lock, in-flight counts, handler settings, the Throttled
 * stages in the order they are served, and the rate buckets.
 */

const LOCK_APPLICATION = statement('engine_lock_application', 'SELECT pg_advisory_xact_lock(7301, $1)');

/**
 * Serialises the admissions of one application until commit, so two passes cannot both take the
 * last slot of the application, a handler or a key. Counts are read after it.
 */
export async function lockApplication(tx: Queryable, applicationId: number): Promise<void> {
  await tx.query(LOCK_APPLICATION, [applicationId]);
}

const ACTIVE_STAGES = statement(
  'engine_active_stages',
  `SELECT count(*)::int AS n FROM stages WHERE application_id = $1 AND status IN ('Pending', 'Running')`,
);

/** Pending + Running stages of an application (APP_MAX_ACTIVE_STAGES); read under lockApplication. */
export async function activeStages(tx: Queryable, applicationId: number): Promise<number> {
  const [row] = await tx.query<{ n: number }>(ACTIVE_STAGES, [applicationId]);
  return row!.n;
}

const KEY_LOAD = statement(
  'engine_key_load',
  `SELECT key AS name, in_flight AS n FROM concurrency_keys WHERE application_id = $1 AND key = ANY($2::text[])`,
);

/**
 * Pending + Running stages per key, for the keys named: the rows the stages triggers keep
 * (decision 0135), one probe per key however many stages a key has in flight.
 */
export async function keyLoad(tx: Queryable, applicationId: number, keys: readonly string[]): Promise<Map<string, number>> {
  if (keys.length === 0) return new Map();
  const rows = await tx.query<{ name: string; n: number }>(KEY_LOAD, [applicationId, keys]);
  return new Map(rows.map((r) => [r.name, r.n]));
}

export interface HandlerSettingsRow {
  applicationId: number;
  handler: string;
  paused: boolean;
  maxConcurrent: number | null;
  maxPerSecond: number | null;
  tokens: number;
  tokensAt: Date | null;
}

const HANDLER_SETTINGS = statement(
  'engine_handler_settings',
  `SELECT h.application_id, h.handler_name, h.paused, h.max_concurrent, h.max_per_second, h.tokens, h.tokens_at
   FROM unnest($1::int[], $2::text[]) AS d(application_id, handler_name)
   JOIN handler_settings h ON h.application_id = d.application_id AND h.handler_name = d.handler_name`,
);

/** The settings rows of the (application, handler) pairs named; a pair without a row has no settings. */
export async function readHandlerSettings(tx: Queryable, pairs: readonly { applicationId: number; handler: string }[]): Promise<Map<string, HandlerSettingsRow>> {
  if (pairs.length === 0) return new Map();
  const rows = await tx.query<{
    application_id: number;
    handler_name: string;
    paused: boolean;
    max_concurrent: number | null;
    max_per_second: number | null;
    tokens: number;
    tokens_at: Date | null;
  }>(HANDLER_SETTINGS, [pairs.map((p) => p.applicationId), pairs.map((p) => p.handler)]);
  return new Map(
    rows.map((r) => [
      settingsKey(r.application_id, r.handler_name),
      {
        applicationId: r.application_id,
        handler: r.handler_name,
        paused: r.paused,
        maxConcurrent: r.max_concurrent,
        maxPerSecond: r.max_per_second,
        tokens: r.tokens,
        tokensAt: r.tokens_at,
      },
    ]),
  );
}

export const settingsKey = (applicationId: number, handler: string): string => `${applicationId}\u0000${handler}`;

const WRITE_TOKENS = statement(
  'engine_write_tokens',
  `UPDATE handler_settings h SET tokens = d.tokens, tokens_at = d.at
   FROM unnest($1::int[], $2::text[], $3::float8[], $4::timestamptz[]) AS d(application_id, handler_name, tokens, at)
   WHERE h.application_id = d.application_id AND h.handler_name = d.handler_name`,
);

/** Stores the rate buckets the batch took tokens from (under lockApplication). */
export async function writeTokens(tx: Queryable, buckets: readonly { applicationId: number; handler: string; tokens: number; at: Date }[]): Promise<void> {
  if (buckets.length === 0) return;
  await tx.query(WRITE_TOKENS, [buckets.map((b) => b.applicationId), buckets.map((b) => b.handler), buckets.map((b) => b.tokens), buckets.map((b) => b.at)]);
}

export interface ThrottledStage {
  id: number;
  pipelineId: number;
  handler: string;
  key: string | null;
  keyLimit: number | null;
  priority: number;
}

/** Keys one read looks at (in key order): beyond them a key waits for a later batch or sweep. */
const MAX_KEYS = 512;

const THROTTLED_IN_ORDER = statement(
  'engine_throttled_in_order',
  // Per key (and the stages without one), each key's first stages by priority and age, from the
  // partial index of Throttled stages: a key with a long backlog adds no more rows than a short one.
  // The keys are found by skipping from one to the next through the index (a recursive CTE, one
  // probe per key): DISTINCT read every entry, and visited the heap for each (ms at a few thousand
  // Throttled stages, measured by the fairness bench).
  `WITH RECURSIVE keys AS (
     (SELECT concurrency_key, 1 AS n FROM stages
      WHERE application_id = $1 AND status = 'Throttled' AND concurrency_key IS NOT NULL
      ORDER BY concurrency_key LIMIT 1)
     UNION ALL
     SELECT (SELECT s.concurrency_key FROM stages s
             WHERE s.application_id = $1 AND s.status = 'Throttled' AND s.concurrency_key > k.concurrency_key
             ORDER BY s.concurrency_key LIMIT 1), k.n + 1
     FROM keys k WHERE k.concurrency_key IS NOT NULL AND k.n < $4
   ), keyed AS (
     SELECT t.* FROM keys k
     CROSS JOIN LATERAL (
       SELECT id, pipeline_id, handler_name, concurrency_key, priority FROM stages
       WHERE application_id = $1 AND status = 'Throttled' AND concurrency_key = k.concurrency_key
       ORDER BY priority, id LIMIT $2) t
     WHERE k.concurrency_key IS NOT NULL
   ), unkeyed AS (
     SELECT id, pipeline_id, handler_name, concurrency_key, priority FROM stages
     WHERE application_id = $1 AND status = 'Throttled' AND concurrency_key IS NULL
     ORDER BY priority, id LIMIT $2
   ), picked AS (
     SELECT * FROM keyed UNION ALL SELECT * FROM unkeyed ORDER BY priority, id LIMIT $3
   )
   SELECT p.id, p.pipeline_id, p.handler_name, p.concurrency_key, p.priority, (s.options->>'concurrencyLimit')::int AS key_limit
   FROM picked p JOIN stages s ON s.id = p.id`,
  // Generic and prepared once per connection: every step is a probe of the partial index, and the
  // engine's transactions plan generically with sequential scans off anyway. Sent unnamed
  // ({ plan: 'custom' }), it was parsed and planned on every freeing batch: 0.4 ms of planning
  // against 0.02 of execution (fairness bench, decision 0135).
);

/**
 * An application's Throttled stages that may take room a batch has: up to `perKey` of each key
 * (and of the stages without a key), `total` at most. admitStages decides among them.
 */
export async function throttledStages(tx: Queryable, applicationId: number, perKey: number, total: number): Promise<ThrottledStage[]> {
  const rows = await tx.query<{ id: string; pipeline_id: string; handler_name: string; concurrency_key: string | null; priority: number; key_limit: number | null }>(
    THROTTLED_IN_ORDER,
    [applicationId, perKey, total, MAX_KEYS],
  );
  return rows.map((r) => ({
    id: Number(r.id),
    pipelineId: Number(r.pipeline_id),
    handler: r.handler_name,
    key: r.concurrency_key,
    keyLimit: r.key_limit,
    priority: r.priority,
  }));
}
