import { commonConfig, envReader, type CommonConfig } from '@po/config';
import { STANDARD_WEBHOOK_SCHEDULE } from '@po/domain';
import type { RetentionOptions } from './retention/cleanup.js';
import type { WebhookDelivererOptions } from './webhooks/deliverer.js';

export interface PipelineServiceConfig extends CommonConfig {
  eventConcurrency: number;
  /** Passes written in one transaction at most. */
  batchSize: number;
  maxActiveStages: number;
  sweepIntervalMs: number;
  lostMessageAfterSeconds: number;
  /** How often the bulk operation runner looks for work (decision 0133). */
  operationsTickMs: number;
  retention: RetentionOptions;
  /** Webhook deliveries (decision 0134). */
  webhooks: WebhookDelivererOptions;
}

/** Up to 100 years: a bigger number is a typo, and 0 already means forever. */
const DAYS = { min: 0, max: 36_500 };

export function parseConfig(env: Record<string, string | undefined>): PipelineServiceConfig {
  const read = envReader(env);
  const config = {
    ...commonConfig(read, 8082),
    eventConcurrency: read.int('DISPATCH_EVENT_CONCURRENCY', 64, { min: 1, max: 1024 }),
    batchSize: read.int('DISPATCH_BATCH', 64, { min: 1, max: 500 }),
    maxActiveStages: read.int('APP_MAX_ACTIVE_STAGES', 0, { min: 0 }),
    sweepIntervalMs: read.int('DISPATCH_SWEEP_INTERVAL_MS', 500, { min: 50, max: 1000 }),
    lostMessageAfterSeconds: read.int('DISPATCH_LOST_MESSAGE_AFTER_SECONDS', 30, {
      min: 1,
      max: 86_400,
    }),
    operationsTickMs: read.int('OPERATIONS_TICK_MS', 100, { min: 10, max: 10_000 }),
    retention: {
      days: {
        pipelines: read.int('RETENTION_PIPELINES_DAYS', 30, DAYS),
        workerEvents: read.int('RETENTION_WORKER_EVENTS_DAYS', 7, DAYS),
        workerSessions: read.int('RETENTION_WORKER_SESSIONS_DAYS', 7, DAYS),
        scheduleRuns: read.int('RETENTION_SCHEDULE_RUNS_DAYS', 30, DAYS),
        systemLogs: read.int('RETENTION_SYSTEM_LOGS_DAYS', 30, DAYS),
      },
      batchSize: read.int('RETENTION_BATCH_SIZE', 500, { min: 1, max: 10_000 }),
      intervalMs: read.int('RETENTION_INTERVAL_SECONDS', 60, { min: 1, max: 86_400 }) * 1000,
    },
    webhooks: {
      tickMs: read.int('WEBHOOK_TICK_MS', 250, { min: 10, max: 60_000 }),
      timeoutMs: read.int('WEBHOOK_TIMEOUT_MS', 10_000, { min: 100, max: 60_000 }),
      concurrency: read.int('WEBHOOK_CONCURRENCY', 16, { min: 1, max: 256 }),
      schedule: retrySchedule(read),
      allowPrivateNetworks: read.bool('WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
    },
  };
  read.done();
  return config;
}

/**
 * WEBHOOK_RETRY_SCHEDULE: seconds before each attempt, comma-separated (the first is usually 0).
 * Unset: the Standard Webhooks schedule. Tests set short ones.
 */
function retrySchedule(read: ReturnType<typeof envReader>): number[] {
  const raw = read.str('WEBHOOK_RETRY_SCHEDULE', '').trim();
  if (raw === '') return [...STANDARD_WEBHOOK_SCHEDULE];
  const seconds = raw.split(',').map((s) => (s.trim() === '' ? NaN : Number(s)));
  if (seconds.length > 20 || seconds.some((n) => !Number.isFinite(n) || n < 0 || n > 86_400)) {
    read.problem(
      'WEBHOOK_RETRY_SCHEDULE must be 1 to 20 comma-separated numbers of seconds, each 0 to 86400',
    );
    return [...STANDARD_WEBHOOK_SCHEDULE];
  }
  return seconds;
}
