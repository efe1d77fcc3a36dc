import { randomUUID } from 'node:crypto';
import type { Prisma } from '../generated/prisma/client.js';
import type { DbOrTx } from '../db-types.js';
import { jsonParam, statement, type Queryable } from '../sql.js';

export interface BootstrapInput {
  applicationId: number;
  instanceId: string;
  workerName: string | null;
  handlers: string[];
  sdkVersion: string | null;
  hostname: string | null;
  metadata: Record<string, unknown> | null;
  tokenHash: string;
  /**
   * The API key that bootstrapped the session: the session ends with it (decision 0082). Null only
   * for records written outside the worker protocol (tests, tools): such a session ends by its TTL.
   */
  apiKeyId: number | null;
  now: Date;
  expiresAt: Date;
}

/**
 * Bootstrap (addendum §5.3): one worker record per (application, instanceId), Active, with a new
 * session; every older session of that worker is superseded in the same transaction, so the old
 * token stops working everywhere at once. Call inside a transaction.
 */
export async function bootstrapWorker(tx: DbOrTx, input: BootstrapInput): Promise<{ workerId: string }> {
  const profile = {
    workerName: input.workerName,
    handlers: input.handlers,
    sdkVersion: input.sdkVersion,
    hostname: input.hostname,
    metadata: input.metadata === null ? undefined : (input.metadata as Prisma.InputJsonValue),
    status: 'Active' as const,
  };
  const worker = await tx.worker.upsert({
    where: { applicationId_instanceId: { applicationId: input.applicationId, instanceId: input.instanceId } },
    create: { id: randomUUID(), applicationId: input.applicationId, instanceId: input.instanceId, ...profile },
    update: profile,
    select: { id: true },
  });
  await tx.workerSession.updateMany({ where: { workerId: worker.id, supersededAt: null }, data: { supersededAt: input.now } });
  await tx.workerSession.create({
    data: {
      tokenHash: input.tokenHash,
      workerId: worker.id,
      applicationId: input.applicationId,
      apiKeyId: input.apiKeyId,
      createdAt: input.now,
      expiresAt: input.expiresAt,
    },
  });
  await tx.workerEvent.create({
    data: { workerId: worker.id, applicationId: input.applicationId, kind: 'started', at: input.now, message: 'bootstrap' },
  });
  return { workerId: worker.id };
}

/**
 * Ends the sessions a disabled key may have bootstrapped (decision 0082): its own, and those of
 * its application that predate the key link (they could be its). Workers of the application's
 * other keys re-bootstrap on their next 401.
 */
export async function endKeySessions(db: DbOrTx, key: { keyId: number; applicationId: number }, now: Date): Promise<number> {
  const { count } = await db.workerSession.updateMany({
    where: { supersededAt: null, OR: [{ apiKeyId: key.keyId }, { apiKeyId: null, applicationId: key.applicationId }] },
    data: { supersededAt: now },
  });
  return count;
}

/** A heartbeat records when it was seen and the counters; after shutdown it makes the worker Active again. */
export async function recordHeartbeat(
  db: DbOrTx,
  workerId: string,
  beat: { now: Date; inFlight?: number; processed?: number; failed?: number },
): Promise<void> {
  await db.worker.update({
    where: { id: workerId },
    data: { lastHeartbeatAt: beat.now, status: 'Active', inFlight: beat.inFlight, processed: beat.processed, failed: beat.failed },
  });
}

export interface WorkerEventInput {
  kind: string;
  at: Date;
  message: string | null;
  stageId: number | null;
  pipelineId: number | null;
  data: Record<string, unknown> | null;
}

/**
 * One batch of POST /workers/events in one prepared statement: the events travel as one JSON
 * array. (Prisma's createMany cost the worker-gateway about 15 ms of CPU per batch of 30; with the
 * SDK's two events per stage that was as much as the rest of a stage's path through it.)
 */
const INSERT_WORKER_EVENTS = statement(
  'worker_events_insert',
  `INSERT INTO worker_events (worker_id, application_id, kind, at, message, stage_id, pipeline_id, data)
   SELECT $1::text, $2::int, e.kind, e.at, e.message, e.stage_id, e.pipeline_id, e.data
   FROM ROWS FROM (jsonb_to_recordset($3::jsonb) AS (kind text, at timestamptz, message text, stage_id bigint, pipeline_id bigint, data jsonb))
        WITH ORDINALITY AS e(kind, at, message, stage_id, pipeline_id, data, ord)
   ORDER BY e.ord`,
);

export async function insertWorkerEvents(sql: Queryable, worker: { workerId: string; applicationId: number }, events: WorkerEventInput[]): Promise<void> {
  if (events.length === 0) return;
  const rows = events.map((e) => ({
    kind: e.kind,
    at: e.at.toISOString(),
    message: e.message,
    stage_id: e.stageId,
    pipeline_id: e.pipelineId,
    data: e.data,
  }));
  await sql.query(INSERT_WORKER_EVENTS, [worker.workerId, worker.applicationId, jsonParam(rows)]);
}

/** Shutdown marks the worker Stopped and records a `stopped` event; the token stays valid. */
export async function recordShutdown(tx: DbOrTx, worker: { workerId: string; applicationId: number }, reason: string | null, now: Date): Promise<void> {
  await tx.worker.update({ where: { id: worker.workerId }, data: { status: 'Stopped' } });
  await tx.workerEvent.create({
    data: { workerId: worker.workerId, applicationId: worker.applicationId, kind: 'stopped', at: now, message: reason },
  });
}

/** A pipeline's traceId (tracing only: the trace a stage's hops join). */
export async function pipelineTraceId(db: DbOrTx, pipelineId: number): Promise<string | null> {
  const p = await db.pipeline.findUnique({ where: { id: BigInt(pipelineId) }, select: { traceId: true } });
  return p?.traceId ?? null;
}
