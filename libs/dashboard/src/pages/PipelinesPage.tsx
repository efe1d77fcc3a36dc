// The pipelines list: filters in the URL query string (applied 300 ms after the last change),
// server-side cursor paging, and a 2 s auto-refresh of the page being shown.
import {
  Anchor,
  Button,
  Checkbox,
  Group,
  MultiSelect,
  Progress,
  Stack,
  Switch,
  Text,
  TextInput,
  Title,
  VisuallyHidden,
} from '@mantine/core';
import { useDebouncedCallback } from '@mantine/hooks';
import type { ColumnDef } from '@tanstack/react-table';
import { useMemo, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { LIVE_INTERVAL_MS, useApiGet } from '../api/queries';
import type { PipelinePage, PipelineStatus, PipelineSummary } from '../api/types';
import { PIPELINE_STATUSES } from '../api/types';
import { DataTable } from '../components/DataTable';
import { useNow, useTitle } from '../components/hooks';
import { QueryProblem } from '../components/ProblemAlert';
import { StatusBadge } from '../components/StatusBadge';
import { formatAge } from '../lib/format';
import {
  filtersFromSearch,
  filtersToSearch,
  isoToLocalInput,
  localInputToIso,
  pipelinesPath,
  type PipelineFilters,
} from '../lib/pipeline-filters';
import { SelectedActions } from './pipelines/SelectedActions';

const PAGE_SIZE = 50;

function progressOf(p: PipelineSummary): { done: number; total: number } {
  const c = p.stageStatusCounts;
  return { done: c.Completed + c.Skipped + c.Failed + c.Cancelled, total: p.stageCount };
}

type Selection = ReadonlyMap<number, PipelineSummary>;

function columns(
  now: number,
  selection: Selection,
  toggle: (p: PipelineSummary) => void,
): ColumnDef<PipelineSummary, unknown>[] {
  return [
    {
      id: 'select',
      header: () => <VisuallyHidden>Select</VisuallyHidden>,
      cell: ({ row }) => (
        <Checkbox
          aria-label={`Select pipeline ${row.original.name} (${row.original.id})`}
          checked={selection.has(row.original.id)}
          onChange={() => toggle(row.original)}
        />
      ),
    },
    {
      header: 'Name',
      cell: ({ row }) => (
        <Anchor component={Link} to={`/pipelines/${row.original.id}`} fw={500}>
          {row.original.name}
        </Anchor>
      ),
    },
    { header: 'Status', cell: ({ row }) => <StatusBadge status={row.original.status} size="sm" /> },
    {
      header: 'Progress',
      cell: ({ row }) => {
        const { done, total } = progressOf(row.original);
        const failed = row.original.stageStatusCounts.Failed;
        return (
          <Group gap="xs" wrap="nowrap">
            <Progress
              value={total ? (done / total) * 100 : 0}
              color={failed ? 'red.8' : 'blue.8'}
              w={80}
              aria-label={`${done} of ${total} stages finished`}
            />
            <Text size="sm">
              {done}/{total}
            </Text>
          </Group>
        );
      },
    },
    {
      header: 'Schedule',
      cell: ({ row }) =>
        row.original.scheduleName ? (
          <Anchor
            component={Link}
            to={`/schedules/${encodeURIComponent(row.original.scheduleName)}`}
          >
            {row.original.scheduleName}
          </Anchor>
        ) : (
          '—'
        ),
    },
    {
      header: 'Age',
      cell: ({ row }) => (
        <time dateTime={row.original.createdAt}>{formatAge(row.original.createdAt, now)}</time>
      ),
    },
  ];
}

function Filters({
  applied,
  onApply,
}: {
  applied: PipelineFilters;
  onApply: (f: PipelineFilters) => void;
}) {
  // the inputs show what is typed at once; the URL (and the query) follow after a pause
  const [draft, setDraft] = useState(applied);
  const [appliedKey, setAppliedKey] = useState(() => filtersToSearch(applied).toString());
  const key = filtersToSearch(applied).toString();
  if (key !== appliedKey) {
    // the URL changed from outside (back button, a link): show what it says
    setAppliedKey(key);
    setDraft(applied);
  }
  const apply = useDebouncedCallback((next: PipelineFilters) => onApply(next), 300);
  const change = (patch: Partial<PipelineFilters>) => {
    const next = { ...draft, ...patch };
    setDraft(next);
    apply(next);
  };

  return (
    <Group align="flex-end" gap="sm" role="search" aria-label="Filter pipelines">
      <MultiSelect
        label="Status"
        data={PIPELINE_STATUSES.map((s) => ({ value: s, label: s }))}
        value={draft.status}
        onChange={(value) => change({ status: value as PipelineStatus[] })}
        clearable
        // unmounted while closed, so the label names the input alone
        comboboxProps={{ keepMounted: false }}
        w={260}
        placeholder={draft.status.length ? undefined : 'Any'}
      />
      <TextInput
        label="Name"
        value={draft.name}
        onChange={(e) => change({ name: e.currentTarget.value })}
        w={160}
      />
      <TextInput
        label="Keyword"
        description="key or key=value"
        inputWrapperOrder={['label', 'input', 'description']}
        value={draft.keyword}
        onChange={(e) => change({ keyword: e.currentTarget.value })}
        w={160}
      />
      <TextInput
        label="Schedule"
        value={draft.schedule}
        onChange={(e) => change({ schedule: e.currentTarget.value })}
        w={160}
      />
      <TextInput
        type="datetime-local"
        label="Created after"
        value={isoToLocalInput(draft.createdAfter)}
        onChange={(e) => change({ createdAfter: localInputToIso(e.currentTarget.value) })}
        w={200}
      />
      <TextInput
        type="datetime-local"
        label="Created before"
        value={isoToLocalInput(draft.createdBefore)}
        onChange={(e) => change({ createdBefore: localInputToIso(e.currentTarget.value) })}
        w={200}
      />
    </Group>
  );
}

export default function PipelinesPage() {
  useTitle('Pipelines');
  const now = useNow();
  const [search, setSearch] = useSearchParams();
  const filters = useMemo(() => filtersFromSearch(search), [search]);
  const listingKey = filtersToSearch(filters).toString();
  const [autoRefresh, setAutoRefresh] = useState(true);
  // cursors[i] opens page i; a new filter set starts again at the first page
  const [paging, setPaging] = useState<{ key: string; cursors: (string | null)[] }>({
    key: listingKey,
    cursors: [null],
  });
  const cursors = paging.key === listingKey ? paging.cursors : [null];
  const cursor = cursors[cursors.length - 1] ?? null;

  const page = useApiGet<PipelinePage>(pipelinesPath(filters, PAGE_SIZE, cursor), {
    refetchInterval: autoRefresh ? LIVE_INTERVAL_MS : false,
    keepPrevious: true,
  });
  // the selected pipelines as last seen, across pages and refreshes, until an action or Clear
  const [selection, setSelection] = useState<Selection>(new Map());
  const toggle = (p: PipelineSummary) =>
    setSelection((current) => {
      const next = new Map(current);
      if (next.has(p.id)) next.delete(p.id);
      else next.set(p.id, p);
      return next;
    });
  const cols = useMemo(() => columns(now, selection, toggle), [now, selection]);

  const apply = (next: PipelineFilters) => setSearch(filtersToSearch(next), { replace: true });
  const nextCursor = page.data?.nextCursor ?? null;

  return (
    <Stack gap="md">
      <Group justify="space-between">
        <Title order={1}>Pipelines</Title>
        <Switch
          label="Auto-refresh"
          checked={autoRefresh}
          onChange={(e) => setAutoRefresh(e.currentTarget.checked)}
        />
      </Group>
      <Filters applied={filters} onApply={apply} />
      <QueryProblem error={page.error} what="the pipeline list (GET /pipelines)" />
      <SelectedActions
        selected={[...selection.values()]}
        onCleared={() => setSelection(new Map())}
      />
      <DataTable
        label="Pipelines"
        columns={cols}
        data={page.data?.items ?? []}
        getRowId={(p) => String(p.id)}
        empty={page.isPending ? 'Loading…' : 'No pipelines match these filters.'}
      />
      <Group justify="space-between">
        <Text size="sm">Page {cursors.length}</Text>
        <Group gap="xs">
          <Button
            variant="default"
            disabled={cursors.length <= 1}
            onClick={() => setPaging({ key: listingKey, cursors: cursors.slice(0, -1) })}
          >
            Previous page
          </Button>
          <Button
            variant="default"
            disabled={!nextCursor || page.isPlaceholderData}
            onClick={() => setPaging({ key: listingKey, cursors: [...cursors, nextCursor] })}
          >
            Next page
          </Button>
        </Group>
      </Group>
    </Stack>
  );
}
