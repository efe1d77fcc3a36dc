// StageNextMessage fixtures with unique ids.
import type { StageNextMessage, StageOptions } from './protocol.js';

let executions = 0;

export const defaultOptions: StageOptions = {
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
};

export function stageMessage(
  applicationId: number,
  handler: string,
  fields: Partial<StageNextMessage> = {},
): StageNextMessage {
  executions += 1;
  return {
    applicationId,
    pipelineId: 100 + executions,
    stageId: 1000 + executions,
    executionId: `exec-${executions}`,
    stageName: `stage ${executions}`,
    stageHandlerName: handler,
    input: '',
    options: defaultOptions,
    pipelineContextItems: [],
    traceId: 'trace-1',
    spanId: 'span-1',
    dispatchedAt: new Date().toISOString(),
    timeOutSeconds: null,
    previousAttempts: 0,
    ...fields,
  };
}
