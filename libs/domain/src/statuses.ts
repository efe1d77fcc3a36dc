import type { PipelineStatus, StageStatus } from '@po/contracts';

// The statuses are wire values: @po/contracts defines them, the domain gives them their rules.
export { PIPELINE_STATUSES, STAGE_STATUSES } from '@po/contracts';
export type { PipelineStatus, StageStatus } from '@po/contracts';

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
