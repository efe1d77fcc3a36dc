// The application's handlers (decision 0132): what waits for each (backlog, throttled, oldest
// wait), what runs, and its settings, with Pause/Resume and a form for its limits. Polled every 2 s.
import { Group, Stack, Text, TextInput, Title } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { useState } from 'react';
import { useApi } from '../api/context';
import { useApiGet } from '../api/queries';
import type { HandlerView } from '../api/types';
import { ConfirmAction } from '../components/ConfirmAction';
import { DataTable } from '../components/DataTable';
import { useTitle } from '../components/hooks';
import { QueryProblem } from '../components/ProblemAlert';
import { StatusBadge } from '../components/StatusBadge';
import { formatDuration } from '../lib/format';
import { limitField, limitsRequest, limitsText } from '../lib/handler-text';

const pathOf = (name: string) => `/handlers/${encodeURIComponent(name)}`;

function PauseAction({ handler, onDone }: { handler: HandlerView; onDone: () => void }) {
  const api = useApi();
  const pausing = !handler.paused;
  return (
    <ConfirmAction
      label={pausing ? 'Pause' : 'Resume'}
      title={`${pausing ? 'Pause' : 'Resume'} handler ${handler.name}?`}
      description={
        pausing
          ? 'Nothing more is delivered to it: running stages finish, the others wait as Throttled.'
          : 'Its waiting stages are dispatched again, within its limits.'
      }
      onConfirm={() => api.put(pathOf(handler.name), { paused: pausing })}
      onDone={onDone}
    />
  );
}

function LimitsAction({ handler, onDone }: { handler: HandlerView; onDone: () => void }) {
  const api = useApi();
  const [concurrent, setConcurrent] = useState(limitField(handler.maxConcurrent));
  const [perSecond, setPerSecond] = useState(limitField(handler.maxPerSecond));
  return (
    <ConfirmAction
      label="Limits"
      title={`Limits of handler ${handler.name}`}
      description="Leave a field empty for no limit."
      confirmLabel="Save"
      onConfirm={() => api.put(pathOf(handler.name), limitsRequest(concurrent, perSecond))}
      onDone={onDone}
    >
      <TextInput
        label="Max concurrent"
        description="Pending + Running stages at once (1..1000000)"
        inputMode="numeric"
        value={concurrent}
        onChange={(e) => setConcurrent(e.currentTarget.value)}
        data-autofocus
      />
      <TextInput
        label="Max per second"
        description="Dispatches per second, e.g. 5 or 0.5"
        inputMode="decimal"
        value={perSecond}
        onChange={(e) => setPerSecond(e.currentTarget.value)}
      />
    </ConfirmAction>
  );
}

function columns(refresh: () => void): ColumnDef<HandlerView, unknown>[] {
  return [
    {
      header: 'Handler',
      cell: ({ row }) => (
        <Text size="sm" fw={500}>
          {row.original.name}
        </Text>
      ),
    },
    {
      header: 'State',
      cell: ({ row }) =>
        // The status palette's tones meet the contrast rule (axe), Mantine's light badges do not.
        <StatusBadge status={row.original.paused ? 'Paused' : 'Active'} size="sm" />,
    },
    { header: 'Running', accessorKey: 'running' },
    { header: 'Backlog', accessorKey: 'backlog' },
    { header: 'Throttled', accessorKey: 'throttled' },
    {
      header: 'Oldest wait',
      cell: ({ row }) =>
        row.original.oldestWaitingSeconds === null
          ? '—'
          : formatDuration(row.original.oldestWaitingSeconds * 1000),
    },
    { header: 'Limits', cell: ({ row }) => limitsText(row.original) },
    {
      header: 'Actions',
      cell: ({ row }) => (
        <Group gap="xs" wrap="nowrap">
          <PauseAction handler={row.original} onDone={refresh} />
          <LimitsAction
            key={`${row.original.maxConcurrent}:${row.original.maxPerSecond}`}
            handler={row.original}
            onDone={refresh}
          />
        </Group>
      ),
    },
  ];
}

export default function HandlersPage() {
  useTitle('Handlers');
  const queryClient = useQueryClient();
  const refresh = () => void queryClient.invalidateQueries({ queryKey: ['api'] });
  const handlers = useApiGet<{ items: HandlerView[] }>('/handlers');
  return (
    <Stack gap="md">
      <Title order={1}>Handlers</Title>
      <Text size="sm">
        Backlog is what waits: Throttled stages (held back by a pause, a limit or a concurrency key)
        and Pending ones (dispatched, not yet taken by a worker).
      </Text>
      <QueryProblem error={handlers.error} what="handlers (GET /handlers)" />
      <DataTable
        label="Handlers"
        columns={columns(refresh)}
        data={handlers.data?.items ?? []}
        getRowId={(h) => h.name}
        empty={
          handlers.isPending
            ? 'Loading…'
            : 'No handlers yet: they appear with settings (PUT /handlers/{name}), live stages or workers.'
        }
      />
    </Stack>
  );
}
