-- GET /pipelines (search, newest first, keyset pages), POST /pipelines/{id}/rerun and signed page
-- cursors (issue 12; decision 0089, docs/search.md).
--
-- Every index lets a filter walk the application's pipelines newest first, (created_at, id)
-- descending, or find its few matches without reading the table. Two replace indexes that only
-- were their prefix (same count, wider entries); the others are new. What each costs a write is in
-- decision 0089.
--
-- A migration runs in one transaction, so these are plain CREATE INDEX: each holds a SHARE lock on
-- its table (writes wait) while it builds. On a large existing database, create them beforehand
-- with CREATE INDEX CONCURRENTLY under the same names (docs/search.md); IF NOT EXISTS then makes
-- this a no-op.

-- AlterTable: the pipeline a rerun was made from. No foreign key: retention deletes old pipelines,
-- and a rerun outlives its original (its rerunOf then names a pipeline that answers 404).
ALTER TABLE "pipelines" ADD COLUMN "rerun_of" BIGINT;

-- status (+ createdAfter/createdBefore): replaces (application_id, status), which nothing read alone.
DROP INDEX IF EXISTS "pipelines_application_id_status_idx";
CREATE INDEX IF NOT EXISTS "pipelines_application_id_status_created_at_id_idx" ON "pipelines"("application_id", "status", "created_at" DESC, "id" DESC);

-- no filter, createdAfter/createdBefore, and the walk of filters that match many pipelines.
CREATE INDEX IF NOT EXISTS "pipelines_application_id_created_at_id_idx" ON "pipelines"("application_id", "created_at" DESC, "id" DESC);

-- name (case-insensitive prefix): LIKE 'prefix%' on lower(name) is a range of this index whatever
-- the database's collation (text_pattern_ops); one exact name is in newest-first order. With the
-- name included, a prefix's matches are counted and read from the index alone (PostgreSQL rechecks
-- the LIKE on the name, which it only has without a heap visit when the index holds it). An
-- expression index, which schema.prisma cannot declare (Prisma's diff leaves it alone).
CREATE INDEX IF NOT EXISTS "pipelines_search_name_idx" ON "pipelines"("application_id", lower("name") text_pattern_ops, "created_at" DESC, "id" DESC) INCLUDE ("name");

-- scheduleName: only scheduled pipelines have an entry (partial, so schema.prisma does not declare
-- it either). (schedule_id, status) stays for the scheduler's overlap checks.
CREATE INDEX IF NOT EXISTS "pipelines_schedule_id_created_at_id_idx" ON "pipelines"("schedule_id", "created_at" DESC, "id" DESC) WHERE "schedule_id" IS NOT NULL;

-- reruns of a pipeline (the `reruns` of its read): only reruns have an entry.
CREATE INDEX IF NOT EXISTS "pipelines_rerun_of_idx" ON "pipelines"("rerun_of", "id" DESC) WHERE "rerun_of" IS NOT NULL;

-- keyword: replaces (key, value); with the pipeline id the matches of a keyword are read from the
-- index alone, and a pipeline's check for one keyword is one index probe.
DROP INDEX IF EXISTS "pipeline_keywords_key_value_idx";
CREATE INDEX IF NOT EXISTS "pipeline_keywords_key_value_pipeline_id_idx" ON "pipeline_keywords"("key", "value", "pipeline_id");

-- stageHandlerName: the application's stages of one handler, and a pipeline's check, from the index alone.
CREATE INDEX IF NOT EXISTS "stages_application_id_handler_name_pipeline_id_idx" ON "stages"("application_id", "handler_name", "pipeline_id");

-- CreateTable: the key that signs page cursors, shared by every replica without configuration.
-- PostgreSQL draws it once, here (two random UUIDs: 244 random bits); the services read it once
-- per process. Row 1 is the key in use (libs/db/src/repositories/cursor-secret.ts).
CREATE TABLE IF NOT EXISTS "cursor_secrets" (
    "id" SMALLINT NOT NULL DEFAULT 1,
    "secret" TEXT NOT NULL DEFAULT ((gen_random_uuid())::text || (gen_random_uuid())::text),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "cursor_secrets_pkey" PRIMARY KEY ("id")
);

INSERT INTO "cursor_secrets" ("id") VALUES (1) ON CONFLICT DO NOTHING;
