// Durations and ages as people read them in a table: short, with the unit, no false precision.

/** 850 ms, 4.2 s, 3 min 05 s, 2 h 03 min, 3 d 4 h. Negative or non-finite input → "—". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = ms / 1000;
  if (seconds < 60)
    return `${seconds < 10 ? (Math.floor(seconds * 10) / 10).toFixed(1) : Math.floor(seconds)} s`;
  const totalSeconds = Math.floor(seconds);
  const totalMinutes = Math.floor(totalSeconds / 60);
  if (totalMinutes < 60)
    return `${totalMinutes} min ${String(totalSeconds % 60).padStart(2, '0')} s`;
  const totalHours = Math.floor(totalMinutes / 60);
  if (totalHours < 24) return `${totalHours} h ${String(totalMinutes % 60).padStart(2, '0')} min`;
  return `${Math.floor(totalHours / 24)} d ${totalHours % 24} h`;
}

/** How long ago `iso` was at `now`: "just now", "12 s ago", "5 min ago", "3 h ago", "2 d ago". */
export function formatAge(iso: string | null | undefined, now: number): string {
  if (!iso) return '—';
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return '—';
  const seconds = Math.floor((now - then) / 1000);
  if (seconds < 1) return 'just now';
  if (seconds < 60) return `${seconds} s ago`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.floor(hours / 24)} d ago`;
}

/**
 * A stage's (or pipeline's) run time: from start to finish, or to `now` while it still runs;
 * null before it started.
 */
export function elapsedMs(
  startedAt: string | null | undefined,
  finishedAt: string | null | undefined,
  now: number,
): number | null {
  if (!startedAt) return null;
  const start = Date.parse(startedAt);
  if (Number.isNaN(start)) return null;
  const end = finishedAt ? Date.parse(finishedAt) : now;
  if (Number.isNaN(end)) return null;
  return Math.max(0, end - start);
}

/** Spec enum spellings to words: "WaitingForApproval" → "Waiting for approval". */
export function humanize(value: string): string {
  const words = value.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1).toLowerCase();
}
