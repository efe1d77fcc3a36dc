-- Indexes the retention cleanup deletes through (decision 0083, docs/retention.md). Each one lets a
-- batch find its oldest rows without scanning the table.
--
-- A migration runs in one transaction, so these are plain CREATE INDEX: each holds a SHARE lock on
-- its table (writes wait) while it builds. On a large existing database, create them beforehand
-- with CREATE INDEX CONCURRENTLY under the same names; IF NOT EXISTS then makes this a no-op.

-- CreateIndex
CREATE INDEX IF NOT EXISTS "pipelines_finished_at_idx" ON "pipelines"("finished_at");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "schedule_runs_created_at_idx" ON "schedule_runs"("created_at");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "schedule_runs_pipeline_id_idx" ON "schedule_runs"("pipeline_id");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "worker_sessions_expires_at_idx" ON "worker_sessions"("expires_at");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "worker_sessions_superseded_at_idx" ON "worker_sessions"("superseded_at");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "worker_events_created_at_idx" ON "worker_events"("created_at");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "system_logs_created_at_idx" ON "system_logs"("created_at");
