// The approval marker: `return awaitApproval(output)` parks the stage in WaitingForApproval.
import type { ApprovalRequest } from './types.js';

// Symbol.for, so two copies of the SDK in one process still recognise each other's markers.
const marker = Symbol.for('@po/worker-sdk/awaitApproval');

/** Return this from a handler to park the stage until it is resumed (isWaitingForApproval). */
export function awaitApproval(result?: unknown): ApprovalRequest {
  return { [marker]: true, result } as unknown as ApprovalRequest;
}

export function isApprovalRequest(value: unknown): value is ApprovalRequest {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[marker] === true
  );
}
