import { describe, expect, it } from 'vitest';
import { paginate, type Page } from './paging.js';

function pages(n: number, size: number) {
  const asked: (string | undefined)[] = [];
  const fetchPage = async (cursor: string | undefined): Promise<Page<number>> => {
    asked.push(cursor);
    const index = cursor === undefined ? 0 : Number(cursor.slice(1));
    const items = Array.from({ length: size }, (_, i) => index * size + i);
    return { items, nextCursor: index + 1 < n ? `c${index + 1}` : null };
  };
  return { asked, fetchPage };
}

describe('paging', () => {
  it('iterates every item, following nextCursor until it is null', async () => {
    const p = pages(3, 2);
    const seen: number[] = [];
    for await (const item of paginate(p.fetchPage)) seen.push(item);
    expect(seen).toEqual([0, 1, 2, 3, 4, 5]);
    expect(p.asked).toEqual([undefined, 'c1', 'c2']);
  });

  it('reads pages lazily: take(3) stops after the second page', async () => {
    const p = pages(10, 2);
    expect(await paginate(p.fetchPage).take(3)).toEqual([0, 1, 2]);
    expect(p.asked).toEqual([undefined, 'c1']);
  });

  it('starts at a given cursor and yields the pages themselves', async () => {
    const p = pages(3, 1);
    const got: Page<number>[] = [];
    for await (const page of paginate(p.fetchPage, 'c1').pages()) got.push(page);
    expect(got).toEqual([
      { items: [1], nextCursor: 'c2' },
      { items: [2], nextCursor: null },
    ]);
  });

  it('stops on a cursor that does not move', async () => {
    const stuck = paginate(async () => ({ items: [1], nextCursor: 'same' }), 'same');
    await expect(stuck.take(10)).rejects.toThrow(/same cursor twice/);
  });
});
