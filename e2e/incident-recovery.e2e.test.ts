import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';
import { ManagedProcess } from './support/processes.js';

/**
 * Incident recovery (issue 32, decision 0133): pipelines fail at the same stage while a downstream
 * is broken; once it is fixed, each is rerun from its failure. Every handler call is recorded by
 * the worker (e2e/support/rerun-worker.mjs), so "never delivered" is what the worker saw.
 */
describe('rerun from the failure, with a real worker', () => {
  let cluster: Cluster;
  let key: string;
  let dir: string;
  let callsFile: string;
  let brokenFile: string;
  const api = (method: string, path: string, json?: unknown) => call(cluster.apiUrl, method, path, { json, headers: { 'x-api-key': key } });
  const calls = () =>
    existsSync(callsFile)
      ? readFileSync(callsFile, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { handler: string; stageId: number; pipelineId: number })
      : [];
  const terminal = (id: number) =>
    waitFor(`pipeline ${id} terminal`, async () => {
      const r = await api('GET', `/pipelines/${id}`);
      return r.body.isTerminal ? r.body : undefined;
    }, 60_000, 200);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'po-rerun-'));
    callsFile = join(dir, 'calls.jsonl');
    brokenFile = join(dir, 'broken');
    writeFileSync(brokenFile, '');
    cluster = await startCluster({ env: { DISPATCH_SWEEP_INTERVAL_MS: '200' } });
    key = (await cluster.createApp('incident-recovery')).apiKey;
    const worker = new ManagedProcess('rerun-worker', 'e2e/support/rerun-worker.mjs', {
      ...cluster.env,
      PO_BASE_URL: cluster.apiUrl,
      PO_WORKER_BASE_URL: cluster.workerUrl,
      PO_API_KEY: key,
      PO_INSTANCE_ID: 'rerun-worker',
      PO_CALLS_FILE: callsFile,
      PO_BROKEN_FILE: brokenFile,
    }).start();
    cluster.workers.push(worker);
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('carried-over stages are never delivered again, and the stages after them run with what they wrote', async () => {
    const originals: number[] = [];
    for (let i = 0; i < 4; i += 1) {
      const r = await api('POST', '/pipelines/idempotent', {
        idempotencyKey: `incident-${randomUUID()}`,
        name: `nightly-${i}`,
        stages: [
          { stageName: 'extract', stageHandlerName: 'extract', input: `day-${i}` },
          { stageName: 'load', stageHandlerName: 'load' },
          { stageName: 'report', stageHandlerName: 'report' },
        ],
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      originals.push(r.body.pipeline.id);
    }
    const failed = await Promise.all(originals.map(terminal));
    for (const p of failed) {
      expect(p.status).toBe('Failed');
      expect(p.stages[0]).toMatchObject({ status: 'Completed' });
      expect(p.stages[1]).toMatchObject({ status: 'Failed', lastErrorCode: 'DOWNSTREAM_DOWN' });
    }

    // The downstream is fixed; each pipeline is rerun from its failure.
    rmSync(brokenFile);
    const reruns: number[] = [];
    for (const id of originals) {
      const r = await api('POST', `/pipelines/${id}/rerun`, { from: 'failed' });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      reruns.push(r.body.id);
    }
    const done = await Promise.all(reruns.map(terminal));
    const seen = calls();
    const rerunStages = new Set(done.flatMap((p) => p.stages.map((s: { id: number }) => s.id)));

    done.forEach((p, i) => {
      const original = failed[i];
      expect(p).toMatchObject({ status: 'Completed', rerunOf: original.id });
      const [extract, load, report] = p.stages;
      // Carried over: the original's output, timings and logs, marked; no new execution.
      expect(extract).toMatchObject({
        status: 'Completed',
        carriedOverFrom: original.stages[0].id,
        output: original.stages[0].output,
        startedAt: original.stages[0].startedAt,
        finishedAt: original.stages[0].finishedAt,
        attempt: 0,
      });
      expect(extract.logs.map((l: { message: string; carriedOver: boolean }) => [l.message, l.carriedOver])).toEqual(
        original.stages[0].logs.map((l: { message: string }) => [l.message, true]),
      );
      // The stages after it ran here, reading the context key the carried-over stage wrote.
      expect(load).toMatchObject({ status: 'Completed', carriedOverFrom: null, output: `loaded batch-of-day-${i}` });
      expect(report).toMatchObject({ status: 'Completed', output: `reported batch-of-day-${i}` });
    });

    // What the worker ran: each extract once (the originals'), never a rerun's; load twice per
    // chain (failed, then the rerun's), report once (the rerun's).
    expect(seen.filter((c) => c.handler === 'extract').map((c) => c.pipelineId).sort()).toEqual([...originals].sort());
    expect(seen.filter((c) => c.handler === 'extract' && rerunStages.has(c.stageId))).toEqual([]);
    expect(seen.filter((c) => c.handler === 'load').length).toBe(2 * originals.length);
    expect(seen.filter((c) => c.handler === 'report').map((c) => c.pipelineId).sort()).toEqual([...reruns].sort());
    // And the engine never dispatched them: no execution rows for the carried-over stages.
    const carried = done.map((p) => BigInt(p.stages[0].id));
    const executions = await cluster.database.db.stageExecution.count({ where: { stageId: { in: carried } } });
    expect(executions).toBe(0);
  }, 180_000);

  it('a bulk rerun from the failure survives a kill -9 of pipeline-service mid-operation: every pipeline rerun once', async () => {
    writeFileSync(brokenFile, '');
    const originals: number[] = [];
    for (let i = 0; i < 24; i += 1) {
      const r = await api('POST', '/pipelines/idempotent', {
        idempotencyKey: `bulk-${randomUUID()}`,
        name: `bulk-incident-${i}`,
        stages: [
          { stageName: 'extract', stageHandlerName: 'extract', input: `bulk-${i}` },
          { stageName: 'load', stageHandlerName: 'load' },
        ],
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      originals.push(r.body.pipeline.id);
    }
    await Promise.all(originals.map(terminal));
    rmSync(brokenFile);

    const filter = { status: ['Failed'], name: 'bulk-incident-' };
    const dry = await api('POST', '/pipelines/bulk-rerun', { filter, dryRun: true });
    expect(dry.body.matched).toBe(24);
    const started = await api('POST', '/pipelines/bulk-rerun', { filter, maxPerSecond: 8 });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const id = started.body.id;
    // Some done, most not: then the service running it dies without a shutdown.
    await waitFor('the first reruns', async () => ((await api('GET', `/operations/${id}`)).body.done >= 3 ? true : undefined), 30_000, 100);
    const service = cluster.process('pipeline-service');
    await service.kill();
    const atKill = (await api('GET', `/operations/${id}`)).body;
    expect(atKill.done).toBeLessThan(24);
    service.start();
    await service.waitReady();
    const finished = await waitFor('the operation to succeed', async () => {
      const op = (await api('GET', `/operations/${id}`)).body;
      return op.status === 'Succeeded' ? op : undefined;
    }, 60_000, 250);
    expect(finished).toMatchObject({ matched: 24, done: 24, failed: 0, failures: [] });

    // Each original rerun exactly once, each rerun completed with its extract carried over.
    const reruns = [];
    for (const original of originals) {
      const p = (await api('GET', `/pipelines/${original}`)).body;
      expect(p.reruns, `reruns of ${original}`).toHaveLength(1);
      reruns.push(await terminal(p.reruns[0]));
    }
    for (const r of reruns) {
      expect(r.status).toBe('Completed');
      expect(r.stages[0].carriedOverFrom).not.toBeNull();
    }
    const rerunIds = new Set(reruns.map((r) => r.id));
    expect(calls().filter((c) => c.handler === 'extract' && rerunIds.has(c.pipelineId))).toEqual([]);
  }, 180_000);
});
