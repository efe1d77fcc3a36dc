import { createHash } from 'node:crypto';
import { ValidationFailed } from '@po/domain';

/**
 * Cursors of GET /pipelines/{pipelineId}/stages/{stageId}/logs, built like the schedule and
 * worker cursors (addendum §14.8, decision 0040): an opaque token naming the last log of a page,
 * `[created epoch ms, id]` (logs are ordered by created, then id), bound to its listing
 * (application, pipeline, stage) by a digest. A cursor of another listing, of another
 * application, or one never issued does not verify and is a 400 at `cursor`.
 */
export interface LogListing {
  applicationId: number;
  pipelineId: number;
  stageId: number;
}

export interface LogPosition {
  created: Date;
  id: number;
}

const VERSION = 'l1';
const MAX_CURSOR_CHARS = 200;
/**
 * The instants a stored log can have (request date-times are years 1 to 9999): a forged position
 * outside them is refused here, before the database would reject it as out of range.
 */
const EARLIEST = Date.parse('0001-01-01T00:00:00.000Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

const digest = (listing: LogListing, parts: readonly [string, string]): string =>
  createHash('sha256')
    .update(`po-log-cursor:${VERSION}|${listing.applicationId}|${listing.pipelineId}|${listing.stageId}|${parts.join('|')}`)
    .digest('base64url')
    .slice(0, 22);

const partsOf = (p: LogPosition): [string, string] => [String(p.created.getTime()), String(p.id)];

export function encodeLogCursor(listing: LogListing, position: LogPosition): string {
  const parts = partsOf(position);
  return Buffer.from(`${VERSION}.${parts[0]}.${parts[1]}.${digest(listing, parts)}`, 'utf8').toString('base64url');
}

/** A cursor whose structure is valid; which listing issued it is checked by `verifyLogCursor`. */
export interface LogCursor {
  position: LogPosition;
  tag: string;
}

const invalid = () => ValidationFailed.at('cursor', 'is not a cursor issued for this listing');

/** The structure of a cursor, checked before the stage is looked up; undefined for the first page. */
export function readLogCursor(cursor: string | undefined): LogCursor | undefined {
  if (cursor === undefined) return undefined;
  if (cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (Buffer.from(text, 'utf8').toString('base64url') !== cursor) throw invalid();
  // A log's created may precede 1970 (a worker's own time), so the time can be negative.
  const match = /^l1\.(0|-?[1-9][0-9]{0,15})\.([1-9][0-9]{0,15})\.([A-Za-z0-9_-]{22})$/.exec(text);
  const created = Number(match?.[1]);
  const id = Number(match?.[2]);
  if (!match?.[3] || !Number.isSafeInteger(id) || !(created >= EARLIEST && created <= LATEST)) throw invalid();
  return { position: { created: new Date(created), id }, tag: match[3] };
}

/** The position a cursor names, when it was issued for this listing. */
export function verifyLogCursor(listing: LogListing, cursor: LogCursor | undefined): LogPosition | undefined {
  if (cursor === undefined) return undefined;
  if (cursor.tag !== digest(listing, partsOf(cursor.position))) throw invalid();
  return cursor.position;
}
