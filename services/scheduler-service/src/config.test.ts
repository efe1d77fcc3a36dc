import { describe, expect, it } from 'vitest';
import { ConfigError } from '@po/config';
import { parseConfig } from './config.js';

describe('scheduler-service config', () => {
  it('defaults: port 8083, misfire grace 60 s, poll 1000 ms, concurrency 2, batch size 250', () => {
    expect(parseConfig({})).toMatchObject({ port: 8083, misfireGraceSeconds: 60, pollIntervalMs: 1000, concurrency: 2, batchSize: 250 });
  });

  it('reads SCHEDULER_BATCH_SIZE, 1..1000', () => {
    expect(parseConfig({ SCHEDULER_BATCH_SIZE: '40' }).batchSize).toBe(40);
    for (const bad of ['0', '1001', '-5', '2.5', 'many']) expect(() => parseConfig({ SCHEDULER_BATCH_SIZE: bad }), bad).toThrow(/SCHEDULER_BATCH_SIZE/);
  });

  it('reads SCHEDULER_PREPARE_AHEAD_MS, 0..5000, default 1000 (0 turns preparing ahead off)', () => {
    expect(parseConfig({}).prepareAheadMs).toBe(1000);
    expect(parseConfig({ SCHEDULER_PREPARE_AHEAD_MS: '0' }).prepareAheadMs).toBe(0);
    expect(parseConfig({ SCHEDULER_PREPARE_AHEAD_MS: '2000' }).prepareAheadMs).toBe(2000);
    for (const bad of ['-1', '5001', '1.5', 'soon']) expect(() => parseConfig({ SCHEDULER_PREPARE_AHEAD_MS: bad }), bad).toThrow(/SCHEDULER_PREPARE_AHEAD_MS/);
  });

  it('reads SCHEDULER_MISFIRE_GRACE_SECONDS and lists every problem', () => {
    expect(parseConfig({ SCHEDULER_MISFIRE_GRACE_SECONDS: '5' }).misfireGraceSeconds).toBe(5);
    expect(() => parseConfig({ SCHEDULER_MISFIRE_GRACE_SECONDS: '-1', SCHEDULER_POLL_INTERVAL_MS: '5000' })).toThrow(ConfigError);
    try {
      parseConfig({ SCHEDULER_MISFIRE_GRACE_SECONDS: 'x', SCHEDULER_POLL_INTERVAL_MS: '5000' });
    } catch (err) {
      expect(String((err as Error).message)).toMatch(/SCHEDULER_MISFIRE_GRACE_SECONDS[\s\S]*SCHEDULER_POLL_INTERVAL_MS/);
    }
  });
});
