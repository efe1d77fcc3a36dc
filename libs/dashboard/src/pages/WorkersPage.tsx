// The worker fleet and its live activity feed (GET /worker-events: every worker's events,
// newest first), both refreshed every 2 s.
import { Anchor, Group, List, Stack, Text, Title } from '@mantine/core';
import type { ColumnDef } from '@tanstack/react-table';
import { useMemo } from 'react';
import { Link } from 'react-router';
import { useApiGet } from '../api/queries';
import type { FleetEvent, Page, WorkerSummary } from '../api/types';
import { DataTable } from '../components/DataTable';
import { useNow, useTitle } from '../components/hooks';
import { QueryProblem } from '../components/ProblemAlert';
import { StatusBadge } from '../components/StatusBadge';
import { fleetStatus, latestLifecycle } from '../lib/fleet';
import { formatAge, humanize } from '../lib/format';
import { formatLocal } from '../lib/zones';

type Row = WorkerSummary & { fleet: string };

function columns(now: number): ColumnDef<Row, unknown>[] {
  return [
    {
      header: 'Worker',
      cell: ({ row }) => (
        <Stack gap={0}>
          <Text size="sm" fw={500}>
            {row.original.workerName ?? row.original.instanceId}
          </Text>
          <Text size="xs">{row.original.workerId}</Text>
        </Stack>
      ),
    },
    { header: 'Status', cell: ({ row }) => <StatusBadge status={row.original.fleet} size="sm" /> },
    { header: 'Handlers', cell: ({ row }) => row.original.handlers.join(', ') || '—' },
    {
      header: 'Last heartbeat',
      cell: ({ row }) =>
        row.original.lastHeartbeatAt ? (
          <time dateTime={row.original.lastHeartbeatAt}>
            {formatAge(row.original.lastHeartbeatAt, now)}
          </time>
        ) : (
          'never'
        ),
    },
    { header: 'In flight', cell: ({ row }) => row.original.counters.inFlight ?? '—' },
  ];
}

function EventLine({ event, name }: { event: FleetEvent; name: string }) {
  return (
    <Group gap="xs" wrap="wrap">
      <Text size="xs" component="time" dateTime={event.at} miw={150}>
        {formatLocal(event.at)}
      </Text>
      <StatusBadge status={event.kind} label={humanize(event.kind)} size="sm" />
      <Text size="sm" fw={500}>
        {name}
      </Text>
      {event.pipelineId !== null && (
        <Anchor
          component={Link}
          to={`/pipelines/${event.pipelineId}${event.stageId ? `?stage=${event.stageId}` : ''}`}
          size="sm"
        >
          pipeline {event.pipelineId}
        </Anchor>
      )}
      {event.message && <Text size="sm">{event.message}</Text>}
    </Group>
  );
}

export default function WorkersPage() {
  useTitle('Workers');
  const now = useNow();
  const workers = useApiGet<Page<WorkerSummary>>('/workers?limit=200');
  const events = useApiGet<Page<FleetEvent>>('/worker-events?limit=50');
  const lifecycle = useMemo(() => latestLifecycle(events.data?.items ?? []), [events.data]);
  const rows: Row[] = (workers.data?.items ?? []).map((w) => ({
    ...w,
    fleet: fleetStatus(w, lifecycle.get(w.workerId), now),
  }));
  const names = new Map(rows.map((w) => [w.workerId, w.workerName ?? w.instanceId]));
  const cols = useMemo(() => columns(now), [now]);

  return (
    <Stack gap="lg">
      <Title order={1}>Workers</Title>
      <QueryProblem error={workers.error} what="the worker list (GET /workers)" />
      <DataTable
        label="Workers"
        columns={cols}
        data={rows}
        getRowId={(w) => w.workerId}
        empty={workers.isPending ? 'Loading…' : 'No worker has registered yet.'}
      />
      {workers.data?.nextCursor && <Text size="sm">Showing the first 200 workers.</Text>}
      <section aria-labelledby="activity-heading">
        <Title order={2} id="activity-heading" mb="sm">
          Activity
        </Title>
        <QueryProblem error={events.error} what="the activity feed (GET /worker-events)" />
        {events.data && events.data.items.length === 0 && (
          <Text size="sm">No worker events yet.</Text>
        )}
        <List aria-label="Activity" listStyleType="none" spacing={6}>
          {(events.data?.items ?? []).map((event) => (
            <List.Item key={event.id}>
              <EventLine event={event} name={names.get(event.workerId) ?? event.workerId} />
            </List.Item>
          ))}
        </List>
      </section>
    </Stack>
  );
}
