// The selected stage: timings, error, output (a preview with "Show more"), and its logs paged
// oldest first from GET /pipelines/{id}/stages/{stageId}/logs, refreshed while the stage runs.
import { Button, Code, Group, Paper, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useApi } from '../../api/context';
import { isEndpointMissing } from '../../api/problem';
import { LIVE_INTERVAL_MS, shouldRetry } from '../../api/queries';
import type { Page, Stage, StageLog } from '../../api/types';
import { ProblemAlert } from '../../components/ProblemAlert';
import { StatusBadge } from '../../components/StatusBadge';
import { elapsedMs, formatDuration } from '../../lib/format';
import { prettyOutput, previewText } from '../../lib/output';
import { formatLocal } from '../../lib/zones';
import classes from './pipeline.module.css';
import { Fact } from '../../components/Fact';

const PREVIEW_CHARS = 2_000;
const LOG_PAGE = 50;

function Output({ output }: { output: string | null }) {
  const [expanded, setExpanded] = useState(false);
  if (output === null || output === '') return <Text size="sm">No output.</Text>;
  const pretty = prettyOutput(output);
  const preview = previewText(pretty, PREVIEW_CHARS);
  return (
    <Stack gap="xs">
      <Code block className={classes.pre} id="stage-output">
        {expanded ? pretty : preview.text}
      </Code>
      {preview.truncated && (
        <Group gap="xs">
          <Button
            variant="default"
            size="xs"
            aria-expanded={expanded}
            aria-controls="stage-output"
            onClick={() => setExpanded(!expanded)}
          >
            {expanded ? 'Show less' : 'Show more'}
          </Button>
          {!expanded && <Text size="xs">{preview.hidden.toLocaleString()} more characters</Text>}
        </Group>
      )}
    </Stack>
  );
}

function Logs({ pipelineId, stage }: { pipelineId: number; stage: Stage }) {
  const api = useApi();
  const logs = useInfiniteQuery<Page<StageLog>, Error>({
    queryKey: ['api', 'stage-logs', pipelineId, stage.id],
    queryFn: ({ pageParam, signal }) => {
      const query = new URLSearchParams({ limit: String(LOG_PAGE) });
      if (typeof pageParam === 'string') query.set('cursor', pageParam);
      return api.get<Page<StageLog>>(
        `/pipelines/${pipelineId}/stages/${stage.id}/logs?${query}`,
        signal,
      );
    },
    initialPageParam: null,
    getNextPageParam: (last) => last.nextCursor,
    refetchInterval: stage.isTerminal ? false : LIVE_INTERVAL_MS,
    retry: shouldRetry,
  });
  // an older server without the paged endpoint: the newest logs inlined in the pipeline read
  const items = isEndpointMissing(logs.error)
    ? stage.logs
    : (logs.data?.pages.flatMap((p) => p.items) ?? []);
  return (
    <Stack gap="xs">
      {logs.error && !isEndpointMissing(logs.error) && <ProblemAlert error={logs.error} />}
      {items.length === 0 ? (
        <Text size="sm">{logs.isPending ? 'Loading logs…' : 'No logs.'}</Text>
      ) : (
        <Table aria-label="Logs" verticalSpacing={4} fz="sm">
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Time</Table.Th>
              <Table.Th scope="col">Level</Table.Th>
              <Table.Th scope="col">Message</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {items.map((log) => (
              <Table.Tr key={log.id}>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>
                  <time dateTime={log.created}>{formatLocal(log.created)}</time>
                </Table.Td>
                <Table.Td>{log.logLevel}</Table.Td>
                <Table.Td style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
                  {log.message}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {logs.hasNextPage && (
        <Button
          variant="default"
          size="xs"
          loading={logs.isFetchingNextPage}
          onClick={() => void logs.fetchNextPage()}
          w="fit-content"
        >
          Load more logs
        </Button>
      )}
    </Stack>
  );
}

export function StageDetails({
  pipelineId,
  stage,
  now,
}: {
  pipelineId: number;
  stage: Stage;
  now: number;
}) {
  const ms = elapsedMs(stage.startedAt, stage.finishedAt, now);
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="stage-details-heading">
      <Stack gap="md">
        <Group gap="sm">
          <Title order={2} size="h4" id="stage-details-heading">
            Stage {stage.name}
          </Title>
          <StatusBadge status={stage.status} />
        </Group>
        {typeof stage.carriedOverFrom === 'number' && (
          <Text size="sm">
            Carried over from stage {stage.carriedOverFrom} of the original run: its output, timings
            and logs are that run&apos;s, and it did not run again here.
          </Text>
        )}
        <SimpleGrid cols={{ base: 2, sm: 4 }} component="dl" m={0}>
          <Fact label="Handler">{stage.stageHandlerName}</Fact>
          <Fact label="Attempt">{stage.attempt || '—'}</Fact>
          <Fact label="Retries scheduled">{stage.retryAttempt}</Fact>
          <Fact label="Worker">{stage.workerId ?? '—'}</Fact>
          <Fact label="Started">{formatLocal(stage.startedAt)}</Fact>
          <Fact label="Finished">{formatLocal(stage.finishedAt)}</Fact>
          <Fact label="Duration">{ms === null ? '—' : formatDuration(ms)}</Fact>
          <Fact label="Next retry">{formatLocal(stage.nextRetryAt)}</Fact>
          <Fact label="This attempt began">{formatLocal(stage.attemptStartedAt)}</Fact>
          <Fact label="This attempt ended">{formatLocal(stage.attemptEndedAt)}</Fact>
          <Fact label="Failures">{stage.failureCount}</Fact>
          <Fact label="Last error">{stage.lastErrorCode ?? '—'}</Fact>
          <Fact label="Span id">{stage.spanId}</Fact>
          <Fact label="Depends on">
            {stage.options.dependsOn.length
              ? stage.options.dependsOn.join(', ')
              : 'all earlier stages'}
          </Fact>
        </SimpleGrid>
        {stage.description && <Text size="sm">{stage.description}</Text>}
        <div>
          <Title order={3} size="h5" mb="xs">
            Output
          </Title>
          <Output key={stage.id} output={stage.output} />
        </div>
        <div>
          <Title order={3} size="h5" mb="xs">
            Logs
          </Title>
          <Logs pipelineId={pipelineId} stage={stage} />
        </div>
      </Stack>
    </Paper>
  );
}
