-- The indexes flow control reads (decision 0132). A migration runs in one transaction, so these are
-- plain CREATE INDEX: each holds a SHARE lock on stages (writes wait) while it builds. On a large
-- existing database, create them beforehand with CREATE INDEX CONCURRENTLY under the same names;
-- IF NOT EXISTS then makes this a no-op. (A migration of CONCURRENTLY statements, decision 0115,
-- deadlocks when several deploys run at once: see the note of issue 31's session.)

-- In-flight stages (Pending and Running) of a key: counted under the application's advisory lock.
CREATE INDEX IF NOT EXISTS "stages_inflight_key_idx" ON "stages" ("application_id", "concurrency_key")
  WHERE "status" IN ('Pending', 'Running');
-- In-flight stages of a handler (maxConcurrent, GET /handlers running).
CREATE INDEX IF NOT EXISTS "stages_inflight_handler_idx" ON "stages" ("application_id", "handler_name")
  WHERE "status" IN ('Pending', 'Running');
-- Throttled stages in the order a freed slot is given (priority, then per key oldest first).
CREATE INDEX IF NOT EXISTS "stages_throttled_order_idx" ON "stages" ("application_id", "concurrency_key", "priority", "id")
  INCLUDE ("pipeline_id", "handler_name")
  WHERE "status" = 'Throttled';
