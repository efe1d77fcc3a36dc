-- DropIndex
DROP INDEX "pipelines_status_dispatched_idx";

-- DropIndex
DROP INDEX "stage_executions_ended_at_lease_expires_at_idx";

-- DropIndex
DROP INDEX "stage_executions_ended_at_published_at_idx";

-- DropIndex
DROP INDEX "stage_executions_ended_at_timeout_at_idx";

-- DropIndex
DROP INDEX "stages_status_next_retry_at_idx";

-- AlterTable
ALTER TABLE "stage_executions" DROP COLUMN "published_at";

-- CreateIndex
CREATE INDEX "stage_executions_ended_at_idx" ON "stage_executions"("ended_at");

-- Room on every page for the new version of a row updated in place, so an update that changes no
-- indexed column stays on its page (a HOT update) and rewrites no index entry (decision 0060).
ALTER TABLE "pipelines" SET (fillfactor = 80);
ALTER TABLE "stages" SET (fillfactor = 80);
ALTER TABLE "stage_executions" SET (fillfactor = 80);

-- The services cache valid API keys for a few seconds; a change to a key (disable, expiry, delete)
-- is announced at commit so every cache drops it at once (decision 0063).
CREATE FUNCTION po_notify_api_key_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('po_api_keys', OLD.key_hash);
  RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_changed AFTER UPDATE OR DELETE ON "api_keys"
  FOR EACH ROW EXECUTE FUNCTION po_notify_api_key_change();
