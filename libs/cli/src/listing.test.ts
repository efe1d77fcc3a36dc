import { describe, expect, it } from 'vitest';
import { readPages } from './listing.js';

/** A listing of `total` numbered items served in pages of at most `limit`. */
function listing(total: number) {
  const asked: { limit: number; cursor?: string }[] = [];
  const fetchPage = async (q: { limit: number; cursor?: string }) => {
    asked.push(q);
    const start = q.cursor ? Number(q.cursor) : 0;
    const end = Math.min(total, start + q.limit);
    return {
      items: Array.from({ length: end - start }, (_, i) => start + i),
      nextCursor: end < total ? String(end) : null,
    };
  };
  return { asked, fetchPage };
}

describe('--limit, --all and --cursor', () => {
  it('--limit stops at a page boundary and hands back the cursor that continues there', async () => {
    const l = listing(500);
    expect(await readPages(l.fetchPage, { limit: 250 })).toMatchObject({ nextCursor: '250' });
    expect(l.asked).toEqual([{ limit: 200 }, { limit: 50, cursor: '200' }]);
  });

  it('--all reads every page; the last page has no cursor', async () => {
    const l = listing(450);
    const page = await readPages(l.fetchPage, { limit: 10, all: true });
    expect(page.items).toHaveLength(450);
    expect(page.nextCursor).toBeNull();
    expect(l.asked.map((q) => q.limit)).toEqual([200, 200, 200]);
  });

  it('--cursor starts there', async () => {
    const l = listing(5);
    expect(await readPages(l.fetchPage, { limit: 2, cursor: '3' })).toEqual({
      items: [3, 4],
      nextCursor: null,
    });
  });
});
