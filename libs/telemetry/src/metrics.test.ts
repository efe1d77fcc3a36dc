import { describe, expect, it } from 'vitest';
import { observeDeliveriesInflight, observeInternalQueues, observeStageNextQueues } from './gauges.js';
import { LabelCap, OTHER_LABEL, metricsText, resultsFenced, stageOutcomes } from './metrics.js';

describe('metrics', () => {
  it('caps a user-defined label: the first values pass, later ones become _other', () => {
    const cap = new LabelCap(2);
    expect([cap.value('a'), cap.value('b'), cap.value('c'), cap.value('a')]).toEqual(['a', 'b', OTHER_LABEL, 'a']);
    expect(new LabelCap(5).value('x'.repeat(300))).toHaveLength(100);
  });

  it('serves the Prometheus text format with counters and gauges read on scrape', async () => {
    let inflight = 3;
    observeDeliveriesInflight(() => inflight);
    observeStageNextQueues(async () => [{ queue: 'app_1_echo_StageNext', waiting: 4, active: 1, delayed: 0, oldestAgeSeconds: 2.5 }]);
    stageOutcomes().labels('echo', 'completed').inc();
    resultsFenced().labels('stale_execution').inc(2);
    const first = await metricsText();
    expect(first.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(first.body).toContain('# TYPE po_deliveries_inflight gauge');
    expect(first.body).toContain('po_deliveries_inflight 3');
    expect(first.body).toContain('po_stagenext_queue_messages{queue="app_1_echo_StageNext",state="waiting"} 4');
    expect(first.body).toContain('po_stagenext_queue_oldest_age_seconds{queue="app_1_echo_StageNext"} 2.5');
    expect(first.body).toContain('po_stage_outcomes_total{handler="echo",outcome="completed"} 1');
    expect(first.body).toContain('po_results_fenced_total{reason="stale_execution"} 2');
    // A scrape-time reader's error counter is served at 0 before any failure.
    expect(first.body).toContain('po_metrics_collect_errors_total{collector="stagenext_queues"} 0');
    inflight = 0;
    expect((await metricsText()).body).toContain('po_deliveries_inflight 0');
  });

  it('serves the backlog of the results shards by shard and state, and of pipeline-events by state; a failed read serves no series and counts an error', async () => {
    let fail = false;
    const shards = Array.from({ length: 8 }, (_, shard) => ({ shard, waiting: shard, active: 0, delayed: shard === 7 ? 2 : 0 }));
    observeInternalQueues(async () => {
      if (fail) throw new Error('Redis is away');
      return { resultShards: shards, pipelineEvents: { waiting: 5, active: 1, delayed: 9 } };
    });
    const { body } = await metricsText();
    expect(body).toContain('po_stage_results_queue_jobs{shard="3",state="waiting"} 3');
    expect(body).toContain('po_stage_results_queue_jobs{shard="7",state="delayed"} 2');
    expect(body.match(/^po_stage_results_queue_jobs\{/gm)).toHaveLength(24);
    expect(body).toContain('po_pipeline_events_queue_jobs{state="waiting"} 5');
    expect(body).toContain('po_pipeline_events_queue_jobs{state="delayed"} 9');
    fail = true;
    await new Promise((resolve) => setTimeout(resolve, 1100)); // one read per scrape second
    const failed = (await metricsText()).body;
    expect(failed).not.toMatch(/^po_stage_results_queue_jobs\{/m);
    // The counter is collected before the gauges read, so the failure shows from the next scrape.
    expect((await metricsText()).body).toContain('po_metrics_collect_errors_total{collector="internal_queues"} 1');
  });
});
