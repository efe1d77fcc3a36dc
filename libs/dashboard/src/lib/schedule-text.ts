// How a schedule's timing reads in a table.
import type { Schedule } from '../api/types';
import { formatDuration } from './format';

/** The cron expression, "every 5 min 00 s", or the one-off instant. */
export function expressionOf(
  s: Pick<Schedule, 'kind' | 'cronExpression' | 'intervalSeconds' | 'runAt'>,
): string {
  if (s.kind === 'Cron') return s.cronExpression ?? '—';
  if (s.kind === 'Interval')
    return s.intervalSeconds ? `every ${formatDuration(s.intervalSeconds * 1000)}` : '—';
  return s.runAt ? `once at ${s.runAt}` : 'once';
}

/** The next fire instant: the first of `nextRuns` when the server sends them, else `nextRunAt`. */
export function nextRunOf(s: Pick<Schedule, 'nextRunAt' | 'nextRuns'>): string | null {
  return s.nextRuns?.[0] ?? s.nextRunAt ?? null;
}

/** "3 failed of 20" style summary of the recent-run window (addendum §14.9). */
export function healthSummary(h: Schedule['health']): string {
  if (h.total === 0) return 'no runs yet';
  const parts = [`${h.completed} completed`];
  if (h.failed) parts.push(`${h.failed} failed`);
  if (h.cancelled) parts.push(`${h.cancelled} cancelled`);
  if (h.running) parts.push(`${h.running} running`);
  if (h.skipped) parts.push(`${h.skipped} skipped`);
  return `${parts.join(', ')} of the last ${h.total}`;
}
