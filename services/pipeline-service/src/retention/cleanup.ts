import { RETENTION_STEPS, sqlOf, type Db, type RetentionTable } from '@po/db';
import {
  moreToDelete,
  retentionCutoffs,
  type RetentionDays,
  type RetentionFamily,
} from '@po/domain';
import { retentionDeleted, type Logger } from '@po/telemetry';

export interface RetentionOptions {
  /** RETENTION_*_DAYS: days each family is kept, 0 = forever. */
  days: RetentionDays;
  /** RETENTION_BATCH_SIZE: candidates per batch (one short transaction each). */
  batchSize: number;
  /** RETENTION_INTERVAL_SECONDS, in ms: the pause between rounds. */
  intervalMs: number;
}

export interface RetentionDeps {
  db: Db;
  logger: Logger;
  clock: () => Date;
}

export interface FamilyReport {
  deleted: Partial<Record<RetentionTable, number>>;
  batches: number;
}

/**
 * One cleanup round (decision 0083): for every family that is not kept forever, each of its steps
 * runs batch after batch while the batches come back full, so a backlog is worked off in one round
 * and a quiet table costs one short statement. A family whose batch fails is logged and left for
 * the next round; the others go on. `stopping` is asked between batches, so shutdown waits for one
 * batch at most.
 */
export async function retentionRound(
  deps: RetentionDeps,
  options: RetentionOptions,
  stopping: () => boolean = () => false,
): Promise<Map<RetentionFamily, FamilyReport>> {
  const sql = sqlOf(deps.db);
  const reports = new Map<RetentionFamily, FamilyReport>();
  for (const [family, cutoff] of retentionCutoffs(deps.clock(), options.days)) {
    const report: FamilyReport = { deleted: {}, batches: 0 };
    reports.set(family, report);
    try {
      for (const step of RETENTION_STEPS[family]) {
        for (let full = true; full && !stopping();) {
          const batch = await step(sql, cutoff, options.batchSize);
          report.batches += 1;
          for (const [table, n] of Object.entries(batch.deleted) as [RetentionTable, number][]) {
            if (n === 0) continue;
            report.deleted[table] = (report.deleted[table] ?? 0) + n;
            retentionDeleted().inc({ family, table }, n);
          }
          full = moreToDelete(batch.taken, options.batchSize);
        }
      }
    } catch (err) {
      deps.logger.error({ err, family }, 'retention batch failed; retried next round');
    }
    if (Object.keys(report.deleted).length > 0) {
      deps.logger.info(
        { family, cutoff: cutoff.toISOString(), deleted: report.deleted, batches: report.batches },
        'retention deleted old rows',
      );
    }
  }
  return reports;
}

/** Runs a round every `intervalMs` (after the previous one ended) until stopped. */
export function startRetention(
  deps: RetentionDeps,
  options: RetentionOptions,
): { stop(): Promise<void> } {
  let stopped = false;
  let running: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    running = retentionRound(deps, options, () => stopped)
      .catch((err: unknown) => deps.logger.error({ err }, 'retention round failed'))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, options.intervalMs);
      });
  };
  timer = setTimeout(tick, options.intervalMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
