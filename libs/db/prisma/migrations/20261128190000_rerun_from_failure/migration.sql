-- Rerun from the failure (issue 32, decision 0133): a stage carried over, Completed, from the
-- original run names the original's stage. A nullable column without a default: no table rewrite.
ALTER TABLE "stages" ADD COLUMN "carried_over_from" BIGINT;

-- Its logs are copies of the original's, marked. A constant default is stored in the catalog (no
-- rewrite since PostgreSQL 11).
ALTER TABLE "stage_logs" ADD COLUMN "carried_over" BOOLEAN NOT NULL DEFAULT false;
