import { describe, expect, it } from 'vitest';
import {
  RETENTION_FAMILIES,
  moreToDelete,
  retentionCutoff,
  retentionCutoffs,
} from './retention.js';

const now = new Date('2030-06-15T12:00:00.000Z');

describe('retention cutoff (issue 10 item 6)', () => {
  it('is `days` whole days before now', () => {
    expect(retentionCutoff(now, 30)).toEqual(new Date('2030-05-16T12:00:00.000Z'));
    expect(retentionCutoff(now, 7)).toEqual(new Date('2030-06-08T12:00:00.000Z'));
    expect(retentionCutoff(now, 1)).toEqual(new Date('2030-06-14T12:00:00.000Z'));
  });

  it('0 days keeps the family forever: no cutoff', () => {
    expect(retentionCutoff(now, 0)).toBeNull();
  });

  it('refuses negative or fractional days', () => {
    expect(() => retentionCutoff(now, -1)).toThrow(RangeError);
    expect(() => retentionCutoff(now, 1.5)).toThrow(RangeError);
  });

  it('lists the cutoff of every family that is not kept forever, in family order', () => {
    const cutoffs = retentionCutoffs(now, {
      pipelines: 30,
      workerEvents: 7,
      workerSessions: 0,
      scheduleRuns: 30,
      systemLogs: 0,
    });
    expect(cutoffs).toEqual([
      ['pipelines', new Date('2030-05-16T12:00:00.000Z')],
      ['workerEvents', new Date('2030-06-08T12:00:00.000Z')],
      ['scheduleRuns', new Date('2030-05-16T12:00:00.000Z')],
    ]);
    expect(
      retentionCutoffs(now, {
        pipelines: 0,
        workerEvents: 0,
        workerSessions: 0,
        scheduleRuns: 0,
        systemLogs: 0,
      }),
    ).toEqual([]);
    expect(RETENTION_FAMILIES).toHaveLength(5);
  });
});

describe('cleanup loop rule', () => {
  it('a full batch may have stopped at its limit: loop again; a short one found everything', () => {
    expect(moreToDelete(500, 500)).toBe(true);
    expect(moreToDelete(499, 500)).toBe(false);
    expect(moreToDelete(0, 500)).toBe(false);
  });
});
