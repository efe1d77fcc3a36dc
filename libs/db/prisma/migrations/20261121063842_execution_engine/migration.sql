-- AlterTable
ALTER TABLE "pipelines" ADD COLUMN     "dispatch_requested_at" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "stage_executions" ADD COLUMN     "published_at" TIMESTAMPTZ(3);

-- CreateIndex
CREATE INDEX "pipelines_dispatch_requested_at_idx" ON "pipelines"("dispatch_requested_at");

-- CreateIndex
CREATE INDEX "stage_executions_ended_at_published_at_idx" ON "stage_executions"("ended_at", "published_at");
