/**
 * Retention (decision 0083): how long each family of rows is kept, and when a cleanup round has
 * more to do. The families are deleted by libs/db's retention repository; what makes a row
 * eligible beyond its age (terminal pipelines only, the scheduler's Queued runs, …) is written
 * there, next to the statements, and documented in docs/retention.md.
 */

export const RETENTION_FAMILIES = [
  'pipelines',
  'workerEvents',
  'workerSessions',
  'scheduleRuns',
  'systemLogs',
] as const;
export type RetentionFamily = (typeof RETENTION_FAMILIES)[number];

/** Days each family is kept; 0 keeps it forever. */
export type RetentionDays = Record<RetentionFamily, number>;

const DAY_MS = 86_400_000;

/**
 * The instant before which a family's rows are old enough to delete, or null when the family is
 * kept forever (0 days). Rows exactly at the cutoff are kept: callers compare with `<`.
 */
export function retentionCutoff(now: Date, days: number): Date | null {
  if (!Number.isSafeInteger(days) || days < 0)
    throw new RangeError(`retention days must be a non-negative integer, got ${days}`);
  return days === 0 ? null : new Date(now.getTime() - days * DAY_MS);
}

/** The cutoff of every family that is not kept forever, in RETENTION_FAMILIES order. */
export function retentionCutoffs(now: Date, days: RetentionDays): [RetentionFamily, Date][] {
  const out: [RetentionFamily, Date][] = [];
  for (const family of RETENTION_FAMILIES) {
    const cutoff = retentionCutoff(now, days[family]);
    if (cutoff) out.push([family, cutoff]);
  }
  return out;
}

/**
 * Whether a family may hold more deletable rows after a batch: a batch that came back full may
 * have stopped at its limit, one that came back short found everything there was (or skipped rows
 * another replica holds, which that replica deletes). So a round loops while batches are full.
 */
export function moreToDelete(deletedInBatch: number, batchSize: number): boolean {
  return deletedInBatch >= batchSize;
}
