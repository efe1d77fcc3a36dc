// The BullMQ name behind a worker-facing StageNext queue name, and the size a held message counts
// for (decision 0081).
import { QueueKeys } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { keySlot } from './key-slot.js';
import type { StageNextMessage } from '@po/contracts';
import { stageNextBullName, stageNextMessageBytes } from './stage-next.js';

describe('stageNextBullName', () => {
  it('is the worker-facing name as one hash tag, so every key of a queue shares a cluster slot', () => {
    expect(stageNextBullName('app_7_send_mail_StageNext')).toBe('{app_7_send_mail_StageNext}');
    expect(stageNextBullName('app_7_é/ü?#&_StageNext')).toBe('{app_7_é/ü?#&_StageNext}');
    const keys = new QueueKeys('po');
    const name = stageNextBullName('app_7_a}b{c_StageNext');
    const slots = ['wait', 'active', 'meta', 'events', 'id', 'exec-1'].map((t) => keySlot(keys.toKey(name, t)));
    expect(new Set(slots).size).toBe(1);
    expect(slots[0]).toBe(keySlot('app_7_a%7Db%7Bc_StageNext'));
  });

  it('spreads different applications and handlers over the slots', () => {
    const slots = new Set(Array.from({ length: 40 }, (_, i) => keySlot(new QueueKeys('po').toKey(stageNextBullName(`app_${i}_echo_StageNext`), 'wait'))));
    expect(slots.size).toBeGreaterThan(30);
  });

  it('has no `:` in what it gives BullMQ', () => {
    expect(stageNextBullName('app_7_a:b::_StageNext')).toBe('{app_7_a%3Ab%3A%3A_StageNext}');
  });

  it('cannot make two handlers share a queue: `a:b`, `a%3Ab`, `a%253Ab` and braces stay apart', () => {
    const names = ['a:b', 'a%3Ab', 'a%253Ab', 'a%3ab', '%', ':', '%3A', '%25', '{', '}', '%7B', '{}'].map((h) => stageNextBullName(`app_1_${h}_StageNext`));
    expect(new Set(names).size).toBe(names.length);
  });
});

describe('stageNextMessageBytes', () => {
  const message = (input: string, values: string[]): StageNextMessage => ({
    applicationId: 1,
    pipelineId: 2,
    stageId: 3,
    executionId: '00000000-0000-4000-8000-000000000000',
    stageName: 'stage',
    stageHandlerName: 'handler',
    input,
    options: {
      runNextIfFailed: false,
      retryInterval: 0,
      maxRetries: 0,
      timeOut: null,
      retryOnErrorCodes: [],
      backoff: 'fixed',
      maxRetryInterval: null,
      jitter: false,
      dependsOn: [],
      runInParallelWith: [],
      failIfOutputEmpty: false,
      notifyOnFailure: false,
      runAsUser: null,
      concurrencyKey: null,
      concurrencyLimit: null,
      priority: 3,
    },
    pipelineContextItems: values.map((value, i) => ({ key: `k${i}`, value, valueType: null, isSensitive: false, isDeleted: false })),
    traceId: '0'.repeat(32),
    spanId: '0'.repeat(16),
    dispatchedAt: '2025-01-01T00:00:00.000Z',
    timeOutSeconds: null,
    previousAttempts: 0,
  });

  it('is close to the byte length of the stored JSON, large or small', () => {
    for (const m of [message('', []), message('x'.repeat(200_000), ['é'.repeat(60_000), 'v'.repeat(60_000)])]) {
      const stored = Buffer.byteLength(JSON.stringify(m));
      const counted = stageNextMessageBytes(m);
      expect(counted).toBeGreaterThanOrEqual(stored * 0.9);
      expect(counted).toBeLessThanOrEqual(stored * 1.5 + 512);
    }
  });
});
