import { createHash } from 'node:crypto';
import { ValidationFailed } from '@po/domain';

/**
 * Page cursors (addendum §14.8): an opaque token naming the last id of the page, bound to its
 * listing (application, resource, filter) by a digest. A cursor from another listing, another
 * application, or one that was never issued does not verify and is a 400 at `cursor`.
 */
export type Listing =
  | { kind: 'schedules'; applicationId: number; status: string | undefined }
  | { kind: 'runs'; applicationId: number; scheduleId: number };

function listingKey(listing: Listing): string {
  return listing.kind === 'schedules'
    ? `schedules|${listing.applicationId}|${listing.status ?? '*'}`
    : `runs|${listing.applicationId}|${listing.scheduleId}`;
}

const digest = (listing: Listing, position: number): string =>
  createHash('sha256').update(`po-cursor:v1|${listingKey(listing)}|${position}`).digest('base64url').slice(0, 22);

export function encodeCursor(listing: Listing, position: number): string {
  return Buffer.from(`v1.${position}.${digest(listing, position)}`, 'utf8').toString('base64url');
}

export interface CursorToken {
  position: number;
  tag: string;
}

const invalid = () => ValidationFailed.at('cursor', 'is not a cursor issued for this listing');

/** The structure of a cursor, checked before the listing is looked up; undefined for the first page. */
export function readCursor(cursor: string | undefined): CursorToken | undefined {
  if (cursor === undefined) return undefined;
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) throw invalid();
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (Buffer.from(text, 'utf8').toString('base64url') !== cursor) throw invalid();
  const match = /^v1\.([1-9][0-9]{0,15})\.([A-Za-z0-9_-]{22})$/.exec(text);
  const position = Number(match?.[1]);
  if (!match?.[2] || !Number.isSafeInteger(position)) throw invalid();
  return { position, tag: match[2] };
}

/** The position a cursor names, when it was issued for this listing. */
export function cursorPosition(listing: Listing, token: CursorToken | undefined): number | undefined {
  if (token === undefined) return undefined;
  if (token.tag !== digest(listing, token.position)) throw invalid();
  return token.position;
}

/** Splits a fetched `limit + 1` rows into the page and its next cursor (non-null exactly when more exist). */
export function toPage<T extends { id: number }, R>(rows: T[], limit: number, listing: Listing, view: (row: T) => R): { items: R[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { items: page.map(view), nextCursor: rows.length > limit && last ? encodeCursor(listing, last.id) : null };
}
