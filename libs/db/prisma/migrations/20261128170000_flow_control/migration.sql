-- Flow control (issue 31, decision 0132): concurrency keys, priorities and per-handler settings.
-- Every ADD COLUMN here has a constant default or none, so none rewrites the table or holds its
-- lock beyond the catalog change: safe to apply while the previous release runs. The indexes
-- that go with them are the next migration's.

-- The normalised options (stages.options) hold the same values; these columns exist so the engine
-- can count and order by them through an index.
ALTER TABLE "stages" ADD COLUMN "concurrency_key" VARCHAR(255);
ALTER TABLE "stages" ADD COLUMN "priority" SMALLINT NOT NULL DEFAULT 3;

-- A pipeline's priority: the default of its stages, appended ones included.
ALTER TABLE "pipelines" ADD COLUMN "priority" SMALLINT NOT NULL DEFAULT 3;

-- A handler's settings in one application (PUT /handlers/{name}); no row = not paused, no limits.
-- tokens / tokens_at: the maxPerSecond bucket, refilled lazily by the engine under the
-- application's advisory lock.
CREATE TABLE "handler_settings" (
    "application_id" INTEGER NOT NULL,
    "handler_name" VARCHAR(300) NOT NULL,
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "max_concurrent" INTEGER,
    "max_per_second" DOUBLE PRECISION,
    "tokens" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "tokens_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "handler_settings_pkey" PRIMARY KEY ("application_id", "handler_name")
);
