import { describe, expect, it } from 'vitest';
import { Batcher } from './batcher.js';

/** Runs batches of numbers, refusing any batch with a negative one; records each batch it was given. */
function refusingNegatives(split?: (err: unknown) => boolean) {
  const batches: number[][] = [];
  const batcher = new Batcher<number, number>(
    async (items) => {
      batches.push(items);
      if (items.some((n) => n < 0)) throw new Error('negative');
      return items.map((n) => n * 2);
    },
    { maxBatch: 10, maxConcurrent: 1, ...(split ? { split } : {}) },
  );
  return { batcher, batches };
}

describe('Batcher', () => {
  it('runs a failed batch again item by item, so only the bad item fails', async () => {
    const { batcher, batches } = refusingNegatives();
    const first = batcher.submit(0);
    const rest = [1, -1, 2].map((n) => batcher.submit(n));
    expect(await first).toBe(0);
    expect(await Promise.allSettled(rest)).toEqual([
      { status: 'fulfilled', value: 2 },
      { status: 'rejected', reason: new Error('negative') },
      { status: 'fulfilled', value: 4 },
    ]);
    expect(batches).toEqual([[0], [1, -1, 2], [1], [-1], [2]]);
  });

  it('fails every item with the batch when split says the failure is not theirs', async () => {
    const { batcher, batches } = refusingNegatives(() => false);
    const first = batcher.submit(0);
    const rest = [1, -1, 2].map((n) => batcher.submit(n));
    await first;
    expect((await Promise.allSettled(rest)).map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(batches).toEqual([[0], [1, -1, 2]]);
  });
});
