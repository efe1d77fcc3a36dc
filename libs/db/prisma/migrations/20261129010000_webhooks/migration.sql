-- Signed webhooks (issue 32, decision 0134): an application's endpoints and the outbox of their
-- deliveries. The outbox rows of pipeline and stage events are written by triggers, in the
-- transaction that makes the change: no engine statement changes, and an application without
-- webhooks pays one index probe per terminal pipeline or failed stage. New tables only.
CREATE TABLE "webhooks" (
    "id" BIGSERIAL NOT NULL,
    "application_id" INTEGER NOT NULL,
    "name" VARCHAR(100) NOT NULL,
    "url" VARCHAR(2048) NOT NULL,
    "events" TEXT[] NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    -- The signing key (whsec_…): an HMAC needs it, so it is kept, and shown once, at creation.
    "secret" VARCHAR(100) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhooks_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "webhooks_application_id_name_key" ON "webhooks"("application_id", "name");

CREATE TABLE "webhook_deliveries" (
    -- The webhook-id header: the same on every attempt.
    "id" VARCHAR(40) NOT NULL,
    "application_id" INTEGER NOT NULL,
    "webhook_id" BIGINT NOT NULL,
    "event_type" VARCHAR(40) NOT NULL,
    -- The exact bytes signed and sent.
    "body" TEXT NOT NULL,
    "status" VARCHAR(16) NOT NULL DEFAULT 'Pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    -- Pending: when it is due. A deliverer that takes it moves this past its attempt's deadline,
    -- so one that dies mid-attempt leaves it due again (at least once).
    "next_attempt_at" TIMESTAMPTZ(3),
    "last_response_code" INTEGER,
    "last_error" VARCHAR(500),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "delivered_at" TIMESTAMPTZ(3),

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "webhook_deliveries_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- The deliverers' claim: due Pending deliveries only.
CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries"("next_attempt_at") WHERE "status" = 'Pending';
-- Retention: ended deliveries by age, with the pipelines (RETENTION_PIPELINES_DAYS).
CREATE INDEX "webhook_deliveries_created_at_idx" ON "webhook_deliveries"("created_at");
-- A webhook's delivery log, newest first.
CREATE INDEX "webhook_deliveries_webhook_id_created_at_id_idx" ON "webhook_deliveries"("webhook_id", "created_at" DESC, "id" DESC);

CREATE FUNCTION "webhook_iso"(t TIMESTAMPTZ) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- One outbox row per enabled webhook of the application that takes the event.
CREATE FUNCTION "webhook_enqueue"(app INTEGER, event TEXT, data JSON) RETURNS VOID LANGUAGE sql AS $$
  INSERT INTO webhook_deliveries (id, application_id, webhook_id, event_type, body, next_attempt_at)
  SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), w.application_id, w.id, event,
         json_build_object('type', event, 'timestamp', webhook_iso(statement_timestamp()), 'data', data)::text,
         statement_timestamp()
  FROM webhooks w
  WHERE w.application_id = app AND w.enabled AND event = ANY (w.events)
$$;

-- The pipeline summary: never its context, inputs or outputs.
CREATE FUNCTION "webhook_pipeline_event"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM webhook_enqueue(NEW.application_id, 'pipeline.' || lower(NEW.status::text), json_build_object(
    'pipelineId', NEW.id, 'name', NEW.name, 'status', NEW.status::text, 'rerunOf', NEW.rerun_of,
    'scheduleId', NEW.schedule_id, 'createdAt', webhook_iso(NEW.created_at), 'finishedAt', webhook_iso(NEW.finished_at)));
  RETURN NULL;
END
$$;

CREATE TRIGGER "pipelines_webhook_event" AFTER UPDATE OF "status" ON "pipelines" FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('Completed', 'Failed', 'Cancelled'))
  EXECUTE FUNCTION webhook_pipeline_event();

-- The stage summary: never its input or output.
CREATE FUNCTION "webhook_stage_event"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM webhook_enqueue(NEW.application_id,
    CASE NEW.status WHEN 'Failed' THEN 'stage.failed' ELSE 'stage.waiting_for_approval' END,
    json_build_object(
      'pipelineId', NEW.pipeline_id, 'stageId', NEW.id, 'stageName', NEW.name, 'stageHandlerName', NEW.handler_name,
      'status', NEW.status::text, 'attempt', NEW.attempt, 'errorCode', NEW.last_error_code));
  RETURN NULL;
END
$$;

CREATE TRIGGER "stages_webhook_event" AFTER UPDATE OF "status" ON "stages" FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('Failed', 'WaitingForApproval'))
  EXECUTE FUNCTION webhook_stage_event();
