// Actions on the pipelines selected in the list (issue 32): rerun each from its failure, or cancel
// each. One request per pipeline, one after the other, so a long selection does not flood the
// API; what could not be done is listed with the API's reason.
import { Alert, Button, Group, List, Text } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useApi } from '../../api/context';
import type { PipelineSummary } from '../../api/types';
import { ConfirmAction } from '../../components/ConfirmAction';

interface Outcome {
  action: string;
  done: number;
  failed: { id: number; reason: string }[];
}

const rerunnable = (p: PipelineSummary) => p.status === 'Failed' || p.status === 'Cancelled';

export function SelectedActions({
  selected,
  onCleared,
}: {
  selected: PipelineSummary[];
  onCleared: () => void;
}) {
  const api = useApi();
  const queryClient = useQueryClient();
  const [outcome, setOutcome] = useState<Outcome | null>(null);

  const runEach = async (
    action: string,
    targets: PipelineSummary[],
    call: (id: number) => Promise<unknown>,
  ) => {
    const result: Outcome = { action, done: 0, failed: [] };
    for (const p of targets) {
      try {
        await call(p.id);
        result.done += 1;
      } catch (e) {
        result.failed.push({ id: p.id, reason: e instanceof Error ? e.message : String(e) });
      }
    }
    setOutcome(result);
    onCleared();
  };

  const toRerun = selected.filter(rerunnable);
  const toCancel = selected.filter((p) => !p.isTerminal);
  return (
    <>
      {selected.length > 0 && (
        <Group gap="sm" aria-label="Selected pipelines" role="group">
          <Text size="sm">{selected.length} selected</Text>
          <ConfirmAction
            label={`Rerun ${toRerun.length} from failure`}
            title={`Rerun ${toRerun.length} pipelines from their failure?`}
            description="Each Failed or Cancelled pipeline selected gets a new run that keeps the stages that completed (not run again) and runs the rest. The others selected are left out."
            disabled={toRerun.length === 0}
            onConfirm={() =>
              runEach('Rerun from failure', toRerun, (id) =>
                api.post(`/pipelines/${id}/rerun`, { from: 'failed' }),
              )
            }
            onDone={() => void queryClient.invalidateQueries({ queryKey: ['api'] })}
          />
          <ConfirmAction
            label={`Cancel ${toCancel.length}`}
            title={`Cancel ${toCancel.length} pipelines?`}
            description="Every unfinished stage of each selected pipeline that is not finished becomes Cancelled."
            color="red.9"
            variant="outline"
            disabled={toCancel.length === 0}
            onConfirm={() =>
              runEach('Cancel', toCancel, (id) => api.post(`/pipelines/${id}/cancel`))
            }
            onDone={() => void queryClient.invalidateQueries({ queryKey: ['api'] })}
          />
          <Button variant="subtle" onClick={onCleared}>
            Clear selection
          </Button>
        </Group>
      )}
      {outcome && (
        <Alert
          role="status"
          variant="light"
          color={outcome.failed.length ? 'red' : 'gray'}
          title={`${outcome.action}: ${outcome.done} done, ${outcome.failed.length} not done`}
          withCloseButton
          closeButtonLabel="Dismiss"
          onClose={() => setOutcome(null)}
        >
          {outcome.failed.length > 0 && (
            <List size="sm">
              {outcome.failed.map((f) => (
                <List.Item key={f.id}>
                  Pipeline {f.id}: {f.reason}
                </List.Item>
              ))}
            </List>
          )}
        </Alert>
      )}
    </>
  );
}
