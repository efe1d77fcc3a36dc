-- The dashboard (issue 13; decision 0093): GET /overview and GET /worker-events.
--
-- The overview counts what finished in the last hour: these partial indexes hold only finished
-- (Completed or Failed) rows of one application in finish order, with the status included, so the
-- count is an index-only range scan over the hour, whatever the history holds. A row gets its entry
-- in the update that finishes it, which already rewrites the row's other index entries (its status
-- is indexed), and none before: live rows and their updates do not touch them.
--
-- A migration runs in one transaction, so these are plain CREATE INDEX: each holds a SHARE lock on
-- its table (writes wait) while it builds. On a large existing database, create them beforehand
-- with CREATE INDEX CONCURRENTLY under the same names; IF NOT EXISTS then makes this a no-op.

-- Partial: schema.prisma cannot declare them (Prisma's diff leaves them alone).
CREATE INDEX IF NOT EXISTS "stages_finished_by_application_idx" ON "stages"("application_id", "finished_at") INCLUDE ("status") WHERE "status" IN ('Completed', 'Failed');
CREATE INDEX IF NOT EXISTS "pipelines_finished_by_application_idx" ON "pipelines"("application_id", "finished_at") INCLUDE ("status") WHERE "status" IN ('Completed', 'Failed');

-- GET /worker-events: the application's events newest first, across its workers.
CREATE INDEX IF NOT EXISTS "worker_events_application_id_id_idx" ON "worker_events"("application_id", "id");
