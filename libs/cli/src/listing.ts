// --limit / --all / --cursor for every listing: read pages until enough items, stopping at a page
// boundary so that the last nextCursor continues exactly where the output ends.
import type { Page } from '@po/client';
import type { Context } from './context.js';

export interface ListingOptions {
  limit: number;
  all?: boolean;
  cursor?: string;
}

/** Most items the API gives in one page (addendum: limit 1..200). */
export const MAX_PAGE = 200;

export async function readPages<T>(
  fetchPage: (query: { limit: number; cursor?: string }) => Promise<Page<T>>,
  options: ListingOptions,
): Promise<Page<T>> {
  const items: T[] = [];
  let cursor = options.cursor;
  for (;;) {
    const want = options.all ? MAX_PAGE : Math.min(MAX_PAGE, options.limit - items.length);
    const page = await fetchPage({ limit: want, ...(cursor === undefined ? {} : { cursor }) });
    items.push(...page.items);
    if (page.nextCursor === null || page.nextCursor === cursor) return { items, nextCursor: null };
    cursor = page.nextCursor;
    if (!options.all && items.length >= options.limit) return { items, nextCursor: cursor };
  }
}

/** Prints a page: the table (or `none` on stderr), and how to go on when there is more. */
export function printPage<T>(
  ctx: Context,
  page: Page<T>,
  noun: string,
  render: (items: T[]) => string,
): void {
  if (ctx.output === 'json') {
    ctx.io.out(JSON.stringify(page, null, 2));
    return;
  }
  if (page.items.length === 0) ctx.io.err(`no ${noun}`);
  else ctx.io.out(render(page.items));
  if (page.nextCursor !== null)
    ctx.io.err(`more ${noun}: add --cursor ${page.nextCursor} (or --all)`);
}
