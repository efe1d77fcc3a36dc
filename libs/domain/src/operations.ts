import { DomainError } from './errors.js';

/**
 * A bulk operation's pace (decision 0133): how many items a runner applies in this tick, given
 * `maxPerSecond`, the time since its previous tick, and the fraction of an item it had left over.
 * At most one second's worth: a runner that was away (a restart, a lapsed lease taken over) does
 * not catch up in a burst.
 */
export function operationBudget(maxPerSecond: number, elapsedMs: number, carry: number): { take: number; carry: number } {
  const allowance = Math.min(maxPerSecond, carry + (maxPerSecond * Math.max(0, elapsedMs)) / 1000);
  // The epsilon keeps a rate like 7/s at 100 ms ticks from losing an item to rounding (0.7 × 10).
  const take = Math.floor(allowance + 1e-9);
  return { take, carry: Math.max(0, allowance - take) };
}

/** A second operation of a kind while one runs for the application (409 `conflict`). */
export class OperationRunning extends DomainError {
  constructor(kind: string, runningId: number) {
    super('conflict', `A bulk ${kind} operation is already running for this application: operation ${runningId}. Cancel it or wait for it to end.`);
  }
}

/** A cancel of an operation that already ended (409 `conflict`). */
export class OperationEnded extends DomainError {
  constructor(id: number, status: string) {
    super('conflict', `Operation ${id} is ${status}: only a Running operation can be cancelled.`);
  }
}
