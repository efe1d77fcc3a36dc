import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';

/**
 * The execution engine end to end: five services and SDK workers (examples/) as separate
 * processes over real PostgreSQL and Redis, driven over HTTP only (issue "Execution engine").
 */
describe.concurrent('pipelines run on HTTP workers', () => {
  let cluster: Cluster;
  let key: string;
  const api = (method: string, path: string, json?: unknown) => call(cluster.apiUrl, method, path, { json, headers: { 'x-api-key': key } });
  const create = async (name: string, stages: unknown[]) => {
    const r = await api('POST', '/pipelines/idempotent', { idempotencyKey: `${name}-${Date.now()}-${Math.random()}`, name, stages });
    expect(r.status).toBe(201);
    return r.body.pipeline.id as number;
  };
  const finished = (id: number, timeoutMs = 30_000) =>
    waitFor(`pipeline ${id} terminal`, async () => {
      const r = await api('GET', `/pipelines/${id}`);
      return r.body.isTerminal ? r.body : undefined;
    }, timeoutMs);
  const stageIn = (id: number, index: number, status: string, timeoutMs = 30_000) =>
    waitFor(`pipeline ${id} stage ${index} ${status}`, async () => {
      const r = await api('GET', `/pipelines/${id}`);
      return r.body.stages[index].status === status ? r.body.stages[index] : undefined;
    }, timeoutMs);
  const ms = (iso: string) => new Date(iso).getTime();

  beforeAll(async () => {
    cluster = await startCluster({ env: { GATEWAY_VISIBILITY_TIMEOUT: '3', DISPATCH_SWEEP_INTERVAL_MS: '200' } });
    key = (await cluster.createApp('engine')).apiKey;
    const workerEnv = { PO_BASE_URL: cluster.apiUrl, PO_WORKER_BASE_URL: cluster.workerUrl, PO_API_KEY: key, PO_CONCURRENCY: '4' };
    cluster.startWorker('worker-1', { ...workerEnv, PO_INSTANCE_ID: 'worker-1', PO_HANDLERS: 'echo,sleep,fail,flaky,approve' });
    cluster.startWorker('worker-2', { ...workerEnv, PO_INSTANCE_ID: 'worker-2', PO_HANDLERS: 'echo,sleep,fail,flaky,approve' });
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('runs parallel branches (dependsOn) side by side, then their join', async () => {
    const id = await create('branches', [
      { stageName: 'root', stageHandlerName: 'echo', input: 'go' },
      { stageName: 'left', stageHandlerName: 'sleep', input: '{"ms":1500}', options: { dependsOn: ['root'] } },
      { stageName: 'right', stageHandlerName: 'sleep', input: '{"ms":1500}', options: { dependsOn: ['root'] } },
      { stageName: 'join', stageHandlerName: 'echo', input: 'done', options: { dependsOn: ['left', 'right'] } },
    ]);
    const p = await finished(id);
    expect(p.status).toBe('Completed');
    const [root, left, right, join] = p.stages;
    expect(root.output).toBe('go');
    expect(ms(left.startedAt)).toBeLessThan(ms(right.finishedAt));
    expect(ms(right.startedAt)).toBeLessThan(ms(left.finishedAt));
    expect(ms(join.startedAt)).toBeGreaterThanOrEqual(Math.max(ms(left.finishedAt), ms(right.finishedAt)));
  });

  it('retries a failing stage with exponential backoff, then it succeeds', async () => {
    const id = await create('flaky', [
      { stageName: 'flaky', stageHandlerName: 'flaky', input: '{"failures":2}', options: { maxRetries: 3, retryInterval: 1, backoff: 'exponential' } },
    ]);
    const p = await finished(id);
    const stage = p.stages[0];
    expect(p.status).toBe('Completed');
    expect(stage).toMatchObject({ status: 'Completed', attempt: 3, retryAttempt: 2, failureCount: 2, hasFailureHistory: true, lastErrorCode: 'FLAKY' });
    // delays of 1 s then 2 s (exponential) separate the three attempts
    expect(ms(stage.finishedAt) - ms(stage.startedAt)).toBeGreaterThanOrEqual(3000);
  });

  it('does not retry a terminal error code', async () => {
    const id = await create('terminal', [
      { stageName: 'reject', stageHandlerName: 'fail', input: '{"code":"VALIDATION_ERROR"}', options: { maxRetries: 3, retryInterval: 1 } },
    ]);
    const p = await finished(id);
    expect(p.status).toBe('Failed');
    expect(p.stages[0]).toMatchObject({ status: 'Failed', attempt: 1, retryAttempt: 0, failureCount: 1, lastErrorCode: 'VALIDATION_ERROR', failureDisposition: 'terminal' });
  });

  it('continues after a failure with runNextIfFailed and skips the doomed stage', async () => {
    const id = await create('continue', [
      { stageName: 'breaks', stageHandlerName: 'fail', input: '{"code":"BOOM"}' },
      { stageName: 'cleanup', stageHandlerName: 'echo', input: 'cleaned', options: { runNextIfFailed: true } },
      { stageName: 'deploy', stageHandlerName: 'echo', input: 'never' },
    ]);
    const p = await finished(id);
    expect(p.status).toBe('Failed');
    expect(p.stageStatuses).toEqual(['Failed', 'Completed', 'Skipped']);
    expect(p.stages[1].output).toBe('cleaned');
    expect(p.stages[2].isSkipped).toBe(true);
  });

  it('parks a stage for approval; approved, the pipeline goes on', async () => {
    const id = await create('approved', [
      { stageName: 'gate', stageHandlerName: 'approve', input: 'please' },
      { stageName: 'after', stageHandlerName: 'echo', input: 'shipped' },
    ]);
    const gate = await stageIn(id, 0, 'WaitingForApproval');
    expect((await api('GET', `/pipelines/${id}`)).body.status).toBe('Paused');
    expect((await api('POST', `/stages/${gate.id}/resume`, { approved: true })).status).toBe(204);
    const p = await finished(id);
    expect(p.status).toBe('Completed');
    expect(p.stages[1].output).toBe('shipped');
  });

  it('parks a stage for approval; rejected, the stage fails with REJECTED', async () => {
    const id = await create('rejected', [
      { stageName: 'gate', stageHandlerName: 'approve', input: 'please' },
      { stageName: 'after', stageHandlerName: 'echo', input: 'never' },
    ]);
    const gate = await stageIn(id, 0, 'WaitingForApproval');
    expect((await api('POST', `/stages/${gate.id}/resume`, { approved: false, rejectionReason: 'not today' })).status).toBe(204);
    const p = await finished(id);
    expect(p.status).toBe('Failed');
    expect(p.stages[0]).toMatchObject({ status: 'Failed', lastErrorCode: 'REJECTED', failureDisposition: 'terminal' });
    expect(p.stages[0].logs.map((l: { message: string }) => l.message)).toContain('Rejected: not today');
    expect(p.stageStatuses[1]).toBe('Skipped');
  });

  it('fails a stage whose handler outlives its timeOut with TIMEOUT', async () => {
    const id = await create('timeout', [{ stageName: 'slow', stageHandlerName: 'sleep', input: '{"ms":8000}', options: { timeOut: 1 } }]);
    const p = await finished(id, 20_000);
    expect(p.status).toBe('Failed');
    expect(p.stages[0]).toMatchObject({ status: 'Failed', lastErrorCode: 'TIMEOUT', failureCount: 1 });
    expect(ms(p.stages[0].finishedAt) - ms(p.stages[0].startedAt)).toBeLessThan(7000);
  });

  it('retries on another worker a stage whose worker was killed mid-stage (lease lost)', async () => {
    const workerEnv = { PO_BASE_URL: cluster.apiUrl, PO_WORKER_BASE_URL: cluster.workerUrl, PO_API_KEY: key, PO_HANDLERS: 'hold' };
    const victim = cluster.startWorker('victim', { ...workerEnv, PO_INSTANCE_ID: 'victim' });
    const id = await create('lease-lost', [
      { stageName: 'held', stageHandlerName: 'hold', input: '{"ms":600000,"attempts":1}', options: { maxRetries: 2, retryInterval: 1 } },
    ]);
    await stageIn(id, 0, 'Running');
    await victim.kill();
    cluster.startWorker('rescuer', { ...workerEnv, PO_INSTANCE_ID: 'rescuer' });
    // The lease lasts 60 s; it runs out here on the database clock, as if those 60 s without a
    // renewal had passed: the sweeper ends it (LEASE_EXPIRED), schedules a retry, and the rescuer
    // runs attempt 2. (The 60 s themselves are the lease integration tests' business.)
    const lapsed = await cluster.database.db.$executeRaw`
      UPDATE stage_executions e SET lease_expires_at = now() - interval '1 second'
        FROM stages s WHERE s.id = e.stage_id AND s.pipeline_id = ${id} AND e.ended_at IS NULL AND e.attempt IS NOT NULL`;
    expect(lapsed).toBe(1);
    const p = await finished(id, 100_000);
    expect(p.status).toBe('Completed');
    expect(p.stages[0]).toMatchObject({ status: 'Completed', attempt: 2, retryAttempt: 1, lastErrorCode: 'LEASE_EXPIRED' });
    expect(p.stages[0].logs.map((l: { message: string }) => l.message).join('\n')).toMatch(/attempt 1 failed: LEASE_EXPIRED/);
  }, 120_000);

  it('cancels a running stage: renewal refused, the late result fenced, the stage Cancelled', async () => {
    const w = (path: string, json: unknown, headers: Record<string, string>) => call(cluster.workerUrl, 'POST', path, { json, headers });
    const boot = await w('/workers/bootstrap', { instanceId: 'manual', handlers: ['manual'] }, { 'x-api-key': key });
    const session = { 'x-worker-session': boot.body.sessionToken };
    const id = await create('cancel', [{ stageName: 'long', stageHandlerName: 'manual' }]);
    const pull = await waitFor('a delivery', async () => {
      const r = await w('/jobs/pull', { queue: boot.body.queues[0], waitSeconds: 2 }, { 'x-api-key': key });
      return r.status === 200 ? r : undefined;
    });
    const { stageId, executionId } = pull.body.payload;
    const lease = await w(`/stages/${stageId}/lease/acquire`, { executionId, workerId: boot.body.workerId }, session);
    expect(lease.body).toMatchObject({ acquired: true, attempt: 1 });

    const cancelled = await api('POST', `/pipelines/${id}/cancel`);
    expect(cancelled.body).toMatchObject({ status: 'Cancelled', stageStatuses: ['Cancelled'] });

    const renew = await w(`/stages/${stageId}/lease/renew`, { executionId, workerId: boot.body.workerId }, session);
    expect(renew.body).toEqual({ acquired: false, attempt: null, leaseExpiresAt: null, reason: 'pipeline_cancelled' });
    const late = await w(`/stages/${stageId}/result`, { stageId, executionId, attempt: 1, isSuccess: true, result: 'too late' }, { ...session, 'x-api-key': key });
    expect(late.status).toBe(202);
    expect((await w('/jobs/ack', { token: pull.body.token }, {})).status).toBe(200);

    await waitFor('the late result to be discarded', async () =>
      cluster.allLines().some((l) => l.includes('result discarded') && l.includes(executionId)) ? true : undefined,
    );
    const after = await api('GET', `/pipelines/${id}`);
    expect(after.body.stages[0]).toMatchObject({ status: 'Cancelled', output: null });
  });
});
