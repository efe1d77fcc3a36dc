import { Anchor, Button, Group, Stack, Text, Title } from '@mantine/core';
import type { ColumnDef } from '@tanstack/react-table';
import { useState } from 'react';
import { Link } from 'react-router';
import { useApiGet } from '../api/queries';
import type { Page, Schedule } from '../api/types';
import { DataTable } from '../components/DataTable';
import { useNow, useTitle } from '../components/hooks';
import { QueryProblem } from '../components/ProblemAlert';
import { StatusBadge } from '../components/StatusBadge';
import { formatAge } from '../lib/format';
import { expressionOf, healthSummary, nextRunOf } from '../lib/schedule-text';
import { formatLocal } from '../lib/zones';

const PAGE_SIZE = 50;

const columns: ColumnDef<Schedule, unknown>[] = [
  {
    header: 'Name',
    cell: ({ row }) => (
      <Anchor component={Link} to={`/schedules/${encodeURIComponent(row.original.name)}`} fw={500}>
        {row.original.name}
      </Anchor>
    ),
  },
  { header: 'Kind', accessorKey: 'kind' },
  { header: 'Expression', cell: ({ row }) => <code>{expressionOf(row.original)}</code> },
  { header: 'Zone', accessorKey: 'timeZone' },
  {
    header: 'Next run',
    cell: ({ row }) => {
      const next = nextRunOf(row.original);
      return next ? <time dateTime={next}>{formatLocal(next)}</time> : '—';
    },
  },
  { header: 'State', cell: ({ row }) => <StatusBadge status={row.original.status} size="sm" /> },
  {
    header: 'Health',
    cell: ({ row }) => (
      <Group gap={6} wrap="nowrap">
        <StatusBadge status={row.original.health.state} size="sm" />
        <Text size="xs">{healthSummary(row.original.health)}</Text>
      </Group>
    ),
  },
];

export default function SchedulesPage() {
  useTitle('Schedules');
  const now = useNow(5_000);
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const cursor = cursors[cursors.length - 1] ?? null;
  const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
  if (cursor) query.set('cursor', cursor);
  const page = useApiGet<Page<Schedule>>(`/schedules?${query}`, { keepPrevious: true });
  const nextCursor = page.data?.nextCursor ?? null;
  const updated = page.dataUpdatedAt ? new Date(page.dataUpdatedAt).toISOString() : null;

  return (
    <Stack gap="md">
      <Title order={1}>Schedules</Title>
      <QueryProblem error={page.error} what="schedules (GET /schedules)" />
      <DataTable
        label="Schedules"
        columns={columns}
        data={page.data?.items ?? []}
        getRowId={(s) => String(s.id)}
        empty={
          page.isPending ? 'Loading…' : 'No schedules yet. Create one with PUT /schedules/{name}.'
        }
      />
      <Group justify="space-between">
        <Text size="sm">
          Page {cursors.length}
          {updated ? ` · updated ${formatAge(updated, now)}` : ''}
        </Text>
        <Group gap="xs">
          <Button
            variant="default"
            disabled={cursors.length <= 1}
            onClick={() => setCursors(cursors.slice(0, -1))}
          >
            Previous page
          </Button>
          <Button
            variant="default"
            disabled={!nextCursor || page.isPlaceholderData}
            onClick={() => setCursors([...cursors, nextCursor])}
          >
            Next page
          </Button>
        </Group>
      </Group>
    </Stack>
  );
}
