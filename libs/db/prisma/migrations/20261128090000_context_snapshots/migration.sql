-- A pipeline context too large to copy into every StageNext message is written once per distinct
-- content, and the messages name it (decision 0121). The id is derived from the pipeline and the
-- content, so dispatching again with an unchanged context writes nothing. Deleted with their
-- pipeline by retention.
CREATE TABLE "context_snapshots" (
    "id" UUID NOT NULL,
    "pipeline_id" BIGINT NOT NULL,
    "application_id" INTEGER NOT NULL,
    "items" TEXT NOT NULL,
    "bytes" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "context_snapshots_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "context_snapshots_pipeline_id_idx" ON "context_snapshots"("pipeline_id");
