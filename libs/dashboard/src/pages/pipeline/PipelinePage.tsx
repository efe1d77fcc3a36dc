// One pipeline: status, actions, the stage graph beside the stages table, the selected stage's
// details, approvals, context and keywords. Polls every 2 s until the pipeline is terminal.
import { Anchor, Grid, Group, Loader, Paper, Stack, Text, Textarea, Title } from '@mantine/core';
import { useCallback, useState } from 'react';
import { Link, useNavigate, useParams, useSearchParams } from 'react-router';
import { useApi } from '../../api/context';
import { ApiError } from '../../api/problem';
import { LIVE_INTERVAL_MS, useApiGet, useUiConfig } from '../../api/queries';
import type { PipelineResponse, Stage } from '../../api/types';
import { ConfirmAction } from '../../components/ConfirmAction';
import { useNow, useTitle } from '../../components/hooks';
import { ProblemAlert } from '../../components/ProblemAlert';
import { StatusBadge } from '../../components/StatusBadge';
import { formatAge } from '../../lib/format';
import { defaultStageId, traceUrl } from '../../lib/links';
import { TONES } from '../../lib/status-colors';
import { formatLocal } from '../../lib/zones';
import { useQueryClient } from '@tanstack/react-query';
import { ContextSection } from './ContextSection';
import { StageDetails } from './StageDetails';
import { StageGraph } from './StageGraph';
import { StagesTable } from './StagesTable';

function Approvals({ stages }: { stages: Stage[] }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const [reason, setReason] = useState('');
  const waiting = stages.filter((s) => s.status === 'WaitingForApproval');
  if (waiting.length === 0) return null;
  const refresh = () => void queryClient.invalidateQueries({ queryKey: ['api'] });
  return (
    <Paper
      withBorder
      p="md"
      component="section"
      aria-labelledby="approvals-heading"
      style={{ borderLeft: `4px solid ${TONES.attention.fg}`, background: TONES.attention.bg }}
    >
      <Title order={2} size="h4" id="approvals-heading" mb="sm">
        Waiting for approval
      </Title>
      <Stack gap="sm">
        {waiting.map((stage) => (
          <Group key={stage.id} gap="sm">
            <Text size="sm" fw={600}>
              Stage {stage.name}
            </Text>
            <ConfirmAction
              label="Approve"
              title={`Approve stage ${stage.name}?`}
              description="The pipeline goes on past this stage."
              variant="filled"
              onConfirm={() => api.post(`/stages/${stage.id}/resume`, { approved: true })}
              onDone={refresh}
            />
            <ConfirmAction
              label="Reject"
              title={`Reject stage ${stage.name}?`}
              description="The stage fails with your reason."
              color="red.9"
              variant="filled"
              onConfirm={() =>
                api.post(`/stages/${stage.id}/resume`, {
                  approved: false,
                  rejectionReason: reason.trim() || null,
                })
              }
              onDone={refresh}
            >
              <Textarea
                label="Reason"
                value={reason}
                onChange={(e) => setReason(e.currentTarget.value)}
                autosize
                minRows={2}
                data-autofocus
              />
            </ConfirmAction>
          </Group>
        ))}
      </Stack>
    </Paper>
  );
}

function Actions({ pipeline }: { pipeline: PipelineResponse }) {
  const api = useApi();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  return (
    <Group gap="sm">
      <ConfirmAction
        label="Cancel pipeline"
        title={`Cancel pipeline ${pipeline.name}?`}
        description="Every unfinished stage becomes Cancelled. A running handler is asked to stop."
        color="red.9"
        variant="outline"
        disabled={pipeline.isTerminal}
        onConfirm={() => api.post(`/pipelines/${pipeline.id}/cancel`)}
        onDone={() => void queryClient.invalidateQueries({ queryKey: ['api'] })}
      />
      <ConfirmAction
        label="Rerun"
        title={`Rerun pipeline ${pipeline.name}?`}
        description="A new pipeline starts from this one's definition; this one stays as it is."
        disabled={!pipeline.isTerminal}
        onConfirm={async () => {
          const rerun = await api.post<PipelineResponse>(`/pipelines/${pipeline.id}/rerun`);
          if (rerun) void navigate(`/pipelines/${rerun.id}`);
        }}
      />
      <ConfirmAction
        label="Rerun from failure"
        title={`Rerun pipeline ${pipeline.name} from its failure?`}
        description="A new pipeline keeps every stage that completed here (with its output and logs, not run again) and runs the rest; this one stays as it is."
        disabled={pipeline.status !== 'Failed' && pipeline.status !== 'Cancelled'}
        onConfirm={async () => {
          const rerun = await api.post<PipelineResponse>(`/pipelines/${pipeline.id}/rerun`, {
            from: 'failed',
          });
          if (rerun) void navigate(`/pipelines/${rerun.id}`);
        }}
      />
    </Group>
  );
}

