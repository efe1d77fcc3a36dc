-- CreateEnum
CREATE TYPE "PipelineStatus" AS ENUM ('NotStarted', 'Pending', 'Running', 'Paused', 'Completed', 'Failed', 'Cancelled');

-- CreateEnum
CREATE TYPE "StageStatus" AS ENUM ('NotStarted', 'Running', 'Pending', 'RetryScheduled', 'Throttled', 'WaitingForApproval', 'Completed', 'Failed', 'Skipped', 'Cancelled');

-- CreateEnum
CREATE TYPE "ScheduleStatus" AS ENUM ('Active', 'Paused', 'Archived');

-- CreateEnum
CREATE TYPE "ScheduleKind" AS ENUM ('Cron', 'Interval', 'Once');

-- CreateEnum
CREATE TYPE "WorkerStatus" AS ENUM ('Active', 'Stopped');

-- CreateTable
CREATE TABLE "applications" (
    "id" SERIAL NOT NULL,
    "name" VARCHAR(200) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "applications_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" SERIAL NOT NULL,
    "application_id" INTEGER NOT NULL,
    "key_hash" CHAR(64) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3),
    "disabled_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "pipelines" (
    "id" BIGSERIAL NOT NULL,
    "application_id" INTEGER NOT NULL,
    "name" VARCHAR(255) NOT NULL,
    "trace_id" VARCHAR(36) NOT NULL,
    "status" "PipelineStatus" NOT NULL DEFAULT 'NotStarted',
    "dispatched" BOOLEAN NOT NULL DEFAULT false,
    "policies" JSONB,
    "idempotency_key" VARCHAR(200),
    "schedule_id" BIGINT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "pipelines_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "idempotency_keys" (
    "application_id" INTEGER NOT NULL,
    "key" VARCHAR(200) NOT NULL,
    "pipeline_id" BIGINT NOT NULL,
    "intent_hash" CHAR(64) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("application_id","key")
);

