import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';
import { hasMetric, metricValue, scrape, type Sample } from './support/prometheus.js';
import { fileExporterEnv, readSpanFiles, readSpans, type SpanLine } from './support/spans.js';
import { analyse, dashboardQueries, type Dashboard } from '../deploy/k8s-checks/promql.mjs';

const DASHBOARD = new URL('../helm/pipeline-orchestration/dashboards/pipeline-orchestration.json', import.meta.url);
/** Labels Prometheus adds from the scrape target, never served by a process itself. */
const TARGET_LABELS = new Set(['namespace', 'pod', 'instance', 'job', 'service', 'container', 'endpoint']);

/**
 * Observability end to end (decisions 0050–0053): the five services and an SDK worker as processes,
 * each exporting its spans to its own JSON-lines file (OTEL_TRACES_EXPORTER=file), and
 * GET /metrics of each service read before and after pipelines run.
 */
describe('one trace per pipeline, and metrics that move', () => {
  let cluster: Cluster;
  let key: string;
  let applicationId: number;
  let spanDir: string;
  const before = new Map<string, Sample[]>();
  const api = (method: string, path: string, json?: unknown, headers: Record<string, string> = {}) =>
    call(cluster.apiUrl, method, path, { json, headers: { 'x-api-key': key, ...headers } });
  const finished = (id: number) =>
    waitFor(`pipeline ${id} terminal`, async () => {
      const r = await api('GET', `/pipelines/${id}`);
      return r.body.isTerminal ? r.body : undefined;
    }, 30_000);
  const traceOf = (traceId: string) => readSpans(spanDir).filter((s) => s.traceId === traceId);
  const named = (spans: SpanLine[], name: string) => spans.filter((s) => s.name === name);

  beforeAll(async () => {
    spanDir = mkdtempSync(join(tmpdir(), 'po-spans-'));
    cluster = await startCluster({
      env: { ...fileExporterEnv(spanDir), GATEWAY_VISIBILITY_TIMEOUT: '2', DISPATCH_SWEEP_INTERVAL_MS: '200', SCHEDULER_POLL_INTERVAL_MS: '200' },
    });
    ({ apiKey: key, applicationId } = await cluster.createApp('tracing'));
    cluster.startWorker('traced-worker', {
      PO_BASE_URL: cluster.apiUrl,
      PO_WORKER_BASE_URL: cluster.workerUrl,
      PO_API_KEY: key,
      PO_INSTANCE_ID: 'traced-worker',
      PO_HANDLERS: 'echo,flaky',
      // The worker process sets up OpenTelemetry itself; the SDK then records its handler spans.
      NODE_OPTIONS: '--import @po/telemetry/register',
      OTEL_SERVICE_NAME: 'example-worker',
    });
    for (const s of cluster.services) before.set(s.name, await scrape(s.metricsUrl));
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
    if (spanDir) rmSync(spanDir, { recursive: true, force: true });
  });

  it('joins creation, dispatch, pull, lease, handler, result and apply of every stage in the pipeline\'s one trace', async () => {
    // The client's own trace context: the pipeline (no traceId in the body) joins the client's trace.
    const clientTrace = randomBytes(16).toString('hex');
    const clientSpan = randomBytes(8).toString('hex');
    const created = await api(
      'POST',
      '/pipelines/idempotent',
      {
        idempotencyKey: `trace-${clientTrace}`,
        name: 'traced',
        stages: [
          { stageName: 'first', stageHandlerName: 'echo', input: 'hello' },
          { stageName: 'second', stageHandlerName: 'echo', input: 'world' },
        ],
      },
      { traceparent: `00-${clientTrace}-${clientSpan}-01` },
    );
    expect(created.status).toBe(201);
    const pipeline = created.body.pipeline;
    expect(pipeline.traceId).toBe(clientTrace);
    expect((await finished(pipeline.id)).status).toBe('Completed');

    const trace = await waitFor('every hop exported', async () => {
      const spans = traceOf(clientTrace);
      // Each process exports on its own schedule: wait for every hop of both stages.
      const hops = ['stage.dispatch', 'stage.pull', 'stage.lease', 'stage.handler', 'stage.result', 'stage.apply'];
      return hops.every((hop) => named(spans, hop).length >= 2) ? spans : undefined;
    });

    // One tree: unique span ids, every parent inside the trace except the request's, whose parent is the client's span.
    const ids = new Set(trace.map((s) => s.spanId));
    expect(ids.size).toBe(trace.length);
    const outside = trace.filter((s) => s.parentSpanId === null || !ids.has(s.parentSpanId));
    expect(outside.map((s) => [s.name, s.parentSpanId])).toEqual([['POST /pipelines/idempotent', clientSpan]]);

    // Every process of a stage's path took part.
    expect(new Set(trace.map((s) => s.service))).toEqual(new Set(['api-gateway', 'worker-gateway', 'result-consumer', 'example-worker']));
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const ancestors = (span: SpanLine): SpanLine[] => {
      const out: SpanLine[] = [];
      for (let p = span.parentSpanId ? byId.get(span.parentSpanId) : undefined; p; p = p.parentSpanId ? byId.get(p.parentSpanId) : undefined) out.push(p);
      return out;
    };
    expect(named(trace, 'pipeline.create')[0]).toMatchObject({ service: 'api-gateway', attributes: { 'pipeline.id': pipeline.id, 'application.id': applicationId } });
    for (const [index, stage] of (pipeline.stages as { id: number; spanId: string }[]).entries()) {
      // The first stage is dispatched by the api-gateway that created the pipeline (decision 0102);
      // the second by result-consumer, in the transaction that applied the first one's result
      // (decision 0061).
      const dispatcher = index === 0 ? 'api-gateway' : 'result-consumer';
      // The stage's stored spanId is its span; each hop of the stage is below it.
      const stageSpan = trace.find((s) => s.spanId === stage.spanId);
      expect(stageSpan).toMatchObject({ name: 'pipeline.stage', service: dispatcher, attributes: { 'stage.id': stage.id, 'stage.handler': 'echo' } });
      const hops = trace.filter((s) => s.attributes['stage.id'] === stage.id && s.spanId !== stage.spanId);
      const hop = (name: string, service: string) => {
        const found = hops.filter((s) => s.name === name);
        expect(found, `${name} of stage ${stage.id}`).toHaveLength(1);
        expect(found[0]!.service).toBe(service);
        expect(ancestors(found[0]!).map((a) => a.spanId)).toContain(stage.spanId);
        return found[0]!;
      };
      hop('stage.dispatch', dispatcher);
      const pull = hop('stage.pull', 'worker-gateway');
      const lease = hop('stage.lease', 'worker-gateway');
      const handler = hop('stage.handler', 'example-worker');
      const result = hop('stage.result', 'worker-gateway');
      const apply = hop('stage.apply', 'result-consumer');
      // The causal chain: the worker continues from the pull, the gateway from the worker, the consumer from the gateway.
      expect(ancestors(lease).map((a) => a.spanId)).toContain(pull.spanId);
      expect(handler.parentSpanId).toBe(pull.spanId);
      expect(ancestors(result).map((a) => a.spanId)).toContain(handler.spanId);
      expect(apply.parentSpanId).toBe(result.spanId);
      expect(lease.attributes).toMatchObject({ 'po.outcome': 'granted', 'execution.id': expect.any(String), 'pipeline.id': pipeline.id });
      expect(apply.attributes).toMatchObject({ 'po.outcome': 'completed', 'application.id': applicationId });
    }
    // The second stage was caused by the first one's applied result.
    const [first, second] = pipeline.stages as { id: number; spanId: string }[];
    const firstApply = named(trace, 'stage.apply').find((s) => s.attributes['stage.id'] === first!.id)!;
    expect(byId.get(second!.spanId)!.parentSpanId).toBe(firstApply.spanId);
  });

  it('maps a traceId that is not a W3C trace id to the first 32 hex digits of its SHA-256', async () => {
    const traceId = `order-${randomBytes(4).toString('hex')}`;
    const created = await api('POST', '/pipelines/idempotent', {
      idempotencyKey: `mapped-${traceId}`,
      name: 'mapped',
      traceId,
      stages: [{ stageName: 'only', stageHandlerName: 'echo', input: 'x' }],
    });
    expect(created.status).toBe(201);
    expect(created.body.pipeline.traceId).toBe(traceId);
    await finished(created.body.pipeline.id);
    const derived = createHash('sha256').update(traceId, 'utf8').digest('hex').slice(0, 32);
    const trace = await waitFor('the mapped trace', async () => {
      const spans = traceOf(derived);
      return named(spans, 'stage.apply').length === 1 && named(spans, 'stage.handler').length === 1 ? spans : undefined;
    });
    // The body's traceId differs from the request's trace: pipeline.create opens the pipeline's trace.
    expect(named(trace, 'pipeline.create')[0]).toMatchObject({ parentSpanId: null, attributes: { 'pipeline.trace_id': traceId } });
    expect(named(trace, 'pipeline.create')[0]!.links).toHaveLength(1);
  });

  it('exports spans from all five services and the worker, and serves GET /metrics in Prometheus format that moves', async () => {
    // A raw worker without trace context, a duplicate result (fenced) and a delivery never acked (visibility timeout).
    const w = (path: string, json: unknown, headers: Record<string, string>) => call(cluster.workerUrl, 'POST', path, { json, headers });
    const boot = await w('/workers/bootstrap', { instanceId: 'manual', handlers: ['manual'] }, { 'x-api-key': key });
    const session = { 'x-worker-session': boot.body.sessionToken };
    const created = await api('POST', '/pipelines/idempotent', {
      idempotencyKey: `manual-${Date.now()}`,
      name: 'manual',
      stages: [
        { stageName: 'raw', stageHandlerName: 'manual' },
        { stageName: 'retried', stageHandlerName: 'flaky', input: '{"failures":1}', options: { maxRetries: 2, retryInterval: 1 } },
      ],
    });
    const pipeline = created.body.pipeline;
    const pulled = await waitFor('a manual delivery', async () => {
      const r = await w('/jobs/pull', { queue: boot.body.queues[0], waitSeconds: 1 }, { 'x-api-key': key });
      return r.status === 200 ? r : undefined;
    });
    const m = pulled.body.payload;
    // The delivery carries the W3C trace context of the stage.
    expect(pulled.body.headers.traceparent).toMatch(new RegExp(`^00-${pipeline.traceId}-[0-9a-f]{16}-01$`));
    const lease = await w(`/stages/${m.stageId}/lease/acquire`, { executionId: m.executionId, workerId: boot.body.workerId }, session);
    expect(lease.body.acquired).toBe(true);
    const result = { stageId: m.stageId, executionId: m.executionId, attempt: lease.body.attempt, isSuccess: true, result: 'raw' };
    expect((await w(`/stages/${m.stageId}/result`, result, { 'x-api-key': key, ...session })).status).toBe(202);
    expect((await finished(pipeline.id)).status).toBe('Completed');
    // The same result again once the first was applied: accepted, then fenced by the consumer. (A
    // copy posted while the first still waits is the same job, decision 0062, and never reaches it.)
    expect((await w(`/stages/${m.stageId}/result`, result, { 'x-api-key': key, ...session })).status).toBe(202);

    // Without a traceparent from the worker, the lease span hangs under the stage's own span.
    const rawLease = await waitFor('the raw lease span', async () => traceOf(pipeline.traceId).find((s) => s.name === 'stage.lease' && s.attributes['stage.id'] === m.stageId));
    expect(rawLease.parentSpanId).toBe(m.spanId);

    // Each of the five services and the worker wrote its own span file.
    const files = [...readSpanFiles(spanDir).keys()].map((f) => f.replace(/-\d+\.jsonl$/, ''));
    expect(new Set(files)).toEqual(new Set(['api-gateway', 'pipeline-service', 'worker-gateway', 'result-consumer', 'scheduler-service', 'example-worker']));

    // A schedule that fires once, two seconds from now.
    const runAt = new Date(Math.ceil((Date.now() + 2000) / 1000) * 1000).toISOString();
    const put = await api('PUT', '/schedules/metrics-once', { kind: 'Once', runAt, definition: { name: 'scheduled', stages: [{ stageName: 's', stageHandlerName: 'echo', input: 'tick' }] } });
    expect(put.status).toBe(201);

    const url = (name: string) => cluster.process(name).metricsUrl;
    const moved = (service: string, after: Sample[], name: string, labels: Record<string, string> = {}) =>
      metricValue(after, name, labels) - metricValue(before.get(service) ?? [], name, labels);
    const queue = `app_${applicationId}_echo_StageNext`;
    await waitFor('every named metric moved', async () => {
      const [gateway, dispatcher, workers, consumer, scheduler] = await Promise.all(
        ['api-gateway', 'pipeline-service', 'worker-gateway', 'result-consumer', 'scheduler-service'].map((s) => scrape(url(s))),
      );
      const dispatched = (metric: string) =>
        moved('api-gateway', gateway!, metric) + moved('pipeline-service', dispatcher!, metric) + moved('result-consumer', consumer!, metric);
      const checks: [string, boolean][] = [
        ['http requests', moved('api-gateway', gateway!, 'po_http_request_duration_seconds_count', { method: 'POST', route: '/pipelines/idempotent', status: '201' }) >= 3],
        ['process metrics', hasMetric(gateway!, 'process_cpu_user_seconds_total')],
        // A pipeline's first stages are dispatched by the api-gateway that created it (decision
        // 0102) or, for a schedule's, by pipeline-service; the stages a result unblocks by
        // result-consumer in the same transaction as the result (decision 0061).
        ['stages dispatched', dispatched('po_stages_dispatched_total') >= 7],
        ['dispatch latency', dispatched('po_dispatch_latency_seconds_count') >= 7],
        ['queue depth', hasMetric(dispatcher!, 'po_stagenext_queue_messages', { queue, state: 'waiting' })],
        // api-gateway published the first stages of the pipelines created above (decision 0102).
        ['queue depth of first stages', hasMetric(gateway!, 'po_stagenext_queue_messages', { queue: `app_${applicationId}_manual_StageNext`, state: 'waiting' })],
        ['queue age', hasMetric(dispatcher!, 'po_stagenext_queue_oldest_age_seconds', { queue })],
        ['pull wait', moved('worker-gateway', workers!, 'po_pull_wait_seconds_count', { result: 'message' }) >= 7],
        ['lease grants', moved('worker-gateway', workers!, 'po_lease_decisions_total', { operation: 'acquire', outcome: 'granted' }) >= 7],
        ['results accepted', moved('worker-gateway', workers!, 'po_results_accepted_total') >= 8],
        ['visibility requeues', moved('worker-gateway', workers!, 'po_visibility_timeout_requeues_total') >= 1],
        ['inflight', hasMetric(workers!, 'po_deliveries_inflight')],
        ['healthy workers', metricValue(workers!, 'po_workers', { state: 'healthy' }) >= 2],
        ['sessions', metricValue(workers!, 'po_worker_sessions') >= 2],
        ['healthy workers per queue', metricValue(workers!, 'po_queue_healthy_workers', { queue }) >= 1],
        ['results applied', moved('result-consumer', consumer!, 'po_results_applied_total') >= 7],
        ['results fenced', moved('result-consumer', consumer!, 'po_results_fenced_total') >= 1],
        ['outcomes', moved('result-consumer', consumer!, 'po_stage_outcomes_total', { handler: 'echo', outcome: 'completed' }) >= 4],
        ['retries', moved('result-consumer', consumer!, 'po_retries_scheduled_total', { error_code: 'FLAKY' }) >= 1],
        ['schedule runs', moved('scheduler-service', scheduler!, 'po_schedule_runs_total', { status: 'created' }) >= 1],
        ['schedule lag', moved('scheduler-service', scheduler!, 'po_schedule_tick_lag_seconds_count') >= 1],
      ];
      const missing = checks.filter(([, ok]) => !ok).map(([what]) => what);
      if (missing.length > 0) throw new Error(`not moved yet: ${missing.join(', ')}`);
      return true;
    }, 30_000, 500);

    // The scheduled pipeline's trace opens with the scheduler's span; its stage and handler follow.
    const scheduled = await waitFor('the scheduled pipeline\'s trace', async () => {
      const fire = readSpans(spanDir).find((s) => s.name === 'schedule.fire' && s.attributes['schedule.name'] === 'metrics-once');
      const spans = fire ? traceOf(fire.traceId) : [];
      return fire && named(spans, 'stage.apply').length === 1 ? { fire, spans } : undefined;
    });
    expect(scheduled.fire).toMatchObject({ service: 'scheduler-service', parentSpanId: null });
    expect(named(scheduled.spans, 'pipeline.stage')[0]!.parentSpanId).toBe(scheduled.fire.spanId);
    expect(named(scheduled.spans, 'stage.handler')).toHaveLength(1);
  });

  it('serves every series the Grafana dashboard queries, with the labels it filters and groups by (issue 14 item 4)', async () => {
    // Runs after the traffic above: every stage outcome, retry, fence, requeue and schedule tick happened.
    const queries = dashboardQueries(JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard).map((q) => ({ ...q, ...analyse(q.expr) }));
    const wanted = [...new Set(queries.flatMap((q) => q.selectors.map((s) => s.name)))];
    expect(wanted.length).toBeGreaterThan(15);
    const served = await waitFor('every dashboard series served by one of the five services', async () => {
      const samples = (await Promise.all(cluster.services.map((s) => scrape(s.metricsUrl)))).flat();
      return wanted.every((name) => hasMetric(samples, name)) ? samples : undefined;
    }, 15_000, 500).catch(async () => (await Promise.all(cluster.services.map((s) => scrape(s.metricsUrl)))).flat());
    // Exact series names: a histogram is served as _bucket/_sum/_count, never by its bare name.
    expect(wanted.filter((name) => !hasMetric(served, name))).toEqual([]);

    const labelsOf = (name: string) => new Set(served.filter((s) => s.name === name).flatMap((s) => Object.keys(s.labels)));
    const unknown: string[] = [];
    for (const q of queries) {
      for (const selector of q.selectors) {
        const have = labelsOf(selector.name);
        for (const label of selector.labels) if (!TARGET_LABELS.has(label) && !have.has(label)) unknown.push(`${q.where}: ${selector.name} has no label ${label}`);
      }
      const have = new Set(q.selectors.flatMap((s) => [...labelsOf(s.name)]));
      for (const label of q.grouping) if (!TARGET_LABELS.has(label) && !have.has(label)) unknown.push(`${q.where}: groups by ${label}, which none of its series has`);
    }
    expect(unknown).toEqual([]);
  });
});
