// Cursor paging (addendum §5.7): `{ items, nextCursor }`, nextCursor null on the last page.

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** Every item of a listing, page after page, plus the pages themselves. */
export interface Paged<T> extends AsyncIterable<T> {
  /** The pages, following nextCursor until it is null. */
  pages(): AsyncIterable<Page<T>>;
  /** Up to `max` items, reading only the pages needed. */
  take(max: number): Promise<T[]>;
}

/**
 * A Paged over `fetchPage(cursor)`, starting at `cursor` (the first page when undefined). Pages
 * are fetched lazily, one at a time, as the caller iterates.
 */
export function paginate<T>(
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
  cursor?: string,
): Paged<T> {
  async function* pages(): AsyncGenerator<Page<T>> {
    let next = cursor;
    for (;;) {
      const page = await fetchPage(next);
      yield page;
      if (page.nextCursor === null || page.nextCursor === undefined) return;
      if (page.nextCursor === next)
        throw new Error(`the API returned the same cursor twice: ${next}`);
      next = page.nextCursor;
    }
  }
  async function* items(): AsyncGenerator<T> {
    for await (const page of pages()) yield* page.items;
  }
  return {
    [Symbol.asyncIterator]: items,
    pages,
    async take(max: number): Promise<T[]> {
      const out: T[] = [];
      if (max <= 0) return out;
      for await (const item of items()) {
        out.push(item);
        if (out.length >= max) break;
      }
      return out;
    },
  };
}
