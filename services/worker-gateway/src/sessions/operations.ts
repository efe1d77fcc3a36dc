import { randomBytes } from 'node:crypto';
import { BrokerUnavailable } from '@po/domain';
import { bootstrapWorker, insertWorkerEvents, recordHeartbeat, recordShutdown, sqlOf } from '@po/db';
import { hashSecret } from '@po/http';
import { stageQueueName, type BootstrapRequest, type HeartbeatRequest, type WorkerEventsRequest, type ShutdownRequest } from '@po/contracts';
import type { Deps } from '../deps.js';
import { authenticateSession } from './auth.js';

/** POST /workers/bootstrap (addendum §5.3). */
export async function bootstrap(deps: Deps, key: { applicationId: number; keyId: number }, body: BootstrapRequest) {
  const { applicationId } = key;
  const { config } = deps;
  if (config.brokerHandout && !config.brokerConnectionString) {
    throw new BrokerUnavailable('Broker hand-out is enabled but no broker address is configured.');
  }
  const token = `pws_${randomBytes(32).toString('base64url')}`;
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + config.sessionTtlSeconds * 1000);
  const handlers = [...new Set(body.handlers ?? [])];
  const { workerId } = await deps.db.$transaction((tx) =>
    bootstrapWorker(tx, {
      applicationId,
      instanceId: body.instanceId,
      workerName: body.workerName ?? null,
      handlers,
      sdkVersion: body.sdkVersion ?? null,
      hostname: body.hostname ?? null,
      metadata: (body.metadata as Record<string, unknown> | undefined) ?? null,
      tokenHash: hashSecret(token),
      apiKeyId: key.keyId,
      now,
      expiresAt,
    }),
  );
  return {
    workerId,
    sessionToken: token,
    sessionExpiresAt: expiresAt.toISOString(),
    applicationId,
    queues: handlers.map((h) => stageQueueName(applicationId, h)),
    heartbeatIntervalSeconds: config.heartbeatIntervalSeconds,
    messageBroker: config.brokerHandout
      ? { enabled: true, connectionString: config.brokerConnectionString }
      : { enabled: false, connectionString: null },
  };
}

/** POST /workers/heartbeat: liveness and counters; it does not extend the session. */
export async function heartbeat(deps: Deps, token: string, body: HeartbeatRequest): Promise<void> {
  const now = deps.clock();
  const session = await authenticateSession(deps.db, token, { now, checkExpiry: true, workerId: body.workerId });
  await recordHeartbeat(deps.db, session.workerId, { now, inFlight: body.inFlight, processed: body.processed, failed: body.failed });
}

/** POST /workers/events: a batch of lifecycle events. */
export async function recordEvents(deps: Deps, token: string, body: WorkerEventsRequest): Promise<void> {
  const now = deps.clock();
  const session = await authenticateSession(deps.db, token, { now, checkExpiry: true, workerId: body.workerId });
  await insertWorkerEvents(
    sqlOf(deps.db),
    session,
    body.events.map((e) => ({
      kind: e.kind,
      at: e.at ? new Date(e.at) : now,
      message: e.message ?? null,
      stageId: e.stageId ?? null,
      pipelineId: e.pipelineId ?? null,
      data: (e.data as Record<string, unknown> | undefined) ?? null,
    })),
  );
}

/** POST /workers/shutdown: Stopped plus a `stopped` event; expiry is not checked and the token stays valid. */
export async function shutdown(deps: Deps, token: string, body: ShutdownRequest): Promise<void> {
  const now = deps.clock();
  const session = await authenticateSession(deps.db, token, { now, checkExpiry: false, workerId: body.workerId });
  await deps.db.$transaction((tx) => recordShutdown(tx, session, body.reason ?? null, now));
}
