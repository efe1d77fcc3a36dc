import { describe, expect, it } from 'vitest';
import { formatInZone, runTimes } from './zones';

describe('formatInZone', () => {
  it('shows one instant as the wall-clock time of each zone', () => {
    const iso = '2025-07-01T12:00:00.000Z';
    expect(formatInZone(iso, 'UTC', 'en-GB')).toMatch(/12:00.*UTC/);
    expect(formatInZone(iso, 'Europe/Berlin', 'en-GB')).toMatch(/14:00/); // CEST, UTC+2
    expect(formatInZone(iso, 'America/New_York', 'en-GB')).toMatch(/08:00/); // EDT, UTC-4
    expect(formatInZone(iso, 'Asia/Kolkata', 'en-GB')).toMatch(/17:30/);
  });

  it('follows daylight saving time: the same UTC hour is a different local hour in winter', () => {
    expect(formatInZone('2025-01-15T12:00:00.000Z', 'Europe/Berlin', 'en-GB')).toMatch(/13:00/);
  });

  it('names the day in the zone, which may differ from the UTC day', () => {
    expect(formatInZone('2025-03-01T23:30:00.000Z', 'Asia/Tokyo', 'en-GB')).toMatch(/2 Mar/);
    expect(formatInZone('2025-03-01T23:30:00.000Z', 'UTC', 'en-GB')).toMatch(/1 Mar/);
  });

  it('shows seconds only when the instant has them (jittered runs)', () => {
    expect(formatInZone('2025-07-01T12:00:07.000Z', 'UTC', 'en-GB')).toMatch(/12:00:07/);
    expect(formatInZone('2025-07-01T12:00:00.000Z', 'UTC', 'en-GB')).not.toMatch(/12:00:00/);
  });

  it('falls back to the ISO text for a zone the browser does not know, and a dash for a bad instant', () => {
    expect(formatInZone('2025-07-01T12:00:00.000Z', 'Mars/Olympus', 'en-GB')).toBe(
      '2025-07-01T12:00:00.000Z',
    );
    expect(formatInZone('later', 'UTC', 'en-GB')).toBe('—');
  });
});

describe('runTimes', () => {
  it('lists at most five runs, each in the schedule zone and the viewer zone', () => {
    const runs = Array.from({ length: 7 }, (_, i) => `2025-07-0${i + 1}T06:00:00.000Z`);
    const rows = runTimes(runs, 'America/New_York', 'Asia/Tokyo', 5, 'en-GB');
    expect(rows).toHaveLength(5);
    expect(rows[0]!.inScheduleZone).toMatch(/02:00/);
    expect(rows[0]!.inViewerZone).toMatch(/15:00/);
    expect(rows.map((r) => r.iso)).toEqual(runs.slice(0, 5));
  });
});
