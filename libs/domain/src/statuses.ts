export const PIPELINE_STATUSES = ['NotStarted', 'Pending', 'Running', 'Paused', 'Completed', 'Failed', 'Cancelled'] as const;
export type PipelineStatus = (typeof PIPELINE_STATUSES)[number];

export const STAGE_STATUSES = [
  'NotStarted',
  'Running',
  'Pending',
  'RetryScheduled',
  'Throttled',
  'WaitingForApproval',
  'Completed',
  'Failed',
  'Skipped',
  'Cancelled',
] as const;
export type StageStatus = (typeof STAGE_STATUSES)[number];

const TERMINAL_PIPELINE = new Set<PipelineStatus>(['Completed', 'Failed', 'Cancelled']);
const TERMINAL_STAGE = new Set<StageStatus>(['Completed', 'Failed', 'Skipped', 'Cancelled']);

export function isTerminalPipeline(status: PipelineStatus): boolean {
  return TERMINAL_PIPELINE.has(status);
}

export function isTerminalStage(status: StageStatus): boolean {
  return TERMINAL_STAGE.has(status);
}

/** Error codes a handler may return that are never retried automatically (api-spec Errors). */
export const TERMINAL_ERROR_CODES = ['BUSINESS_REJECTED', 'VALIDATION_ERROR', 'INVALID_STATE', 'MISSING_REQUIRED_DATA'] as const;
