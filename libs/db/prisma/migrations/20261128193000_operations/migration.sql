-- Bulk rerun and cancel (issue 32, decision 0133): an operation of an application and the
-- pipelines it matched when it was created. New tables only.
CREATE TABLE "operations" (
    "id" BIGSERIAL NOT NULL,
    "application_id" INTEGER NOT NULL,
    "kind" VARCHAR(16) NOT NULL,
    "status" VARCHAR(16) NOT NULL DEFAULT 'Running',
    "filter" JSONB NOT NULL,
    "rerun_from" VARCHAR(16),
    "max_per_second" INTEGER NOT NULL,
    "matched" INTEGER NOT NULL DEFAULT 0,
    "done" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    -- The pipeline-service replica running it, until when (a lease renewed every tick).
    "runner" VARCHAR(64),
    "runner_until" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "operations_pkey" PRIMARY KEY ("id")
);

-- One operation of a kind runs per application at a time.
CREATE UNIQUE INDEX "operations_one_running_idx" ON "operations" ("application_id", "kind") WHERE "status" = 'Running';
-- What the runners look at.
CREATE INDEX "operations_running_idx" ON "operations" ("id") WHERE "status" = 'Running';

CREATE TABLE "operation_items" (
    "operation_id" BIGINT NOT NULL,
    "pipeline_id" BIGINT NOT NULL,
    "state" VARCHAR(8) NOT NULL DEFAULT 'todo',
    -- A rerun's new pipeline.
    "result_pipeline_id" BIGINT,
    "reason" TEXT,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "operation_items_pkey" PRIMARY KEY ("operation_id", "pipeline_id")
);

-- The next items to apply, in pipeline id order, and the failures to show.
CREATE INDEX "operation_items_todo_idx" ON "operation_items" ("operation_id", "pipeline_id") WHERE "state" = 'todo';
CREATE INDEX "operation_items_failed_idx" ON "operation_items" ("operation_id", "pipeline_id") WHERE "state" = 'failed';
