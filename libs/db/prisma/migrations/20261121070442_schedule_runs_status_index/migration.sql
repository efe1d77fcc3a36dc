-- CreateIndex
CREATE INDEX "schedule_runs_status_schedule_id_idx" ON "schedule_runs"("status", "schedule_id");
