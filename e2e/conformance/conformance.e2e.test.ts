import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../support/cluster.js';
import { call, waitFor } from '../support/http.js';
import { ManagedProcess } from '../support/processes.js';
import { FaultProxy } from './fault-proxy.js';
import { readReports, selectedSdks, type Reported, type Sdk } from './sdks.js';

/** The gateway hands a delivery out again after this long unacked: short, so redelivery is seen. */
const VISIBILITY_SECONDS = 2;
/** The conformance workers renew every second, so a refused renewal is seen within ~1 s. */
const RENEW_MS = 1000;

/**
 * Issue 30, item 3: one list of protocol scenarios, run against the real stack by every SDK's
 * conformance worker (README.md in this folder). Each SDK has applications of its own, so the
 * SDKs run side by side without taking each other's stages.
 */
describe.concurrent('worker SDK conformance', () => {
  let cluster: Cluster;
  const dir = mkdtempSync(join(tmpdir(), 'po-conformance-'));

  beforeAll(async () => {
    cluster = await startCluster({
      env: { GATEWAY_VISIBILITY_TIMEOUT: String(VISIBILITY_SECONDS), DISPATCH_SWEEP_INTERVAL_MS: '200', WORKER_HEARTBEAT_INTERVAL: '1' },
    });
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  for (const sdk of selectedSdks()) {
    describe.concurrent(sdk.name, () => conformance(sdk, () => cluster, dir));
  }
});

function conformance(sdk: Sdk, clusterOf: () => Cluster, dir: string): void {
  let command: string[];
  let key: string;
  let proxy: FaultProxy;
  let worker: ManagedProcess;
  const log = join(dir, `${sdk.name}.jsonl`);
  const reports = (): Reported[] => readReports(log);
  const api = (method: string, path: string, json?: unknown, apiKey = key) =>
    call(clusterOf().apiUrl, method, path, { json, headers: { 'x-api-key': apiKey } });

  const create = async (name: string, stages: unknown[], apiKey = key) => {
    const r = await api('POST', '/pipelines/idempotent', { idempotencyKey: `${sdk.name}-${name}-${Math.random()}`, name, stages }, apiKey);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const pipeline = r.body.pipeline as { id: number; stages: { id: number }[] };
    return { id: pipeline.id, first: pipeline.stages[0]!.id };
  };
  const finished = (id: number, apiKey = key) =>
    waitFor(`pipeline ${id} terminal`, async () => {
      const r = await api('GET', `/pipelines/${id}`, undefined, apiKey);
      return r.body.isTerminal ? r.body : undefined;
    }, 30_000);
  const reported = (what: string, match: (r: Reported) => boolean, file = log) =>
    waitFor(what, async () => readReports(file).find(match), 20_000);
  const ranFor = (stageId: number) => reports().filter((r) => r.event === 'ran' && r.stageId === stageId);
  const startWorker = (label: string, env: Record<string, string>) => {
    const c = clusterOf();
    const p = new ManagedProcess(`${sdk.name}-${label}`, command, { ...c.env, ...env });
    c.workers.push(p);
    return p.start();
  };

  beforeAll(async () => {
    command = await sdk.prepare();
    key = (await clusterOf().createApp(`conformance-${sdk.name}`)).apiKey;
    proxy = await new FaultProxy(clusterOf().workerUrl).start();
    worker = startWorker('worker', {
      PO_BASE_URL: clusterOf().apiUrl,
      PO_WORKER_BASE_URL: proxy.url,
      PO_API_KEY: key,
      PO_INSTANCE_ID: `conformance-${sdk.name}`,
      PO_CONCURRENCY: '8',
      PO_LEASE_RENEW_INTERVAL_MS: String(RENEW_MS),
      PO_CONFORMANCE_LOG: log,
    });
    await reported(`the ${sdk.name} worker to be ready`, (r) => r.event === 'ready').catch((err: Error) => {
      throw new Error(`${err.message}\n${worker.lines.slice(-30).join('\n')}`);
    });
  }, 180_000);

  afterAll(async () => {
    await worker?.stop();
    await proxy?.stop();
  });

  it('happy path: the output is the input byte for byte; heartbeats and events arrive', async () => {
    const input = `héllo ✓ {"x":[1,2]} \t\n ${'z'.repeat(2000)}`;
    const p = await create('echo', [
      { stageName: 'one', stageHandlerName: 'conf-echo', input },
      { stageName: 'two', stageHandlerName: 'conf-echo', input: '' },
    ]);
    const done = await finished(p.id);
    expect(done.status).toBe('Completed');
    expect(done.stages[0].output).toBe(input);
    expect(done.stages[1].output ?? '').toBe('');
    expect(ranFor(p.first)).toEqual([expect.objectContaining({ handler: 'conf-echo', attempt: 1 })]);

    const db = clusterOf().database.db;
    const workerRow = await waitFor('a heartbeat with counters', async () => {
      const [row] = await db.$queryRaw<{ id: string; beat: Date | null; processed: number | null }[]>`
        SELECT id, last_heartbeat_at AS beat, processed FROM workers WHERE instance_id = ${`conformance-${sdk.name}`}`;
      return row?.beat && (row.processed ?? 0) >= 2 ? row : undefined;
    });
    expect(Date.now() - workerRow.beat!.getTime()).toBeLessThan(10_000);
    await waitFor('the stage_completed event of the first stage', async () => {
      const rows = await db.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM worker_events WHERE worker_id = ${workerRow.id} AND kind = 'stage_completed' AND stage_id = ${p.first}`;
      return rows[0]!.n > 0 ? true : undefined;
    });
  });

  it('retries with backoff, then succeeds on the planned attempt', async () => {
    const p = await create('flaky', [
      { stageName: 'flaky', stageHandlerName: 'conf-flaky', input: '{"succeedOnAttempt":3}', options: { maxRetries: 3, retryInterval: 1, backoff: 'exponential' } },
    ]);
    const done = await finished(p.id);
    expect(done.status).toBe('Completed');
    expect(done.stages[0]).toMatchObject({ output: 'attempt 3', attempt: 3, retryAttempt: 2, failureCount: 2, lastErrorCode: 'FLAKY' });
    expect(ranFor(p.first).map((r) => r.attempt)).toEqual([1, 2, 3]);
    // 1 s then 2 s between the attempts
    expect(Date.parse(done.stages[0].finishedAt) - Date.parse(done.stages[0].startedAt)).toBeGreaterThanOrEqual(3000);
  });

  it('terminal codes and retryable: false are never retried; other codes are', async () => {
    const retries = { maxRetries: 2, retryInterval: 1 };
    const p = await create('terminal', [
      { stageName: 'validation', stageHandlerName: 'conf-fail', input: '{"code":"VALIDATION_ERROR","message":"bad"}', options: retries },
      // runNextIfFailed: each stage runs although the one before it failed
      { stageName: 'declined', stageHandlerName: 'conf-fail', input: '{"code":"PAYMENT_DECLINED","message":"no","retryable":false}', options: { ...retries, runNextIfFailed: true } },
      { stageName: 'boom', stageHandlerName: 'conf-fail', input: '{"code":"BOOM","message":"again"}', options: { maxRetries: 1, retryInterval: 1, runNextIfFailed: true } },
    ]);
    const done = await finished(p.id);
    expect(done.status).toBe('Failed');
    const [validation, declined, boom] = done.stages;
    expect(validation).toMatchObject({ status: 'Failed', attempt: 1, lastErrorCode: 'VALIDATION_ERROR', failureDisposition: 'terminal' });
    expect(declined).toMatchObject({ status: 'Failed', attempt: 1, lastErrorCode: 'PAYMENT_DECLINED', failureDisposition: 'terminal' });
    expect(boom).toMatchObject({ status: 'Failed', attempt: 2, failureCount: 2, lastErrorCode: 'BOOM' });
    expect(validation.logs.map((l: { message: string }) => l.message).join('\n')).toContain('bad');
  });

  it('approval: the stage waits, and goes on once approved', async () => {
    const p = await create('approval', [
      { stageName: 'gate', stageHandlerName: 'conf-approval', input: 'sign-off please' },
      { stageName: 'after', stageHandlerName: 'conf-echo', input: 'shipped' },
    ]);
    await waitFor('the gate to wait for approval', async () => {
      const r = await api('GET', `/pipelines/${p.id}`);
      return r.body.stages[0].status === 'WaitingForApproval' ? true : undefined;
    });
    expect((await api('POST', `/stages/${p.first}/resume`, { approved: true })).status).toBe(204);
    const done = await finished(p.id);
    expect(done.status).toBe('Completed');
    expect(done.stages[0].output).toBe('sign-off please');
    expect(done.stages[1].output).toBe('shipped');
  });

  it('context and stage logs: set by the handler, sensitive values redacted', async () => {
    const p = await create('context', [
      { stageName: 'plain', stageHandlerName: 'conf-context', input: '{"key":"region","value":"eu-west"}' },
      { stageName: 'secret', stageHandlerName: 'conf-context', input: '{"key":"token","value":"s3cr3t","sensitive":true}' },
    ]);
    const done = await finished(p.id);
    expect(done.status).toBe('Completed');
    const items = done.pipelineContextItems as { key: string; value: string; isSensitive: boolean }[];
    expect(items.find((i) => i.key === 'region')).toMatchObject({ value: 'eu-west', isSensitive: false });
    expect(items.find((i) => i.key === 'token')).toMatchObject({ value: '[REDACTED]', isSensitive: true });
    expect(done.stages[0].logs.map((l: { message: string }) => l.message)).toContain('set region');
  });

  it('cancel while running: the renewal is refused and the handler is told to stop', async () => {
    const p = await create('cancel', [{ stageName: 'hold', stageHandlerName: 'conf-hold', input: '{"seconds":60}' }]);
    const ran = await reported('the hold to start', (r) => r.event === 'ran' && r.stageId === p.first);
    expect((await api('POST', `/pipelines/${p.id}/cancel`)).status).toBe(200);
    const cancelled = await reported('the handler to be cancelled', (r) => r.event === 'cancelled' && r.executionId === ran.executionId);
    expect(cancelled).toMatchObject({ code: 'LEASE_LOST', reason: 'pipeline_cancelled' });
    expect((await finished(p.id)).stages[0]).toMatchObject({ status: 'Cancelled', output: null });
  });

  it('lease lost: the server ends the lease, the handler stops, posts nothing, and the retry runs', async () => {
    const p = await create('lease-lost', [
      { stageName: 'hold', stageHandlerName: 'conf-hold', input: '{"seconds":60}', options: { maxRetries: 1, retryInterval: 1 } },
    ]);
    const stageId = p.first;
    const first = await reported('attempt 1 to start', (r) => r.event === 'ran' && r.stageId === stageId);
    // The lease runs out on the database clock (as if 60 s had passed without a renewal).
    await clusterOf().database.db.$executeRaw`
      UPDATE stage_executions SET lease_expires_at = now() - interval '1 second' WHERE id = ${first.executionId}::uuid`;
    const lost = await reported('attempt 1 to be cancelled', (r) => r.event === 'cancelled' && r.executionId === first.executionId);
    expect(lost.code).toBe('LEASE_LOST');
    expect(['lease_expired', 'stale_execution', 'not_owner', 'stage_terminal']).toContain(lost.reason);
    const second = await reported('attempt 2 to start', (r) => r.event === 'ran' && r.stageId === stageId && r.attempt === 2);
    expect(second.executionId).not.toBe(first.executionId);
    // No result was sent for the lost attempt.
    expect(proxy.seen.filter((s) => s.path === `/stages/${stageId}/result` && s.body.includes(first.executionId!))).toEqual([]);
    await api('POST', `/pipelines/${p.id}/cancel`);
    const done = await finished(p.id);
    expect(done.stages[0]).toMatchObject({ status: 'Cancelled', attempt: 2, lastErrorCode: 'LEASE_EXPIRED' });
  });

  it('a redelivered stale delivery is acked without running the handler again', async () => {
    // The hold outlives the visibility timeout: the gateway hands the message out again while
    // the first delivery's handler still runs, and again after it finished if it was never acked.
    const p = await create('redelivery', [{ stageName: 'hold', stageHandlerName: 'conf-hold', input: `{"seconds":${VISIBILITY_SECONDS * 2 + 1}}` }]);
    const stageId = p.first;
    const ran = await reported('the hold to start', (r) => r.event === 'ran' && r.stageId === stageId);
    // A delivery is a pull's answer, or a result answer's `next` (decision 0100) — this stage's own
    // result too: it may carry the next pull on this very queue, and find the redelivered message
    // there. The result answer's own executionId names the stage it accepted, not a delivery.
    const delivers = (s: { path: string; status: number | undefined; answer: string | undefined }) => {
      if (s.status !== 200 && s.status !== 202) return false;
      if (s.path !== '/jobs/pull' && !s.path.endsWith('/result')) return false;
      const answer = parse(s.answer);
      const delivery = (s.path === '/jobs/pull' ? answer : answer?.next) as { payload?: { executionId?: string } } | null | undefined;
      return delivery?.payload?.executionId === ran.executionId;
    };
    const deliveries = () => proxy.seen.filter(delivers).length;
    await waitFor('a second delivery of the same execution', async () => (deliveries() >= 2 ? true : undefined), 15_000);
    const done = await finished(p.id);
    expect(done.stages[0]).toMatchObject({ status: 'Completed', output: 'held', attempt: 1 });
    const settled = deliveries();
    await new Promise((r) => setTimeout(r, (VISIBILITY_SECONDS + 2) * 1000));
    // Every copy was acked: none comes back after another visibility timeout.
    expect(deliveries()).toBe(settled);
    expect(ranFor(stageId)).toHaveLength(1);
  });

  it('a result whose response was lost is sent again with the same identity, applied once', async () => {
    const marker = `drop-${sdk.name}-${Math.random().toString(36).slice(2)}`;
    proxy.dropNextResultResponse(marker);
    const p = await create('dropped', [{ stageName: 'echo', stageHandlerName: 'conf-echo', input: marker }]);
    const done = await finished(p.id);
    expect(done.stages[0]).toMatchObject({ status: 'Completed', output: marker });
    // The first call took effect: the stage may complete before the worker sends it again.
    await waitFor('the result to be sent again', async () => (proxy.results(marker).length >= 2 ? true : undefined), 15_000);
    const sent = proxy.results(marker).map((s) => ({ ...(JSON.parse(s.body) as { executionId: string; attempt: number }), dropped: s.dropped }));
    expect(sent[0]!.dropped).toBe(true);
    for (const again of sent.slice(1)) {
      expect(again).toMatchObject({ executionId: sent[0]!.executionId, attempt: sent[0]!.attempt, isSuccess: true, result: marker });
    }
    expect(ranFor(p.first)).toHaveLength(1);
    const rows = await clusterOf().database.db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM stage_executions WHERE stage_id = ${p.first} AND end_reason = 'result'`;
    expect(rows[0]!.n).toBe(1);
  });

  it('drain on SIGTERM: the running stage finishes, the shutdown is announced, exit 0', async () => {
    // A worker and an application of its own, so no other scenario's stage is on it.
    const own = await clusterOf().createApp(`conformance-${sdk.name}-drain`);
    const drainLog = join(dir, `${sdk.name}-drain.jsonl`);
    const draining = startWorker('drain', {
      PO_BASE_URL: clusterOf().apiUrl,
      PO_WORKER_BASE_URL: clusterOf().workerUrl,
      PO_API_KEY: own.apiKey,
      PO_INSTANCE_ID: `conformance-${sdk.name}-drain`,
      PO_HANDLERS: 'conf-hold',
      PO_DRAIN_TIMEOUT_MS: '20000',
      PO_CONFORMANCE_LOG: drainLog,
    });
    await reported('the drain worker to be ready', (r) => r.event === 'ready', drainLog);
    const p = await create('drain', [{ stageName: 'hold', stageHandlerName: 'conf-hold', input: '{"seconds":3}' }], own.apiKey);
    await reported('the hold to start', (r) => r.event === 'ran', drainLog);
    const exitCode = await draining.stop();
    expect(exitCode, draining.lines.slice(-20).join('\n')).toBe(0);
    expect(readReports(drainLog).map((r) => r.event)).toEqual(['ready', 'ran', 'stopped']);
    // The result went out before the exit: the stage completes without another worker.
    expect((await finished(p.id, own.apiKey)).stages[0]).toMatchObject({ status: 'Completed', output: 'held', attempt: 1 });
    const [row] = await clusterOf().database.db.$queryRaw<{ status: string }[]>`
      SELECT status::text FROM workers WHERE instance_id = ${`conformance-${sdk.name}-drain`}`;
    expect(row?.status).toBe('Stopped');
  });
}

function parse(text: string | undefined): Record<string, unknown> | undefined {
  try {
    return text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
