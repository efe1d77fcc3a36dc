import { createHmac, timingSafeEqual } from 'node:crypto';
import { ValidationFailed } from '@po/domain';

/**
 * Page cursors of every paged endpoint (addendum §14.8, decisions 0040, 0084, 0089): an opaque
 * token naming the position of a page's last item, signed with HMAC-SHA-256 over that position
 * and the listing it was issued for. Only a holder of the key can make one, so a client can
 * neither forge a position nor carry a cursor to another listing: another application, another
 * resource in the path, another filter set. Any such cursor is a 400 at `cursor`.
 *
 * Two steps, for the check order of addendum §3: `readCursor` checks the structure (before the
 * resource is looked up: a malformed cursor is a 400 even for a resource that does not exist),
 * and `CursorSigner.verify` checks the origin once the listing is known (after existence).
 *
 * Form: `base64url(JSON [version, ...position]) "." base64url(tag)`, the tag being the first 16
 * bytes of HMAC-SHA-256(key, version, listing, payload).
 */

/** One part of a position: `id` an integer ≥ 1, `time` epoch milliseconds of a storable instant, `text` a string. */
export type CursorPartKind = 'id' | 'time' | 'text';
export type CursorPosition = (number | string)[];

const VERSION = 'c1';
const MAX_CURSOR_CHARS = 512;
const TAG_BYTES = 16;
const MAX_TEXT_CHARS = 200;
/** Instants a stored row can have (request date-times are years 1 to 9999, addendum §1). */
const EARLIEST = Date.parse('0001-01-01T00:00:00.000Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export const invalidCursor = (): ValidationFailed => ValidationFailed.at('cursor', 'is not a cursor issued for this listing');

/** A cursor whose structure is valid; which listing issued it is checked by `CursorSigner.verify`. */
export interface CursorToken {
  /** The position it claims (checked for shape and ranges, not yet for origin). */
  readonly position: CursorPosition;
  readonly payload: string;
  readonly tag: Buffer;
}

function partOk(kind: CursorPartKind, part: unknown): boolean {
  switch (kind) {
    case 'id':
      return typeof part === 'number' && Number.isSafeInteger(part) && part >= 1;
    case 'time':
      return typeof part === 'number' && Number.isSafeInteger(part) && part >= EARLIEST && part <= LATEST;
    case 'text':
      return typeof part === 'string' && part.length >= 1 && part.length <= MAX_TEXT_CHARS;
  }
}

/** base64url text → bytes, only in its one canonical spelling (no padding, no stray bits). */
function decodeCanonical(text: string): Buffer | undefined {
  if (!BASE64URL.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}

/**
 * The structure of a cursor whose position has the parts `shape`; undefined for the first page
 * (no cursor), a 400 at `cursor` when it is not one.
 */
export function readCursor(cursor: string | undefined, shape: readonly CursorPartKind[]): CursorToken | undefined {
  if (cursor === undefined) return undefined;
  if (cursor.length > MAX_CURSOR_CHARS) throw invalidCursor();
  const [payload, tagText, ...rest] = cursor.split('.');
  if (payload === undefined || tagText === undefined || rest.length > 0) throw invalidCursor();
  const json = decodeCanonical(payload);
  const tag = decodeCanonical(tagText);
  if (!json || !tag || tag.length !== TAG_BYTES) throw invalidCursor();
  let parts: unknown;
  try {
    parts = JSON.parse(json.toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  if (!Array.isArray(parts) || parts.length !== shape.length + 1 || parts[0] !== VERSION) throw invalidCursor();
  const position = parts.slice(1) as unknown[];
  if (!shape.every((kind, i) => partOk(kind, position[i]))) throw invalidCursor();
  return { position: position as CursorPosition, payload, tag };
}

/**
 * The identity of a listing: its kind and everything its pages are bound to (application, path
 * resources, the normalised filter set), as one canonical string. Two listings are the same
 * exactly when these strings are.
 */
export function listingOf(kind: string, scope: Record<string, unknown>): string {
  const keys = Object.keys(scope).sort();
  return JSON.stringify([kind, keys.map((k) => [k, scope[k] ?? null])]);
}

export interface CursorSigner {
  /** A cursor naming `position` on `listing` (every part must fit the shape its reader uses). */
  issue(listing: string, position: CursorPosition): string;
  /** The position of `token` when it was issued by this key for `listing`; else a 400 at `cursor`. */
  verify(listing: string, token: CursorToken): CursorPosition;
  /** `verify` for an optional token (no cursor: the first page). */
  verifyOptional(listing: string, token: CursorToken | undefined): CursorPosition | undefined;
}

/** A signer over `key` (at least 32 bytes of secret). */
export function cursorSigner(key: string | Uint8Array): CursorSigner {
  const secret = typeof key === 'string' ? Buffer.from(key, 'utf8') : Buffer.from(key);
  if (secret.length < 32) throw new Error('a cursor key needs at least 32 bytes');
  const tagOf = (listing: string, payload: string): Buffer =>
    createHmac('sha256', secret).update(`${VERSION}\n${listing}\n${payload}`).digest().subarray(0, TAG_BYTES);
  const verify = (listing: string, token: CursorToken): CursorPosition => {
    if (!timingSafeEqual(tagOf(listing, token.payload), token.tag)) throw invalidCursor();
    return token.position;
  };
  return {
    issue(listing, position) {
      const payload = Buffer.from(JSON.stringify([VERSION, ...position]), 'utf8').toString('base64url');
      return `${payload}.${tagOf(listing, payload).toString('base64url')}`;
    },
    verify,
    verifyOptional: (listing, token) => (token === undefined ? undefined : verify(listing, token)),
  };
}

/**
 * A signer whose key is loaded on first use and kept for the life of the process. A failed load
 * is not kept: the next call tries again.
 */
export function lazyCursorSigner(load: () => Promise<string | Uint8Array>): () => Promise<CursorSigner> {
  let signer: Promise<CursorSigner> | undefined;
  return () => {
    signer ??= load().then(cursorSigner, (err: unknown) => {
      signer = undefined;
      throw err;
    });
    return signer;
  };
}

/**
 * Splits `limit + 1` fetched rows into a page and its next cursor: non-null exactly when more rows
 * existed after the page when it was read (addendum §14.8).
 */
export function pageOf<T, R>(
  rows: readonly T[],
  limit: number,
  next: (last: T) => string,
  view: (row: T) => R,
): { items: R[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { items: page.map(view), nextCursor: rows.length > limit && last !== undefined ? next(last) : null };
}