-- CreateTable
CREATE TABLE "stages" (
    "id" BIGSERIAL NOT NULL,
    "pipeline_id" BIGINT NOT NULL,
    "application_id" INTEGER NOT NULL,
    "position" INTEGER NOT NULL,
    "name" VARCHAR(255) NOT NULL,
    "handler_name" VARCHAR(300) NOT NULL,
    "description" VARCHAR(255),
    "input" TEXT NOT NULL DEFAULT '',
    "options" JSONB NOT NULL,
    "policies" JSONB,
    "is_event" BOOLEAN NOT NULL DEFAULT false,
    "span_id" CHAR(16) NOT NULL,
    "status" "StageStatus" NOT NULL DEFAULT 'NotStarted',
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "retry_attempt" INTEGER NOT NULL DEFAULT 0,
    "failure_count" INTEGER NOT NULL DEFAULT 0,
    "last_failed_at" TIMESTAMPTZ(3),
    "last_error_code" VARCHAR(200),
    "failure_disposition" VARCHAR(16),
    "next_retry_at" TIMESTAMPTZ(3),
    "output" TEXT,
    "current_execution_id" UUID,
    "approved" BOOLEAN,
    "rejection_reason" TEXT,
    "decided_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "stages_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "stage_executions" (
    "id" UUID NOT NULL,
    "stage_id" BIGINT NOT NULL,
    "application_id" INTEGER NOT NULL,
    "attempt" INTEGER,
    "lease_owner" VARCHAR(64),
    "leased_at" TIMESTAMPTZ(3),
    "lease_expires_at" TIMESTAMPTZ(3),
    "timeout_at" TIMESTAMPTZ(3),
    "dispatched_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "ended_at" TIMESTAMPTZ(3),
    "end_reason" VARCHAR(32),

    CONSTRAINT "stage_executions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "stage_logs" (
    "id" BIGSERIAL NOT NULL,
    "stage_id" BIGINT NOT NULL,
    "pipeline_id" BIGINT NOT NULL,
    "message" TEXT NOT NULL,
    "log_level" VARCHAR(32) NOT NULL DEFAULT 'Information',
    "created" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "stage_logs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "context_items" (
    "id" BIGSERIAL NOT NULL,
    "pipeline_id" BIGINT NOT NULL,
    "key" VARCHAR(300) NOT NULL,
    "value" TEXT NOT NULL DEFAULT '',
    "value_type" TEXT,
    "is_sensitive" BOOLEAN NOT NULL DEFAULT false,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "context_items_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "pipeline_keywords" (
    "id" BIGSERIAL NOT NULL,
    "pipeline_id" BIGINT NOT NULL,
    "key" VARCHAR(300) NOT NULL,
    "value" VARCHAR(300) NOT NULL,

    CONSTRAINT "pipeline_keywords_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "schedules" (
    "id" BIGSERIAL NOT NULL,
    "application_id" INTEGER NOT NULL,
    "name" VARCHAR(200) NOT NULL,
    "name_key" VARCHAR(200) NOT NULL,
    "status" "ScheduleStatus" NOT NULL DEFAULT 'Active',
    "kind" "ScheduleKind" NOT NULL,
    "cron_expression" VARCHAR(200),
    "time_zone" VARCHAR(64) NOT NULL DEFAULT 'UTC',
    "interval_seconds" INTEGER,
    "run_at" TIMESTAMPTZ(3),
    "definition" JSONB NOT NULL,
    "definition_version" INTEGER NOT NULL DEFAULT 1,
    "overlap_policy" VARCHAR(16) NOT NULL DEFAULT 'Skip',
    "catchup_policy" VARCHAR(16) NOT NULL DEFAULT 'None',
    "catchup_max" INTEGER NOT NULL DEFAULT 10,
    "jitter_seconds" INTEGER NOT NULL DEFAULT 0,
    "plan_anchor" TIMESTAMPTZ(3) NOT NULL,
    "next_tick_at" TIMESTAMPTZ(3),
    "next_run_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "schedules_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "schedule_runs" (
    "id" BIGSERIAL NOT NULL,
    "schedule_id" BIGINT NOT NULL,
    "application_id" INTEGER NOT NULL,
    "trigger" VARCHAR(16) NOT NULL,
    "status" VARCHAR(16) NOT NULL,
    "scheduled_for" TIMESTAMPTZ(3) NOT NULL,
    "tick" TIMESTAMPTZ(3),
    "pipeline_id" BIGINT,
    "reason" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "schedule_runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "workers" (
    "id" VARCHAR(64) NOT NULL,
    "application_id" INTEGER NOT NULL,
    "instance_id" VARCHAR(200) NOT NULL,
    "worker_name" VARCHAR(200),
    "handlers" TEXT[],
    "sdk_version" VARCHAR(100),
    "hostname" VARCHAR(255),
    "metadata" JSONB,
    "status" "WorkerStatus" NOT NULL DEFAULT 'Active',
    "last_heartbeat_at" TIMESTAMPTZ(3),
    "in_flight" INTEGER,
    "processed" INTEGER,
    "failed" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workers_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "worker_sessions" (
    "token_hash" CHAR(64) NOT NULL,
    "worker_id" VARCHAR(64) NOT NULL,
    "application_id" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "superseded_at" TIMESTAMPTZ(3),

    CONSTRAINT "worker_sessions_pkey" PRIMARY KEY ("token_hash")
);

-- CreateTable
CREATE TABLE "worker_events" (
    "id" BIGSERIAL NOT NULL,
    "worker_id" VARCHAR(64) NOT NULL,
    "application_id" INTEGER NOT NULL,
    "kind" VARCHAR(32) NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "message" TEXT,
    "stage_id" BIGINT,
    "pipeline_id" BIGINT,
    "data" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "worker_events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "system_logs" (
    "id" BIGSERIAL NOT NULL,
    "application_id" INTEGER,
    "message" TEXT NOT NULL,
    "log_level" VARCHAR(32) NOT NULL DEFAULT 'Information',
    "pipeline_id" BIGINT,
    "stage_id" BIGINT,
    "keywords" JSONB,
    "created" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "system_logs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys"("key_hash");

-- CreateIndex
CREATE INDEX "api_keys_application_id_idx" ON "api_keys"("application_id");

-- CreateIndex
CREATE INDEX "pipelines_application_id_status_idx" ON "pipelines"("application_id", "status");

-- CreateIndex
CREATE INDEX "pipelines_schedule_id_status_idx" ON "pipelines"("schedule_id", "status");

-- CreateIndex
CREATE INDEX "pipelines_status_dispatched_idx" ON "pipelines"("status", "dispatched");

-- CreateIndex
CREATE INDEX "stages_application_id_status_idx" ON "stages"("application_id", "status");

-- CreateIndex
CREATE INDEX "stages_status_next_retry_at_idx" ON "stages"("status", "next_retry_at");

-- CreateIndex
CREATE UNIQUE INDEX "stages_pipeline_id_position_key" ON "stages"("pipeline_id", "position");

-- CreateIndex
CREATE INDEX "stage_executions_stage_id_idx" ON "stage_executions"("stage_id");

-- CreateIndex
CREATE INDEX "stage_executions_ended_at_lease_expires_at_idx" ON "stage_executions"("ended_at", "lease_expires_at");

-- CreateIndex
CREATE INDEX "stage_executions_ended_at_timeout_at_idx" ON "stage_executions"("ended_at", "timeout_at");

-- CreateIndex
CREATE INDEX "stage_logs_stage_id_created_id_idx" ON "stage_logs"("stage_id", "created", "id");

-- CreateIndex
CREATE UNIQUE INDEX "context_items_pipeline_id_key_key" ON "context_items"("pipeline_id", "key");

-- CreateIndex
CREATE INDEX "pipeline_keywords_pipeline_id_idx" ON "pipeline_keywords"("pipeline_id");

-- CreateIndex
CREATE INDEX "pipeline_keywords_key_value_idx" ON "pipeline_keywords"("key", "value");

-- CreateIndex
CREATE INDEX "schedules_status_next_run_at_idx" ON "schedules"("status", "next_run_at");

-- CreateIndex
CREATE UNIQUE INDEX "schedules_application_id_name_key_key" ON "schedules"("application_id", "name_key");

-- CreateIndex
CREATE INDEX "schedule_runs_schedule_id_id_idx" ON "schedule_runs"("schedule_id", "id");

-- CreateIndex
CREATE INDEX "schedule_runs_schedule_id_status_idx" ON "schedule_runs"("schedule_id", "status");

-- CreateIndex
CREATE UNIQUE INDEX "schedule_runs_schedule_id_tick_key" ON "schedule_runs"("schedule_id", "tick");

-- CreateIndex
CREATE UNIQUE INDEX "workers_application_id_instance_id_key" ON "workers"("application_id", "instance_id");

-- CreateIndex
CREATE INDEX "worker_sessions_worker_id_idx" ON "worker_sessions"("worker_id");

-- CreateIndex
CREATE INDEX "worker_events_worker_id_id_idx" ON "worker_events"("worker_id", "id");

-- CreateIndex
CREATE INDEX "system_logs_application_id_id_idx" ON "system_logs"("application_id", "id");

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_application_id_fkey" FOREIGN KEY ("application_id") REFERENCES "applications"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stages" ADD CONSTRAINT "stages_pipeline_id_fkey" FOREIGN KEY ("pipeline_id") REFERENCES "pipelines"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stage_executions" ADD CONSTRAINT "stage_executions_stage_id_fkey" FOREIGN KEY ("stage_id") REFERENCES "stages"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stage_logs" ADD CONSTRAINT "stage_logs_stage_id_fkey" FOREIGN KEY ("stage_id") REFERENCES "stages"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "context_items" ADD CONSTRAINT "context_items_pipeline_id_fkey" FOREIGN KEY ("pipeline_id") REFERENCES "pipelines"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "pipeline_keywords" ADD CONSTRAINT "pipeline_keywords_pipeline_id_fkey" FOREIGN KEY ("pipeline_id") REFERENCES "pipelines"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "schedule_runs" ADD CONSTRAINT "schedule_runs_schedule_id_fkey" FOREIGN KEY ("schedule_id") REFERENCES "schedules"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "worker_sessions" ADD CONSTRAINT "worker_sessions_worker_id_fkey" FOREIGN KEY ("worker_id") REFERENCES "workers"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "worker_events" ADD CONSTRAINT "worker_events_worker_id_fkey" FOREIGN KEY ("worker_id") REFERENCES "workers"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
