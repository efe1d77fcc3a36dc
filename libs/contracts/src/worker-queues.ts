// Names of the StageNext queues: `app_{applicationId}_{handler}_StageNext` (addendum §9, §15).
const QUEUE_NAME = /^app_([1-9][0-9]*)_(.+)_StageNext$/s;

/** `app_{applicationId}_{handler}_StageNext`. */
export function stageQueueName(applicationId: number, handler: string): string {
  return `app_${applicationId}_${handler}_StageNext`;
}

/** The parts of a stage queue name, or undefined when the name is not of that form. */
export function parseStageQueueName(
  queue: string,
): { applicationId: number; handler: string } | undefined {
  const m = QUEUE_NAME.exec(queue);
  if (m === null) return undefined;
  const [, app, handler] = m;
  const applicationId = Number(app);
  if (handler === undefined || !Number.isSafeInteger(applicationId)) return undefined;
  return { applicationId, handler };
}
