-- A concurrency key's in-flight count kept in a row (decision 0135). The engine counted a key's
-- Pending and Running stages under the application's advisory lock at every admission: O(the key's
-- in-flight stages), 1-1.5 ms a batch with 5,000 of them (issue 31's fairness bench). The triggers
-- below keep the count as stages enter and leave those statuses, whichever statement moves them.

CREATE TABLE "concurrency_keys" (
    "application_id" INTEGER NOT NULL,
    "key" VARCHAR(255) NOT NULL,
    "in_flight" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "concurrency_keys_pkey" PRIMARY KEY ("application_id","key")
);

CREATE FUNCTION "concurrency_key_count"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' AND OLD.concurrency_key IS NOT NULL AND OLD.status IN ('Pending', 'Running') THEN
    UPDATE concurrency_keys SET in_flight = in_flight - 1
    WHERE application_id = OLD.application_id AND key = OLD.concurrency_key;
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.concurrency_key IS NOT NULL AND NEW.status IN ('Pending', 'Running') THEN
    INSERT INTO concurrency_keys AS k (application_id, key, in_flight) VALUES (NEW.application_id, NEW.concurrency_key, 1)
    ON CONFLICT (application_id, key) DO UPDATE SET in_flight = k.in_flight + 1;
  END IF;
  RETURN NULL;
END
$$;

-- Row triggers with WHEN: a stage without a key, or a move within (or outside) Pending/Running (a
-- lease: Pending -> Running), costs the condition only. Every engine statement that moves a keyed
-- stage in or out holds the application's advisory lock (flow-control.ts), so two transactions
-- never take two key rows in opposite orders.
CREATE TRIGGER "stages_key_count_insert" AFTER INSERT ON "stages" FOR EACH ROW
  WHEN (NEW.concurrency_key IS NOT NULL AND NEW.status IN ('Pending', 'Running'))
  EXECUTE FUNCTION concurrency_key_count();
CREATE TRIGGER "stages_key_count_update" AFTER UPDATE OF "status", "concurrency_key" ON "stages" FOR EACH ROW
  WHEN ((OLD.concurrency_key IS NOT NULL OR NEW.concurrency_key IS NOT NULL)
        AND ((OLD.status IN ('Pending', 'Running')) IS DISTINCT FROM (NEW.status IN ('Pending', 'Running'))
             OR OLD.concurrency_key IS DISTINCT FROM NEW.concurrency_key))
  EXECUTE FUNCTION concurrency_key_count();
CREATE TRIGGER "stages_key_count_delete" AFTER DELETE ON "stages" FOR EACH ROW
  WHEN (OLD.concurrency_key IS NOT NULL AND OLD.status IN ('Pending', 'Running'))
  EXECUTE FUNCTION concurrency_key_count();

-- The counts as they stand: CREATE TRIGGER above holds a lock on stages that keeps writers out until
-- this migration commits, so none moves between the count and the triggers.
INSERT INTO concurrency_keys (application_id, key, in_flight)
SELECT application_id, concurrency_key, count(*)::int FROM stages
WHERE concurrency_key IS NOT NULL AND status IN ('Pending', 'Running')
GROUP BY 1, 2;

-- Read by nothing now (the count above was its one reader); every keyed stage's moves paid for it.
DROP INDEX IF EXISTS "stages_inflight_key_idx";
