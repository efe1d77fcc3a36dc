import type { Db, SchedulePlanRecord } from '@po/db';
import type { PlannedDefinition } from '@po/engine';

// Planned definitions are made where schedules fire (@po/engine fireScheduleTicks); kept here per schedule.
export { planDefinition, type PlannedDefinition } from '@po/engine';

/**
 * The stored definition a plan was made from: a new version (behaviour-changing PUT), a
 * traceId-only PUT (it sets updatedAt, addendum §14.7) or any other rewrite of the definition (its
 * stored size) gives a new key.
 */
export const planKey = (s: Pick<SchedulePlanRecord, 'definitionVersion' | 'updatedAt'>, storedBytes: number): string =>
  `${s.definitionVersion}:${s.updatedAt.getTime()}:${storedBytes}`;

/** Approximate bytes an entry holds (template text, one byte per character for the usual ASCII). */
const sizeOf = (plan: PlannedDefinition): number => 64 + (plan.ok ? plan.template.length : plan.reason.length);

/**
 * Planned definitions by schedule, least recently used evicted first, bounded by bytes: a schedule
 * firing every few seconds is planned once per definition, not once per tick. One entry per
 * schedule (a new key replaces the old one); an entry larger than a quarter of the bound is not
 * kept at all, so a few huge definitions cannot push everything else out.
 */
export class PlanCache {
  private readonly entries = new Map<number, { key: string; plan: PlannedDefinition; bytes: number }>();
  private total = 0;

  constructor(readonly maxBytes: number) {}

  get bytes(): number {
    return this.total;
  }

  get(scheduleId: number, key: string): PlannedDefinition | undefined {
    const entry = this.entries.get(scheduleId);
    if (entry === undefined || entry.key !== key) return undefined;
    // Map order is insertion order: re-inserting makes it the most recently used.
    this.entries.delete(scheduleId);
    this.entries.set(scheduleId, entry);
    return entry.plan;
  }

  set(scheduleId: number, key: string, plan: PlannedDefinition): void {
    this.delete(scheduleId);
    const bytes = sizeOf(plan);
    if (bytes > this.maxBytes / 4) return;
    this.entries.set(scheduleId, { key, plan, bytes });
    this.total += bytes;
    for (const [id, entry] of this.entries) {
      if (this.total <= this.maxBytes) break;
      this.entries.delete(id);
      this.total -= entry.bytes;
    }
  }

  delete(scheduleId: number): void {
    const entry = this.entries.get(scheduleId);
    if (entry === undefined) return;
    this.entries.delete(scheduleId);
    this.total -= entry.bytes;
  }
}

/** Default bound of a process's plan cache. */
export const PLAN_CACHE_BYTES = 64 * 1024 * 1024;

const perDb = new WeakMap<Db, PlanCache>();

/** The plan cache of deps that bring none (tests): one per database client, like one per process. */
export function planCacheOf(db: Db): PlanCache {
  let cache = perDb.get(db);
  if (!cache) {
    cache = new PlanCache(PLAN_CACHE_BYTES);
    perDb.set(db, cache);
  }
  return cache;
}
