import { listingOf } from '@po/http';

/**
 * The listings of worker activity (decision 0040), for the shared page cursors of @po/http
 * (decision 0089): a cursor names the last item of a page and is signed for its listing
 * (application, and worker for events). A cursor of another listing, of another application, or
 * one never issued does not verify and is a 400 at `cursor`.
 *
 * Positions: GET /workers pages by (createdAt, workerId), so its position is
 * `[createdAt epoch ms, workerId]`; GET /workers/{workerId}/events pages by event id: `[id]`.
 */
export type ActivityListing =
  | { kind: 'workers'; applicationId: number }
  | { kind: 'worker-events'; applicationId: number; workerId: string };

export function listingKey(listing: ActivityListing): string {
  return listing.kind === 'workers'
    ? listingOf('workers', { applicationId: listing.applicationId })
    : listingOf('worker-events', { applicationId: listing.applicationId, workerId: listing.workerId });
}
