import { Counter, Gauge } from 'prom-client';
import { once, queueLabels, registers } from './metrics.js';

/**
 * Gauges read when Prometheus scrapes (deliveries in flight, database pools, queue depths, dead
 * letters, the worker fleet), each through `perScrape` so that a read that fails is counted, not
 * thrown (docs/observability.md).
 */

const collectErrors = once(
  () =>
    new Counter({
      name: 'po_metrics_collect_errors_total',
      help: 'Gauges read on scrape that could not be read (database or Redis unavailable), by collector.',
      labelNames: ['collector'] as const,
      registers,
    }),
);

/** Reads once per scrape however many gauges share it (prom-client collects them concurrently). */
function perScrape<T>(name: string, read: () => Promise<T> | T): () => Promise<T | undefined> {
  // Served at 0 from the start, so rate() and the dashboard see the series before any failure.
  collectErrors().inc({ collector: name }, 0);
  let last: { at: number; value: Promise<T | undefined> } | undefined;
  return () => {
    const now = Date.now();
    if (!last || now - last.at > 1000) {
      last = {
        at: now,
        value: Promise.resolve()
          .then(read)
          .catch(() => {
            collectErrors().inc({ collector: name });
            return undefined;
          }),
      };
    }
    return last.value;
  };
}

/** po_deliveries_inflight: deliveries held by this worker-gateway process. */
export function observeDeliveriesInflight(read: () => number): void {
  new Gauge({
    name: 'po_deliveries_inflight',
    help: 'Deliveries handed out by this worker-gateway process and not yet acknowledged.',
    registers,
    collect() {
      this.set(read());
    },
  });
}

export interface DatabasePoolSample {
  /** The pool's configured maximum. */
  max: number;
  /** Open pool connections, idle ones included. */
  total: number;
  idle: number;
  /** Callers waiting for a pool connection. */
  waiting: number;
  /** Session connections outside the pool (LISTEN): 0 or 1. */
  sessions: number;
}

/**
 * The connection budget of this process (issue 27): what its pool may open, holds and is waited
 * for, and its LISTEN session. Summed over the pods, it is what PostgreSQL (or the pooler) sees.
 */
export function observeDatabasePool(read: () => DatabasePoolSample): void {
  new Gauge({
    name: 'po_db_pool_max_connections',
    help: "The PostgreSQL pool's maximum size in this process.",
    registers,
    collect() {
      this.set(read().max);
    },
  });
  new Gauge({
    name: 'po_db_pool_connections',
    help: 'Open PostgreSQL pool connections of this process: state=in_use (checked out) or idle.',
    labelNames: ['state'] as const,
    registers,
    collect() {
      const s = read();
      this.set({ state: 'in_use' }, s.total - s.idle);
      this.set({ state: 'idle' }, s.idle);
    },
  });
  new Gauge({
    name: 'po_db_pool_waiting_requests',
    help: 'Callers of this process waiting for a PostgreSQL pool connection (all busy).',
    registers,
    collect() {
      this.set(read().waiting);
    },
  });
  new Gauge({
    name: 'po_db_session_connections',
    help: 'PostgreSQL session connections of this process outside its pool (LISTEN for the key and session caches): 0 or 1.',
    registers,
    collect() {
      this.set(read().sessions);
    },
  });
}

export interface QueueSample {
  queue: string;
  waiting: number;
  active: number;
  delayed: number;
  /** Age of the oldest waiting message in seconds, 0 when none waits. */
  oldestAgeSeconds: number;
}

/** Queue depth and oldest-message age per StageNext queue, read on scrape. */
export function observeStageNextQueues(read: () => Promise<QueueSample[]>): void {
  const sample = perScrape('stagenext_queues', read);
  new Gauge({
    name: 'po_stagenext_queue_messages',
    help: 'Messages of a StageNext queue by state (waiting, active = delivered but not acknowledged, delayed); queues seen recently.',
    labelNames: ['queue', 'state'] as const,
    registers,
    async collect() {
      const samples = await sample();
      this.reset();
      for (const s of samples ?? []) {
        const queue = queueLabels.value(s.queue);
        this.set({ queue, state: 'waiting' }, s.waiting);
        this.set({ queue, state: 'active' }, s.active);
        this.set({ queue, state: 'delayed' }, s.delayed);
      }
    },
  });
  new Gauge({
    name: 'po_stagenext_queue_oldest_age_seconds',
    help: 'Age of the oldest waiting message of a StageNext queue (0 when empty).',
    labelNames: ['queue'] as const,
    registers,
    async collect() {
      const samples = await sample();
      this.reset();
      for (const s of samples ?? [])
        this.set({ queue: queueLabels.value(s.queue) }, s.oldestAgeSeconds);
    },
  });
}

