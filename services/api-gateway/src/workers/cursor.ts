import { createHash } from 'node:crypto';
import { ValidationFailed } from '@po/domain';

/**
 * Page cursors of the worker activity listings (decision 0040), built like the schedule cursors
 * (addendum §14.8): an opaque token naming the last item of a page, bound to its listing
 * (application, and worker for events) by a digest. A cursor of another listing, of another
 * application, or one never issued does not verify and is a 400 at `cursor`.
 *
 * Positions: GET /workers pages by (createdAt, workerId), so its position is
 * `[createdAt epoch ms, workerId]`; GET /workers/{workerId}/events pages by event id: `[id]`.
 */
export type ActivityListing =
  | { kind: 'workers'; applicationId: number }
  | { kind: 'worker-events'; applicationId: number; workerId: string };

const VERSION = 'w1';
const MAX_CURSOR_CHARS = 400;

function listingKey(listing: ActivityListing): string {
  return JSON.stringify(
    listing.kind === 'workers' ? [listing.kind, listing.applicationId] : [listing.kind, listing.applicationId, listing.workerId],
  );
}

const digest = (listing: ActivityListing, position: readonly string[]): string =>
  createHash('sha256')
    .update(`po-activity-cursor:${VERSION}|${listingKey(listing)}|${JSON.stringify(position)}`)
    .digest('base64url')
    .slice(0, 22);

export function encodeCursor(listing: ActivityListing, position: readonly string[]): string {
  return Buffer.from(JSON.stringify([VERSION, ...position, digest(listing, position)]), 'utf8').toString('base64url');
}

/** A cursor whose structure is valid; which listing issued it is checked by `cursorPosition`. */
export interface CursorToken {
  position: string[];
  tag: string;
}

const invalid = () => ValidationFailed.at('cursor', 'is not a cursor issued for this listing');

/**
 * The structure of a cursor with `arity` position parts, checked before the listing is looked up;
 * undefined for the first page.
 */
export function readCursor(cursor: string | undefined, arity: number): CursorToken | undefined {
  if (cursor === undefined) return undefined;
  if (cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (Buffer.from(text, 'utf8').toString('base64url') !== cursor) throw invalid();
  let parts: unknown;
  try {
    parts = JSON.parse(text);
  } catch {
    throw invalid();
  }
  if (!Array.isArray(parts) || parts.length !== arity + 2 || parts[0] !== VERSION) throw invalid();
  if (!parts.every((p): p is string => typeof p === 'string')) throw invalid();
  const tag = parts[parts.length - 1] as string;
  if (!/^[A-Za-z0-9_-]{22}$/.test(tag)) throw invalid();
  return { position: parts.slice(1, -1) as string[], tag };
}

/** The position a cursor names, when it was issued for this listing. */
export function cursorPosition(listing: ActivityListing, token: CursorToken | undefined): string[] | undefined {
  if (token === undefined) return undefined;
  if (token.tag !== digest(listing, token.position)) throw invalid();
  return token.position;
}

/** A decimal integer part of a position (`^(0|[1-9][0-9]*)$`, safe), or a 400 at `cursor`. */
export function positionInteger(part: string | undefined): number {
  const value = Number(part);
  if (part === undefined || !/^(0|[1-9][0-9]{0,15})$/.test(part) || !Number.isSafeInteger(value)) throw invalid();
  return value;
}
