import { listingOf } from '@po/http';

/**
 * The listings of schedules and of a schedule's runs (addendum §14.8), for the shared page cursors
 * of @po/http (decision 0089): a cursor names the last id of a page and is signed for its listing
 * (application, resource, filter). A cursor from another listing, another application, or one the
 * service never issued does not verify and is a 400 at `cursor`.
 */
export type Listing =
  | { kind: 'schedules'; applicationId: number; status: string | undefined }
  | { kind: 'runs'; applicationId: number; scheduleId: number };

export function listingKey(listing: Listing): string {
  return listing.kind === 'schedules'
    ? listingOf('schedules', { applicationId: listing.applicationId, status: listing.status })
    : listingOf('schedule-runs', { applicationId: listing.applicationId, scheduleId: listing.scheduleId });
}