function Facts({ pipeline, now }: { pipeline: PipelineResponse; now: number }) {
  const { traceUrlTemplate } = useUiConfig();
  const trace = traceUrl(traceUrlTemplate, pipeline.traceId);
  return (
    <Group gap="xl" component="dl" m={0} wrap="wrap">
      <div>
        <Text size="xs" fw={600} component="dt">
          Created
        </Text>
        <Text size="sm" component="dd" m={0}>
          {formatLocal(pipeline.createdAt)} ({formatAge(pipeline.createdAt, now)})
        </Text>
      </div>
      <div>
        <Text size="xs" fw={600} component="dt">
          Finished
        </Text>
        <Text size="sm" component="dd" m={0}>
          {formatLocal(pipeline.finishedAt)}
        </Text>
      </div>
      <div>
        <Text size="xs" fw={600} component="dt">
          Trace
        </Text>
        <Text size="sm" component="dd" m={0}>
          {trace ? (
            <Anchor href={trace} target="_blank" rel="noopener noreferrer">
              {pipeline.traceId}
            </Anchor>
          ) : (
            pipeline.traceId
          )}
        </Text>
      </div>
      {pipeline.rerunOf !== null && (
        <div>
          <Text size="xs" fw={600} component="dt">
            Rerun of
          </Text>
          <Text size="sm" component="dd" m={0}>
            <Anchor component={Link} to={`/pipelines/${pipeline.rerunOf}`}>
              pipeline {pipeline.rerunOf}
            </Anchor>
          </Text>
        </div>
      )}
      {pipeline.reruns.length > 0 && (
        <div>
          <Text size="xs" fw={600} component="dt">
            Reruns
          </Text>
          <Text size="sm" component="dd" m={0}>
            {pipeline.reruns.map((id, i) => (
              <span key={id}>
                {i > 0 && ', '}
                <Anchor component={Link} to={`/pipelines/${id}`}>
                  {id}
                </Anchor>
              </span>
            ))}
          </Text>
        </div>
      )}
      {pipeline.pipelineKeywords.length > 0 && (
        <div>
          <Text size="xs" fw={600} component="dt">
            Keywords
          </Text>
          <Text size="sm" component="dd" m={0}>
            {pipeline.pipelineKeywords.map((k) => `${k.key}=${k.value}`).join(', ')}
          </Text>
        </div>
      )}
    </Group>
  );
}

export default function PipelinePage() {
  const params = useParams();
  const id = Number(params.id);
  const valid = Number.isSafeInteger(id) && id > 0;
  const now = useNow();
  const [search, setSearch] = useSearchParams();
  const query = useApiGet<PipelineResponse>(`/pipelines/${valid ? id : 0}`, {
    enabled: valid,
    // a finished pipeline changes rarely (a rerun may list itself): poll it slowly
    refetchInterval: (p) => (p?.isTerminal ? 10_000 : LIVE_INTERVAL_MS),
  });
  const pipeline = query.data;
  useTitle(pipeline ? pipeline.name : `Pipeline ${params.id ?? ''}`);
  const select = useCallback(
    (stageId: number) => setSearch({ stage: String(stageId) }, { replace: true }),
    [setSearch],
  );

  if (!valid) {
    return (
      <Stack>
        <Title order={1}>Pipeline not found</Title>
        <Text>“{params.id}” is not a pipeline id.</Text>
      </Stack>
    );
  }
  if (query.error && !pipeline) {
    const missing =
      query.error instanceof ApiError && (query.error.status === 404 || query.error.status === 403);
    return (
      <Stack>
        <Title order={1}>{missing ? 'Pipeline not found' : `Pipeline ${id}`}</Title>
        <ProblemAlert error={query.error} />
        <Anchor component={Link} to="/pipelines">
          Back to the pipeline list
        </Anchor>
      </Stack>
    );
  }
  if (!pipeline) return <Loader aria-label="Loading the pipeline" />;

  const stages = pipeline.stages as Stage[];
  const requested = Number(search.get('stage'));
  const selectedId = stages.some((s) => s.id === requested) ? requested : defaultStageId(stages);
  const selected = stages.find((s) => s.id === selectedId) ?? null;

  return (
    <Stack gap="lg">
      <Group justify="space-between" align="flex-start">
        <Stack gap={4}>
          <Text size="sm">
            <Anchor component={Link} to="/pipelines">
              Pipeline list
            </Anchor>{' '}
            / pipeline {pipeline.id}
          </Text>
          <Group gap="sm">
            <Title order={1}>{pipeline.name}</Title>
            <StatusBadge status={pipeline.status} size="lg" />
          </Group>
        </Stack>
        <Actions pipeline={pipeline} />
      </Group>
      {query.error && <ProblemAlert error={query.error} title="Could not refresh the pipeline" />}
      <Facts pipeline={pipeline} now={now} />
      <Approvals stages={stages} />
      <Grid gap="lg">
        <Grid.Col span={{ base: 12, lg: 5 }}>
          <StageGraph stages={stages} selectedId={selectedId} onSelect={select} />
        </Grid.Col>
        <Grid.Col span={{ base: 12, lg: 7 }}>
          <StagesTable stages={stages} selectedId={selectedId} onSelect={select} now={now} />
        </Grid.Col>
      </Grid>
      {selected && <StageDetails pipelineId={pipeline.id} stage={selected} now={now} />}
      <ContextSection items={pipeline.pipelineContextItems} />
    </Stack>
  );
}
