import { randomUUID } from 'node:crypto';
import type { StageNextMessage } from '@po/contracts';

/** A valid StageNext message (api-spec §5.1) for tests that publish or fetch one; `overrides` win. */
export function stageNextMessage(overrides: Partial<StageNextMessage> = {}): StageNextMessage {
  return {
    applicationId: 1,
    pipelineId: 1,
    stageId: 1,
    executionId: randomUUID(),
    stageName: 'stage',
    stageHandlerName: 'handler',
    input: 'in',
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
    pipelineContextItems: [],
    traceId: '0'.repeat(32),
    spanId: '0'.repeat(16),
    dispatchedAt: new Date().toISOString(),
    timeOutSeconds: null,
    previousAttempts: 0,
    ...overrides,
  };
}
