// One schedule: its plan, the next five runs in its zone and the viewer's, health, recent runs
// (newest first, paged), and pause / resume / trigger / backfill, each confirmed.
import {
  Anchor,
  Button,
  Group,
  Loader,
  Paper,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import type { ColumnDef } from '@tanstack/react-table';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { useApi } from '../api/context';
import { ApiError } from '../api/problem';
import { useApiGet } from '../api/queries';
import type {
  Page,
  Schedule,
  ScheduleBackfillResponse,
  ScheduleRun,
  ScheduleTriggerResponse,
} from '../api/types';
import { ConfirmAction } from '../components/ConfirmAction';
import { DataTable } from '../components/DataTable';
import { useTitle } from '../components/hooks';
import { ProblemAlert, QueryProblem } from '../components/ProblemAlert';
import { StatusBadge } from '../components/StatusBadge';
import { localInputToIso } from '../lib/pipeline-filters';
import { expressionOf, healthSummary } from '../lib/schedule-text';
import { formatLocal, runTimes, viewerZone } from '../lib/zones';
import { useQueryClient } from '@tanstack/react-query';
import { Fact } from '../components/Fact';

const RUNS_PAGE = 20;

const runColumns: ColumnDef<ScheduleRun, unknown>[] = [
  { header: 'Run', accessorKey: 'id' },
  { header: 'Trigger', accessorKey: 'trigger' },
  { header: 'Scheduled for', cell: ({ row }) => formatLocal(row.original.scheduledFor) },
  {
    header: 'Run status',
    cell: ({ row }) => <StatusBadge status={row.original.status} size="sm" />,
  },
  {
    header: 'Pipeline',
    cell: ({ row }) =>
      row.original.pipelineId === null ? (
        '—'
      ) : (
        <Anchor component={Link} to={`/pipelines/${row.original.pipelineId}`}>
          {row.original.pipelineId}
        </Anchor>
      ),
  },
  {
    header: 'Outcome',
    cell: ({ row }) =>
      row.original.pipelineStatus ? (
        <StatusBadge status={row.original.pipelineStatus} size="sm" />
      ) : (
        '—'
      ),
  },
  { header: 'Reason', cell: ({ row }) => row.original.reason ?? '—' },
];

function NextRuns({ schedule }: { schedule: Schedule }) {
  const viewer = viewerZone();
  const runs = schedule.nextRuns ?? (schedule.nextRunAt ? [schedule.nextRunAt] : []);
  const rows = runTimes(runs, schedule.timeZone, viewer);
  return (
    <section aria-labelledby="next-runs-heading">
      <Title order={2} size="h4" id="next-runs-heading" mb="xs">
        Next runs
      </Title>
      {rows.length === 0 ? (
        <Text size="sm">
          {schedule.status === 'Active'
            ? 'No run is planned.'
            : `None while ${schedule.status.toLowerCase()}.`}
        </Text>
      ) : (
        <Table aria-label="Upcoming fire times" fz="sm" verticalSpacing={4}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">In the schedule’s zone ({schedule.timeZone})</Table.Th>
              <Table.Th scope="col">In your zone ({viewer})</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((r) => (
              <Table.Tr key={r.iso}>
                <Table.Td>
                  <time dateTime={r.iso}>{r.inScheduleZone}</time>
                </Table.Td>
                <Table.Td>
                  <time dateTime={r.iso}>{r.inViewerZone}</time>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {schedule.nextRuns === undefined && rows.length > 0 && (
        <Text size="xs" mt={4}>
          This server reports only the next run.
        </Text>
      )}
    </section>
  );
}

function Actions({ schedule }: { schedule: Schedule }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [overlap, setOverlap] = useState<string | null>(null);
  const [outcome, setOutcome] = useState('');
  const path = `/schedules/${encodeURIComponent(schedule.name)}`;
  const refresh = () => void queryClient.invalidateQueries({ queryKey: ['api'] });
  const archived = schedule.status === 'Archived';
  return (
    <Stack gap={4} align="flex-end">
      <Group gap="sm">
        <ConfirmAction
          label="Pause"
          title={`Pause schedule ${schedule.name}?`}
          description="It stops creating pipelines until it is resumed; queued runs are skipped."
          disabled={schedule.status !== 'Active'}
          onConfirm={() => api.post(`${path}/pause`)}
          onDone={refresh}
        />
        <ConfirmAction
          label="Resume"
          title={`Resume schedule ${schedule.name}?`}
          description="It is planned again from now; missed ticks are not made up."
          disabled={schedule.status !== 'Paused'}
          onConfirm={() => api.post(`${path}/resume`)}
          onDone={refresh}
        />
        <ConfirmAction
          label="Trigger now"
          title={`Trigger schedule ${schedule.name} now?`}
          description="A pipeline is created at once from the current definition (a Manual run); the plan is not moved."
          disabled={archived}
          onConfirm={async () => {
            const out = await api.post<ScheduleTriggerResponse>(`${path}/trigger`);
            setOutcome(out ? `Triggered: pipeline ${out.pipeline.id} created.` : 'Triggered.');
          }}
          onDone={refresh}
        />
        <ConfirmAction
          label="Backfill"
          title={`Backfill schedule ${schedule.name}`}
          description="Creates a run for every tick in the range: From inclusive, To exclusive, in your zone."
          disabled={archived}
          onConfirm={() => {
            const body: Record<string, string> = {
              from: localInputToIso(from),
              to: localInputToIso(to),
            };
            if (overlap) body.overlapPolicy = overlap;
            return api.post<ScheduleBackfillResponse>(`${path}/backfill`, body).then((out) => {
              if (out)
                setOutcome(
                  `Backfill: ${out.ticks} ticks in the range, ${out.created} pipelines created.`,
                );
            });
          }}
          onDone={refresh}
        >
          <TextInput
            type="datetime-local"
            label="From"
            value={from}
            onChange={(e) => setFrom(e.currentTarget.value)}
            required
            data-autofocus
          />
          <TextInput
            type="datetime-local"
            label="To"
            value={to}
            onChange={(e) => setTo(e.currentTarget.value)}
            required
          />
          <Select
            label="Overlap policy"
            placeholder={`the schedule’s (${schedule.overlapPolicy})`}
            data={['Skip', 'Queue', 'Replace', 'Allow']}
            value={overlap}
            onChange={setOverlap}
            clearable
            comboboxProps={{ withinPortal: false }}
          />
        </ConfirmAction>
      </Group>
      <Text size="sm" role="status">
        {outcome}
      </Text>
    </Stack>
  );
}

function Runs({ name }: { name: string }) {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const cursor = cursors[cursors.length - 1] ?? null;
  const query = new URLSearchParams({ limit: String(RUNS_PAGE) });
  if (cursor) query.set('cursor', cursor);
  const runs = useApiGet<Page<ScheduleRun>>(
    `/schedules/${encodeURIComponent(name)}/runs?${query}`,
    { keepPrevious: true },
  );
  const nextCursor = runs.data?.nextCursor ?? null;
  return (
    <section aria-labelledby="runs-heading">
      <Title order={2} size="h4" id="runs-heading" mb="xs">
        Recent runs
      </Title>
      <QueryProblem error={runs.error} what="schedule runs" />
      <DataTable
        label="Runs"
        columns={runColumns}
        data={runs.data?.items ?? []}
        getRowId={(r) => String(r.id)}
        empty="No runs yet."
      />
      <Group justify="flex-end" gap="xs" mt="xs">
        <Button
          variant="default"
          size="xs"
          disabled={cursors.length <= 1}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          Newer runs
        </Button>
        <Button
          variant="default"
          size="xs"
          disabled={!nextCursor || runs.isPlaceholderData}
          onClick={() => setCursors([...cursors, nextCursor])}
        >
          Older runs
        </Button>
      </Group>
    </section>
  );
}

export default function SchedulePage() {
  const name = useParams().name ?? '';
  useTitle(name);
  const query = useApiGet<Schedule>(`/schedules/${encodeURIComponent(name)}`);
  const schedule = query.data;

  if (query.error && !schedule) {
    const missing = query.error instanceof ApiError && query.error.status === 404;
    return (
      <Stack>
        <Title order={1}>{missing ? 'Schedule not found' : name}</Title>
        <ProblemAlert error={query.error} />
        <Anchor component={Link} to="/schedules">
          Back to the schedule list
        </Anchor>
      </Stack>
    );
  }
  if (!schedule) return <Loader aria-label="Loading the schedule" />;

  return (
    <Stack gap="lg">
      <Group justify="space-between" align="flex-start">
        <Stack gap={4}>
          <Text size="sm">
            <Anchor component={Link} to="/schedules">
              Schedule list
            </Anchor>{' '}
            / {schedule.name}
          </Text>
          <Group gap="sm">
            <Title order={1}>{schedule.name}</Title>
            <StatusBadge status={schedule.status} size="lg" />
          </Group>
        </Stack>
        <Actions schedule={schedule} />
      </Group>
      {query.error && <ProblemAlert error={query.error} title="Could not refresh the schedule" />}
      <Paper withBorder p="md">
        <SimpleGrid cols={{ base: 2, sm: 4 }} component="dl" m={0}>
          <Fact label="Kind">{schedule.kind}</Fact>
          <Fact label="Expression">{expressionOf(schedule)}</Fact>
          <Fact label="Zone">{schedule.timeZone}</Fact>
          <Fact label="Jitter">
            {schedule.jitterSeconds ? `up to ${schedule.jitterSeconds} s` : 'none'}
          </Fact>
          <Fact label="Overlap policy">{schedule.overlapPolicy}</Fact>
          <Fact label="Catch-up">
            {schedule.catchupPolicy}
            {schedule.catchupPolicy === 'All' ? ` (max ${schedule.catchupMax})` : ''}
          </Fact>
          <Fact label="Definition">
            {schedule.definition.name}, version {schedule.definitionVersion}
          </Fact>
          <Fact label="Last run">
            {schedule.lastRunAt ? formatLocal(schedule.lastRunAt) : '—'}
            {schedule.lastPipelineId !== null && (
              <>
                {' '}
                (
                <Anchor component={Link} to={`/pipelines/${schedule.lastPipelineId}`}>
                  pipeline {schedule.lastPipelineId}
                </Anchor>
                )
              </>
            )}
          </Fact>
        </SimpleGrid>
      </Paper>
      <SimpleGrid cols={{ base: 1, md: 2 }} spacing="lg">
        <NextRuns schedule={schedule} />
        <section aria-labelledby="health-heading">
          <Title order={2} size="h4" id="health-heading" mb="xs">
            Health
          </Title>
          <Group gap="sm">
            <StatusBadge status={schedule.health.state} />
            <Text size="sm">{healthSummary(schedule.health)}</Text>
          </Group>
          {schedule.health.lastFailureAt && (
            <Text size="sm" mt={4}>
              Last failure {formatLocal(schedule.health.lastFailureAt)}
            </Text>
          )}
        </section>
      </SimpleGrid>
      <Runs name={schedule.name} />
    </Stack>
  );
}
