-- A worker session ends with the API key that bootstrapped it (decision 0082). Sessions from before
-- this migration have no key and end by their TTL; the column stays nullable so that gateways of the
-- previous release can still bootstrap while a rollout is under way.

-- AlterTable
ALTER TABLE "worker_sessions" ADD COLUMN "api_key_id" INTEGER;

-- CreateIndex
CREATE INDEX "worker_sessions_api_key_id_idx" ON "worker_sessions"("api_key_id");

-- AddForeignKey
ALTER TABLE "worker_sessions" ADD CONSTRAINT "worker_sessions_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;