export interface JobCountsSample {
  waiting: number;
  active: number;
  delayed: number;
}

export interface InternalQueuesSample {
  /** The results shards `{stage-results-K}`, K from 0 to 7: a fixed set, so `shard` is bounded. */
  resultShards: (JobCountsSample & { shard: number })[];
  pipelineEvents: JobCountsSample;
}

const STATES = ['waiting', 'active', 'delayed'] as const;

/**
 * Backlog of the queues between the services, read on scrape: the results shards (the
 * result-consumer's input) and pipeline-events (the pipeline-service's). No per-application label:
 * applications share a shard, and `shard` has eight values.
 */
export function observeInternalQueues(read: () => Promise<InternalQueuesSample>): void {
  const sample = perScrape('internal_queues', read);
  new Gauge({
    name: 'po_stage_results_queue_jobs',
    help: 'Jobs of a results shard {stage-results-K} by state (waiting, active = taken by a result-consumer, delayed = retries); a group of results is one job.',
    labelNames: ['shard', 'state'] as const,
    registers,
    async collect() {
      const s = await sample();
      this.reset();
      for (const shard of s?.resultShards ?? []) for (const state of STATES) this.set({ shard: String(shard.shard), state }, shard[state]);
    },
  });
  new Gauge({
    name: 'po_pipeline_events_queue_jobs',
    help: 'Jobs of the pipeline-events queue by state (waiting, active = taken by a pipeline-service, delayed = wake-ups and retries).',
    labelNames: ['state'] as const,
    registers,
    async collect() {
      const s = await sample();
      this.reset();
      if (s) for (const state of STATES) this.set({ state }, s.pipelineEvents[state]);
    },
  });
}

/** po_results_dead_letters: the dead-lettered results waiting for an operator, read from Redis on scrape. */
export function observeResultDeadLetters(read: () => Promise<number>): void {
  const sample = perScrape('result_dead_letters', read);
  new Gauge({
    name: 'po_results_dead_letters',
    help: 'Dead-lettered results in the stage-results failed set, waiting to be replayed or dropped (npm run admin -- results dead-letters).',
    registers,
    async collect() {
      const count = await sample();
      this.reset();
      if (count !== undefined) this.set(count);
    },
  });
}

export interface WorkerSample {
  /** Workers with status Active. */
  active: number;
  /** Active workers with a recent heartbeat (or bootstrap). */
  healthy: number;
  /** Unexpired, not superseded sessions. */
  sessions: number;
  /** Healthy workers per StageNext queue they serve. */
  healthyByQueue: { queue: string; workers: number }[];
}

/** Worker and session gauges read from PostgreSQL on scrape (the same numbers on every replica: aggregate with max). */
export function observeWorkers(read: () => Promise<WorkerSample>): void {
  const sample = perScrape('workers', read);
  new Gauge({
    name: 'po_workers',
    help: 'Registered workers: state=active (status Active) and state=healthy (Active with a recent heartbeat).',
    labelNames: ['state'] as const,
    registers,
    async collect() {
      const s = await sample();
      this.reset();
      if (!s) return;
      this.set({ state: 'active' }, s.active);
      this.set({ state: 'healthy' }, s.healthy);
    },
  });
  new Gauge({
    name: 'po_worker_sessions',
    help: 'Worker sessions that are current (not superseded) and unexpired.',
    registers,
    async collect() {
      const s = await sample();
      this.reset();
      if (s) this.set(s.sessions);
    },
  });
  new Gauge({
    name: 'po_queue_healthy_workers',
    help: 'Healthy workers serving each StageNext queue (application and handler).',
    labelNames: ['queue'] as const,
    registers,
    async collect() {
      const s = await sample();
      this.reset();
      for (const q of s?.healthyByQueue ?? [])
        this.set({ queue: queueLabels.value(q.queue) }, q.workers);
    },
  });
}
