import { Card, Group, Loader, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import type { ColumnDef } from '@tanstack/react-table';
import { Link } from 'react-router';
import { useApiGet } from '../api/queries';
import type { Overview, QueueDepth } from '../api/types';
import { PIPELINE_STATUSES } from '../api/types';
import { BarChart } from '../components/BarChart';
import { DataTable } from '../components/DataTable';
import { useTitle } from '../components/hooks';
import { QueryProblem } from '../components/ProblemAlert';
import { bucketLabel } from '../lib/chart';
import { formatDuration } from '../lib/format';

const COMPLETED = '#2b8a3e';
const FAILED = '#c92a2a';

const queueColumns: ColumnDef<QueueDepth, unknown>[] = [
  { header: 'Handler', accessorKey: 'handlerName' },
  { header: 'Waiting', accessorKey: 'waiting' },
  { header: 'Delayed', accessorKey: 'delayed' },
  {
    header: 'Oldest waiting',
    cell: ({ row }) =>
      row.original.oldestWaitingAgeMs === null
        ? '—'
        : formatDuration(row.original.oldestWaitingAgeMs),
  },
];

function Throughput({ overview }: { overview: Overview }) {
  const labels = overview.buckets.map((b) => bucketLabel(b.start));
  return (
    <SimpleGrid cols={{ base: 1, md: 2 }} spacing="lg">
      <Stack gap="xs">
        <Title order={3} size="h5">
          Stages
        </Title>
        <BarChart
          title="Stages per 5 minutes"
          labels={labels}
          series={[
            {
              name: 'Completed',
              color: COMPLETED,
              values: overview.buckets.map((b) => b.stagesCompleted),
            },
            { name: 'Failed', color: FAILED, values: overview.buckets.map((b) => b.stagesFailed) },
          ]}
        />
      </Stack>
      <Stack gap="xs">
        <Title order={3} size="h5">
          Pipelines
        </Title>
        <BarChart
          title="Pipelines per 5 minutes"
          labels={labels}
          series={[
            {
              name: 'Completed',
              color: COMPLETED,
              values: overview.buckets.map((b) => b.pipelinesCompleted),
            },
            {
              name: 'Failed',
              color: FAILED,
              values: overview.buckets.map((b) => b.pipelinesFailed),
            },
          ]}
        />
      </Stack>
    </SimpleGrid>
  );
}

function InProgress({ overview }: { overview: Overview }) {
  const statuses = PIPELINE_STATUSES.filter((s) => overview.pipelinesByStatus[s] !== undefined);
  if (statuses.length === 0) return null;
  return (
    <Group gap="md" component="dl" m={0}>
      {statuses.map((status) => (
        <Card key={status} withBorder padding="sm" miw={120}>
          <Text size="sm" component="dt">
            <Link to={`/pipelines?status=${status}`}>{status}</Link>
          </Text>
          <Text size="xl" fw={700} component="dd" m={0}>
            {overview.pipelinesByStatus[status]}
          </Text>
        </Card>
      ))}
    </Group>
  );
}

export default function OverviewPage() {
  useTitle('Overview');
  const overview = useApiGet<Overview>('/overview', { refetchInterval: 5_000 });
  const data = overview.data;
  return (
    <Stack gap="lg">
      <Title order={1}>Overview</Title>
      <QueryProblem error={overview.error} what="the overview (GET /overview)" />
      {data && <InProgress overview={data} />}
      <section aria-labelledby="throughput-heading">
        <Title order={2} id="throughput-heading" mb="sm">
          Throughput (last hour)
        </Title>
        {overview.isPending && <Loader size="sm" aria-label="Loading" />}
        {data && <Throughput overview={data} />}
      </section>
      <section aria-labelledby="queues-heading">
        <Title order={2} id="queues-heading" mb="sm">
          Queue depth
        </Title>
        {data && (
          <DataTable
            label="Queue depth"
            columns={queueColumns}
            data={data.queues}
            getRowId={(q) => q.handlerName}
            empty="No handler queues for this application yet."
          />
        )}
      </section>
    </Stack>
  );
}
