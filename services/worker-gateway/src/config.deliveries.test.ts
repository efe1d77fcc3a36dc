// The delivery limits of decision 0081 in the worker-gateway's environment.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@po/config';
import { parseConfig } from './config.js';

describe('delivery limits (decision 0081)', () => {
  it('default to 96 in flight and 256 waiting per application, 64 MiB held, 512 open queues, a poll backing off to 2 s', () => {
    expect(parseConfig({})).toMatchObject({
      maxInflight: 128,
      maxInflightPerApp: 96,
      maxWaitingPerApp: 256,
      maxInflightBytes: 67_108_864,
      maxFetchers: 512,
      pollIntervalMs: 250,
      pollMaxMs: 2000,
    });
  });

  it('are read from GATEWAY_MAX_INFLIGHT_PER_APP, GATEWAY_MAX_WAITING_PER_APP, GATEWAY_MAX_INFLIGHT_BYTES, GATEWAY_MAX_FETCHERS and GATEWAY_PULL_POLL_MAX_MS', () => {
    expect(
      parseConfig({
        GATEWAY_MAX_INFLIGHT_PER_APP: '16',
        GATEWAY_MAX_WAITING_PER_APP: '32',
        GATEWAY_MAX_INFLIGHT_BYTES: '1048576',
        GATEWAY_MAX_FETCHERS: '100',
        GATEWAY_PULL_POLL_MAX_MS: '5000',
      }),
    ).toMatchObject({ maxInflightPerApp: 16, maxWaitingPerApp: 32, maxInflightBytes: 1_048_576, maxFetchers: 100, pollMaxMs: 5000 });
  });

  it('refuse zero or nonsense values', () => {
    for (const env of [{ GATEWAY_MAX_INFLIGHT_PER_APP: '0' }, { GATEWAY_MAX_WAITING_PER_APP: 'many' }, { GATEWAY_MAX_FETCHERS: '0' }, { GATEWAY_MAX_INFLIGHT_BYTES: '10' }]) {
      expect(() => parseConfig(env)).toThrow(ConfigError);
    }
  });
});

describe('the results commit linger (decision 0125)', () => {
  it('is 2 ms unless RESULTS_COMMIT_LINGER_MS says otherwise, 0 turning it off, at most 50', () => {
    expect(parseConfig({}).resultsCommitLingerMs).toBe(2);
    expect(parseConfig({ RESULTS_COMMIT_LINGER_MS: '0' }).resultsCommitLingerMs).toBe(0);
    expect(() => parseConfig({ RESULTS_COMMIT_LINGER_MS: '51' })).toThrow(ConfigError);
    expect(() => parseConfig({ RESULTS_COMMIT_LINGER_MS: '-1' })).toThrow(ConfigError);
  });
});
