import type { Deps } from '../deps.js';

/**
 * Enough for every delivery a process holds at once (GATEWAY_MAX_INFLIGHT) many times over: a
 * result whose lease is older than the newest this many grants is only read, not refused.
 */
const REMEMBERED = 16_384;

/**
 * The worker each execution's lease was granted or renewed to through this process. A lease is
 * granted once per execution, so the entry never goes stale; it lets a result that skips the
 * intake read (decision 0099) show that it comes from the lease holder (decision 0117).
 */
export class LeaseHolders {
  private readonly byExecution = new Map<string, string>();

  granted(executionId: string, workerId: string): void {
    this.byExecution.delete(executionId);
    this.byExecution.set(executionId, workerId);
    if (this.byExecution.size > REMEMBERED) this.byExecution.delete(this.byExecution.keys().next().value!);
  }

  /** The holder's workerId, or undefined when no grant for the execution went through here lately. */
  holder(executionId: string): string | undefined {
    return this.byExecution.get(executionId);
  }
}

const perProcess = new WeakMap<Deps, LeaseHolders>();

/** The lease holders of this process (one per Deps: each test harness has its own). */
export function leaseHolders(deps: Deps): LeaseHolders {
  let holders = perProcess.get(deps);
  if (!holders) perProcess.set(deps, (holders = new LeaseHolders()));
  return holders;
}
