// The pipelines list's filters live in the page's query string, so a filtered view can be
// bookmarked, shared and reloaded. The UI query uses short names; the API query uses the names of
// GET /pipelines (status and keyword repeat there).
import type { PipelineStatus } from '../api/types';
import { PIPELINE_STATUSES } from '../api/types';

export interface PipelineFilters {
  status: PipelineStatus[];
  name: string;
  keyword: string;
  schedule: string;
  /** ISO 8601 instants (UTC), or '' when not set. */
  createdAfter: string;
  createdBefore: string;
}

export const EMPTY_FILTERS: PipelineFilters = {
  status: [],
  name: '',
  keyword: '',
  schedule: '',
  createdAfter: '',
  createdBefore: '',
};

function isStatus(value: string): value is PipelineStatus {
  return (PIPELINE_STATUSES as readonly string[]).includes(value);
}

function instant(value: string | null): string {
  if (!value) return '';
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? '' : new Date(ms).toISOString();
}

/** Reads the filters from the page's query string; unknown statuses and bad dates are dropped. */
export function filtersFromSearch(search: URLSearchParams): PipelineFilters {
  const statuses = search.getAll('status').flatMap((s) => s.split(','));
  return {
    status: [...new Set(statuses.filter(isStatus))],
    name: search.get('name') ?? '',
    keyword: search.get('keyword') ?? '',
    schedule: search.get('schedule') ?? '',
    createdAfter: instant(search.get('createdAfter')),
    createdBefore: instant(search.get('createdBefore')),
  };
}

/** The page's query string for these filters: only what is set, in a stable order. */
export function filtersToSearch(filters: PipelineFilters): URLSearchParams {
  const search = new URLSearchParams();
  for (const status of filters.status) search.append('status', status);
  if (filters.name.trim()) search.set('name', filters.name.trim());
  if (filters.keyword.trim()) search.set('keyword', filters.keyword.trim());
  if (filters.schedule.trim()) search.set('schedule', filters.schedule.trim());
  if (filters.createdAfter) search.set('createdAfter', filters.createdAfter);
  if (filters.createdBefore) search.set('createdBefore', filters.createdBefore);
  return search;
}

/** The GET /pipelines path for these filters, one page of `limit`, from `cursor` when given. */
export function pipelinesPath(
  filters: PipelineFilters,
  limit: number,
  cursor: string | null,
): string {
  const query = new URLSearchParams();
  for (const status of filters.status) query.append('status', status);
  if (filters.name.trim()) query.set('name', filters.name.trim());
  if (filters.keyword.trim()) query.append('keyword', filters.keyword.trim());
  if (filters.schedule.trim()) query.set('scheduleName', filters.schedule.trim());
  if (filters.createdAfter) query.set('createdAfter', filters.createdAfter);
  if (filters.createdBefore) query.set('createdBefore', filters.createdBefore);
  query.set('limit', String(limit));
  if (cursor) query.set('cursor', cursor);
  return `/pipelines?${query.toString()}`;
}

/** Two filter sets select the same pipelines (paging restarts when they do not). */
export function sameFilters(a: PipelineFilters, b: PipelineFilters): boolean {
  return filtersToSearch(a).toString() === filtersToSearch(b).toString();
}

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * An instant as the value of an <input type="datetime-local"> in the viewer's zone
 * ("2025-03-01T13:00"), or '' when unset.
 */
export function isoToLocalInput(iso: string): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** The instant a datetime-local value names in the viewer's zone, as ISO UTC; '' when empty or bad. */
export function localInputToIso(value: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(value);
  if (!m) return '';
  const [, y, mo, d, h, mi, s] = m;
  const date = new Date(
    Number(y),
    Number(mo) - 1,
    Number(d),
    Number(h),
    Number(mi),
    Number(s ?? 0),
  );
  return Number.isNaN(date.getTime()) ? '' : date.toISOString();
}
