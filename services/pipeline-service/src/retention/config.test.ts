// RETENTION_* settings as pipeline-service's config.ts reads them (issue 10 item 6, docs/retention.md).
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@po/config';
import { parseConfig } from '../config.js';

describe('retention settings', () => {
  it('defaults: pipelines 30 days, worker events 7, worker sessions 7, schedule runs 30, system logs 30; batches of 500 every 60 s', () => {
    expect(parseConfig({}).retention).toEqual({
      days: { pipelines: 30, workerEvents: 7, workerSessions: 7, scheduleRuns: 30, systemLogs: 30 },
      batchSize: 500,
      intervalMs: 60_000,
    });
  });

  it('reads every setting; 0 days (keep forever) is allowed', () => {
    const retention = parseConfig({
      RETENTION_PIPELINES_DAYS: '0',
      RETENTION_WORKER_EVENTS_DAYS: '1',
      RETENTION_WORKER_SESSIONS_DAYS: '2',
      RETENTION_SCHEDULE_RUNS_DAYS: '3',
      RETENTION_SYSTEM_LOGS_DAYS: '0',
      RETENTION_BATCH_SIZE: '50',
      RETENTION_INTERVAL_SECONDS: '5',
    }).retention;
    expect(retention).toEqual({
      days: { pipelines: 0, workerEvents: 1, workerSessions: 2, scheduleRuns: 3, systemLogs: 0 },
      batchSize: 50,
      intervalMs: 5_000,
    });
  });

  it('refuses negative days, a batch of 0 and an interval of 0, naming each', () => {
    try {
      parseConfig({
        RETENTION_WORKER_EVENTS_DAYS: '-1',
        RETENTION_BATCH_SIZE: '0',
        RETENTION_INTERVAL_SECONDS: '0',
      });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems.join('\n')).toMatch(
        /RETENTION_WORKER_EVENTS_DAYS[\s\S]*RETENTION_BATCH_SIZE[\s\S]*RETENTION_INTERVAL_SECONDS/,
      );
    }
  });
});
