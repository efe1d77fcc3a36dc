import { stageQueueName, type StageNextJob } from '@po/contracts';
import type { StageOptions } from '@po/domain';

export interface MessageSource {
  applicationId: number;
  pipelineId: number;
  traceId: string;
  stage: { id: number; name: string; handlerName: string; input: string; options: StageOptions; spanId: string; attempt: number };
  executionId: string;
  /** The context the message carries; empty when `contextSnapshotId` names it instead (decision 0121). */
  context: readonly { key: string; value: string; valueType: string | null; isSensitive: boolean }[];
  contextSnapshotId?: string;
  dispatchedAt: Date;
}

/** StageNextMessage (addendum §5.1): real context values, sensitive ones included, for the worker only. */
export function stageNextMessage(m: MessageSource): { queue: string; message: StageNextJob } {
  return {
    queue: stageQueueName(m.applicationId, m.stage.handlerName),
    message: {
      applicationId: m.applicationId,
      pipelineId: m.pipelineId,
      stageId: m.stage.id,
      executionId: m.executionId,
      stageName: m.stage.name,
      stageHandlerName: m.stage.handlerName,
      input: m.stage.input,
      options: m.stage.options,
      pipelineContextItems: m.context.map((c) => ({ ...c, isDeleted: false })),
      traceId: m.traceId,
      spanId: m.stage.spanId,
      dispatchedAt: m.dispatchedAt.toISOString(),
      timeOutSeconds: m.stage.options.timeOut,
      previousAttempts: m.stage.attempt,
      ...(m.contextSnapshotId === undefined ? {} : { contextSnapshotId: m.contextSnapshotId }),
    },
  };
}

/** Groups messages by queue, keeping dispatch order inside each queue. */
export function byQueue(items: readonly { queue: string; message: StageNextJob }[]): Map<string, StageNextJob[]> {
  const grouped = new Map<string, StageNextJob[]>();
  for (const { queue, message } of items) {
    const list = grouped.get(queue);
    if (list) list.push(message);
    else grouped.set(queue, [message]);
  }
  return grouped;
}
