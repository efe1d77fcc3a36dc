import { describe, expect, it } from 'vitest';
import {
  EMPTY_FILTERS,
  filtersFromSearch,
  filtersToSearch,
  isoToLocalInput,
  localInputToIso,
  pipelinesPath,
  sameFilters,
  type PipelineFilters,
} from './pipeline-filters';

const filters: PipelineFilters = {
  status: ['Running', 'Failed'],
  name: 'nightly',
  keyword: 'customer=42',
  schedule: 'Every Hour',
  createdAfter: '2025-03-01T00:00:00.000Z',
  createdBefore: '2025-03-02T00:00:00.000Z',
};

describe('filters in the URL', () => {
  it('round-trips every filter through the query string', () => {
    const search = filtersToSearch(filters);
    expect(search.getAll('status')).toEqual(['Running', 'Failed']);
    expect(filtersFromSearch(new URLSearchParams(search.toString()))).toEqual(filters);
  });

  it('leaves out what is not set, so the unfiltered list has a bare URL', () => {
    expect(filtersToSearch(EMPTY_FILTERS).toString()).toBe('');
    expect(filtersToSearch({ ...EMPTY_FILTERS, name: '   ' }).toString()).toBe('');
  });

  it('drops unknown statuses and unparsable dates from a hand-edited URL', () => {
    const read = filtersFromSearch(
      new URLSearchParams('status=Running&status=Bogus&status=Running&createdAfter=soon'),
    );
    expect(read.status).toEqual(['Running']);
    expect(read.createdAfter).toBe('');
  });

  it('accepts comma-separated statuses as well', () => {
    expect(filtersFromSearch(new URLSearchParams('status=Pending,Paused')).status).toEqual([
      'Pending',
      'Paused',
    ]);
  });

  it('treats filter sets with the same URL as the same listing', () => {
    expect(sameFilters(filters, { ...filters, name: ' nightly ' })).toBe(true);
    expect(sameFilters(filters, { ...filters, status: ['Running'] })).toBe(false);
  });
});

describe('pipelinesPath', () => {
  it('speaks the query names of GET /pipelines, with status repeated', () => {
    const path = pipelinesPath(filters, 25, 'abc');
    const query = new URLSearchParams(path.split('?')[1]);
    expect(path.startsWith('/pipelines?')).toBe(true);
    expect(query.getAll('status')).toEqual(['Running', 'Failed']);
    expect(query.get('name')).toBe('nightly');
    expect(query.getAll('keyword')).toEqual(['customer=42']);
    expect(query.get('scheduleName')).toBe('Every Hour');
    expect(query.get('createdAfter')).toBe('2025-03-01T00:00:00.000Z');
    expect(query.get('createdBefore')).toBe('2025-03-02T00:00:00.000Z');
    expect(query.get('limit')).toBe('25');
    expect(query.get('cursor')).toBe('abc');
  });

  it('asks for the first page without a cursor', () => {
    expect(pipelinesPath(EMPTY_FILTERS, 50, null)).toBe('/pipelines?limit=50');
  });
});

describe('datetime-local inputs', () => {
  it('round-trips an instant through the viewer-zone input value at minute precision', () => {
    const iso = '2025-03-01T13:45:00.000Z';
    expect(localInputToIso(isoToLocalInput(iso))).toBe(iso);
  });

  it('reads an empty or malformed input as unset', () => {
    expect(localInputToIso('')).toBe('');
    expect(localInputToIso('tomorrow')).toBe('');
    expect(isoToLocalInput('')).toBe('');
  });
});
