import { describe, expect, it } from 'vitest';
import { STANDARD_WEBHOOK_SCHEDULE } from '@po/domain';
import { parseConfig } from './config.js';

describe('pipeline-service config: webhooks (decision 0134)', () => {
  it('defaults: the Standard Webhooks schedule, 10 s per attempt, no private networks', () => {
    expect(parseConfig({}).webhooks).toMatchObject({
      timeoutMs: 10_000,
      schedule: [...STANDARD_WEBHOOK_SCHEDULE],
      allowPrivateNetworks: false,
    });
  });

  it('reads WEBHOOK_RETRY_SCHEDULE (seconds, comma-separated), WEBHOOK_TIMEOUT_MS and WEBHOOK_ALLOW_PRIVATE_NETWORKS', () => {
    const { webhooks } = parseConfig({
      WEBHOOK_RETRY_SCHEDULE: '0, 0.5,1',
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    });
    expect(webhooks).toMatchObject({
      schedule: [0, 0.5, 1],
      timeoutMs: 2000,
      allowPrivateNetworks: true,
    });
  });

  it('refuses a schedule with a gap, a negative, a word or more than 20 entries', () => {
    for (const bad of ['0,,5', '0,-1', '0,soon', Array(21).fill('1').join(',')])
      expect(() => parseConfig({ WEBHOOK_RETRY_SCHEDULE: bad }), bad).toThrow(
        /WEBHOOK_RETRY_SCHEDULE/,
      );
  });
});
