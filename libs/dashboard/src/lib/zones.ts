// Fire times of a schedule, shown twice: in the schedule's own zone (where its cron is read) and
// in the viewer's zone (what it means to them), via Intl.DateTimeFormat.

/** The viewer's IANA zone, as the browser reports it (UTC when it reports none). */
export function viewerZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** "Sat, Mar 1, 2025, 13:00 GMT+1"-style text of an instant in `zone`; the ISO text on a bad zone. */
export function formatInZone(iso: string, zone: string, locale?: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '—';
  try {
    return new Intl.DateTimeFormat(locale, {
      timeZone: zone,
      weekday: 'short',
      year: 'numeric',
      month: 'short',
      day: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      second: date.getUTCSeconds() || date.getUTCMilliseconds() ? '2-digit' : undefined,
      hourCycle: 'h23',
      timeZoneName: 'short',
    }).format(date);
  } catch {
    return iso; // an unknown zone (RangeError): the instant is still right in UTC
  }
}

export interface RunTime {
  iso: string;
  inScheduleZone: string;
  inViewerZone: string;
}

/** The next runs in both zones, at most `count`, in order. */
export function runTimes(
  nextRuns: readonly string[],
  scheduleZone: string,
  viewer: string,
  count = 5,
  locale?: string,
): RunTime[] {
  return nextRuns.slice(0, count).map((iso) => ({
    iso,
    inScheduleZone: formatInZone(iso, scheduleZone, locale),
    inViewerZone: formatInZone(iso, viewer, locale),
  }));
}

/** A date-time in the viewer's zone, compact, for tables. */
export function formatLocal(iso: string | null | undefined, locale?: string): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '—';
  return new Intl.DateTimeFormat(locale, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  }).format(date);
}
