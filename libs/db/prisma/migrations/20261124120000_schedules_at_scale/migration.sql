-- Schedules at scale (issue 11). handled_through: with jitter larger than the period, ticks after
-- next_tick_at may already have fired; the scheduler handles each tick once, at its own jittered
-- instant, and this watermark says which of the later ones are done. Null (every existing row):
-- none are, which is what the previous release's in-order walk left behind.
-- backfill_tick: POST /schedules/{name}/backfill makes at most one run per tick of its own,
-- without claiming the schedule's ticks (unique schedule_id, tick stays theirs).

-- AlterTable
ALTER TABLE "schedules" ADD COLUMN "handled_through" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "schedule_runs" ADD COLUMN "backfill_tick" TIMESTAMPTZ(3);

-- CreateIndex
CREATE UNIQUE INDEX "schedule_runs_schedule_id_backfill_tick_key" ON "schedule_runs"("schedule_id", "backfill_tick");
