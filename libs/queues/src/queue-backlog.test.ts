import { describe, expect, it } from 'vitest';
import { toJobCounts } from './queue-backlog.js';

describe('toJobCounts', () => {
  it('counts prioritized jobs as waiting, since no consumer has taken them either', () => {
    expect(toJobCounts({ wait: 3, prioritized: 2, active: 1, delayed: 4 })).toEqual({ waiting: 5, active: 1, delayed: 4 });
  });

  it('reads a state BullMQ left out as zero', () => {
    expect(toJobCounts({})).toEqual({ waiting: 0, active: 0, delayed: 0 });
  });
});
