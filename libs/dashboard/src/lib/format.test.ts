import { describe, expect, it } from 'vitest';
import { elapsedMs, formatAge, formatDuration, humanize } from './format';

describe('formatDuration', () => {
  it('uses the largest sensible unit with one step of detail', () => {
    expect(formatDuration(0)).toBe('0 ms');
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(4_250)).toBe('4.2 s');
    expect(formatDuration(42_900)).toBe('42 s');
    expect(formatDuration(185_000)).toBe('3 min 05 s');
    expect(formatDuration(2 * 3_600_000 + 3 * 60_000)).toBe('2 h 03 min');
    expect(formatDuration(3 * 86_400_000 + 4 * 3_600_000)).toBe('3 d 4 h');
  });

  it('never rounds up into the next unit', () => {
    expect(formatDuration(59_999)).toBe('59 s');
    expect(formatDuration(9_999)).toBe('9.9 s');
  });

  it('shows a dash for durations that cannot be', () => {
    expect(formatDuration(-1)).toBe('—');
    expect(formatDuration(Number.NaN)).toBe('—');
  });
});

describe('formatAge', () => {
  const now = Date.parse('2025-03-01T12:00:00.000Z');
  it('counts back from now', () => {
    expect(formatAge('2025-03-01T12:00:00.000Z', now)).toBe('just now');
    expect(formatAge('2025-03-01T11:59:48.000Z', now)).toBe('12 s ago');
    expect(formatAge('2025-03-01T11:55:00.000Z', now)).toBe('5 min ago');
    expect(formatAge('2025-03-01T09:00:00.000Z', now)).toBe('3 h ago');
    expect(formatAge('2025-02-26T12:00:00.000Z', now)).toBe('3 d ago');
  });
  it('treats missing or bad instants as unknown, and a clock skew as just now', () => {
    expect(formatAge(null, now)).toBe('—');
    expect(formatAge('yesterday', now)).toBe('—');
    expect(formatAge('2025-03-01T12:00:05.000Z', now)).toBe('just now');
  });
});

describe('elapsedMs', () => {
  const now = Date.parse('2025-03-01T12:00:10.000Z');
  it('measures to the finish, or to now while running, and is null before the start', () => {
    expect(elapsedMs('2025-03-01T12:00:00.000Z', '2025-03-01T12:00:04.000Z', now)).toBe(4_000);
    expect(elapsedMs('2025-03-01T12:00:00.000Z', null, now)).toBe(10_000);
    expect(elapsedMs(null, null, now)).toBeNull();
  });
});

describe('humanize', () => {
  it('spells the spec enums as words', () => {
    expect(humanize('WaitingForApproval')).toBe('Waiting for approval');
    expect(humanize('NotStarted')).toBe('Not started');
    expect(humanize('stage_completed')).toBe('Stage completed');
    expect(humanize('Pending')).toBe('Pending');
  });
});
