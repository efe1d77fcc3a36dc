// The application's webhooks (decision 0134): add one (its signing secret is shown once, right
// after), enable, disable or delete it, and read its delivery log, where a delivery can be retried.
// Polled every 2 s like the other lists.
import { Alert, Button, Checkbox, Code, Group, Stack, Text, TextInput, Title } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { useState } from 'react';
import { useApi } from '../api/context';
import { useApiGet } from '../api/queries';
import type {
  WebhookCreated,
  WebhookDeliveryList,
  WebhookDeliveryView,
  WebhookView,
} from '../api/types';
import { ConfirmAction } from '../components/ConfirmAction';
import { DataTable } from '../components/DataTable';
import { useTitle } from '../components/hooks';
import { QueryProblem } from '../components/ProblemAlert';
import { StatusBadge } from '../components/StatusBadge';
import { formatLocal } from '../lib/zones';

const EVENTS = [
  'pipeline.completed',
  'pipeline.failed',
  'pipeline.cancelled',
  'stage.failed',
  'stage.waiting_for_approval',
  'schedule.run_missed',
] as const;

const pathOf = (name: string) => `/webhooks/${encodeURIComponent(name)}`;

function AddWebhook({ onCreated }: { onCreated: (w: WebhookCreated) => void }) {
  const api = useApi();
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>(['pipeline.failed']);
  return (
    <ConfirmAction
      label="Add webhook"
      variant="filled"
      title="Add a webhook"
      description="Events are POSTed to the URL, signed as Standard Webhooks. Its signing secret is shown once, next."
      confirmLabel="Add"
      onConfirm={async () => {
        const created = await api.put<WebhookCreated>(pathOf(name), { url, events });
        if (created && 'secret' in created) onCreated(created);
      }}
    >
      <TextInput
        label="Name"
        description="letters, digits, '.', '_' or '-'"
        value={name}
        onChange={(e) => setName(e.currentTarget.value)}
        data-autofocus
        required
      />
      <TextInput
        label="URL"
        description="http or https"
        value={url}
        onChange={(e) => setUrl(e.currentTarget.value)}
        required
      />
      <Checkbox.Group label="Events" value={events} onChange={setEvents}>
        <Stack gap={4} mt={4}>
          {EVENTS.map((e) => (
            <Checkbox key={e} value={e} label={e} />
          ))}
        </Stack>
      </Checkbox.Group>
    </ConfirmAction>
  );
}

function webhookColumns(
  refresh: () => void,
  show: (name: string) => void,
): ColumnDef<WebhookView, unknown>[] {
  return [
    {
      header: 'Webhook',
      cell: ({ row }) => (
        <Text size="sm" fw={500}>
          {row.original.name}
        </Text>
      ),
    },
    {
      header: 'State',
      cell: ({ row }) => (
        <StatusBadge status={row.original.enabled ? 'Enabled' : 'Disabled'} size="sm" />
      ),
    },
    { header: 'URL', cell: ({ row }) => <Code>{row.original.url}</Code> },
    { header: 'Events', cell: ({ row }) => row.original.events.join(', ') },
    {
      header: 'Actions',
      cell: ({ row }) => <WebhookActions webhook={row.original} refresh={refresh} show={show} />,
    },
  ];
}

function WebhookActions({
  webhook,
  refresh,
  show,
}: {
  webhook: WebhookView;
  refresh: () => void;
  show: (name: string) => void;
}) {
  const api = useApi();
  const enabling = !webhook.enabled;
  return (
    <Group gap="xs" wrap="nowrap">
      <Button size="xs" variant="default" onClick={() => show(webhook.name)}>
        Deliveries
      </Button>
      <ConfirmAction
        label={enabling ? 'Enable' : 'Disable'}
        title={`${enabling ? 'Enable' : 'Disable'} webhook ${webhook.name}?`}
        description={
          enabling
            ? 'It takes events again, and its waiting deliveries go out.'
            : 'It takes no new events; its pending deliveries wait until it is enabled.'
        }
        onConfirm={() =>
          api.put(pathOf(webhook.name), {
            url: webhook.url,
            events: webhook.events,
            enabled: enabling,
          })
        }
        onDone={refresh}
      />
      <ConfirmAction
        label="Delete"
        color="red"
        title={`Delete webhook ${webhook.name}?`}
        description="It and its delivery log are deleted; nothing more is sent to it."
        onConfirm={() => api.delete(pathOf(webhook.name))}
        onDone={refresh}
      />
    </Group>
  );
}

function deliveryColumns(
  name: string,
  refresh: () => void,
): ColumnDef<WebhookDeliveryView, unknown>[] {
  return [
    { header: 'Delivery', cell: ({ row }) => <Code>{row.original.id}</Code> },
    { header: 'Event', accessorKey: 'eventType' },
    { header: 'Status', cell: ({ row }) => <StatusBadge status={row.original.status} size="sm" /> },
    { header: 'Attempts', accessorKey: 'attempts' },
    {
      header: 'Last response',
      cell: ({ row }) => row.original.lastResponseCode ?? row.original.lastError ?? '—',
    },
    {
      header: 'Next attempt',
      cell: ({ row }) =>
        row.original.nextAttemptAt ? (
          <time dateTime={row.original.nextAttemptAt}>
            {formatLocal(row.original.nextAttemptAt)}
          </time>
        ) : (
          '—'
        ),
    },
    {
      header: 'Created',
      cell: ({ row }) => (
        <time dateTime={row.original.createdAt}>{formatLocal(row.original.createdAt)}</time>
      ),
    },
    {
      header: 'Actions',
      cell: ({ row }) => <RetryAction name={name} delivery={row.original} onDone={refresh} />,
    },
  ];
}

function RetryAction({
  name,
  delivery,
  onDone,
}: {
  name: string;
  delivery: WebhookDeliveryView;
  onDone: () => void;
}) {
  const api = useApi();
  return (
    <ConfirmAction
      label="Retry"
      title={`Retry delivery ${delivery.id}?`}
      description="It is attempted again now, under the same webhook-id."
      onConfirm={() => api.post(`${pathOf(name)}/deliveries/${delivery.id}/retry`)}
      onDone={onDone}
    />
  );
}

function Deliveries({ name, refresh }: { name: string; refresh: () => void }) {
  const deliveries = useApiGet<WebhookDeliveryList>(`${pathOf(name)}/deliveries`);
  return (
    <Stack gap="xs">
      <Title order={2}>Deliveries of {name}</Title>
      <QueryProblem
        error={deliveries.error}
        what={`deliveries (GET /webhooks/${name}/deliveries)`}
      />
      <DataTable
        label={`Deliveries of ${name}`}
        columns={deliveryColumns(name, refresh)}
        data={deliveries.data?.items ?? []}
        getRowId={(d) => d.id}
        empty={
          deliveries.isPending
            ? 'Loading…'
            : 'No deliveries yet: they appear when an event it takes happens.'
        }
      />
    </Stack>
  );
}

export default function WebhooksPage() {
  useTitle('Webhooks');
  const queryClient = useQueryClient();
  const refresh = () => void queryClient.invalidateQueries({ queryKey: ['api'] });
  const webhooks = useApiGet<{ items: WebhookView[] }>('/webhooks');
  const [created, setCreated] = useState<WebhookCreated | null>(null);
  const [shown, setShown] = useState<string | null>(null);
  return (
    <Stack gap="md">
      <Group justify="space-between">
        <Title order={1}>Webhooks</Title>
        <AddWebhook
          onCreated={(w) => {
            setCreated(w);
            setShown(w.name);
            refresh();
          }}
        />
      </Group>
      {created && (
        <Alert
          title={`Signing secret of ${created.name}`}
          withCloseButton
          closeButtonLabel="Dismiss the secret"
          onClose={() => setCreated(null)}
        >
          <Stack gap={4}>
            <Text size="sm">
              Keep it now: it is not shown again. Receivers verify each delivery's webhook-signature
              with it.
            </Text>
            <Code aria-label="signing secret">{created.secret}</Code>
          </Stack>
        </Alert>
      )}
      <QueryProblem error={webhooks.error} what="webhooks (GET /webhooks)" />
      <DataTable
        label="Webhooks"
        columns={webhookColumns(refresh, setShown)}
        data={webhooks.data?.items ?? []}
        getRowId={(w) => w.name}
        empty={webhooks.isPending ? 'Loading…' : 'No webhooks yet.'}
      />
      {shown && webhooks.data?.items.some((w) => w.name === shown) && (
        <Deliveries name={shown} refresh={refresh} />
      )}
    </Stack>
  );
}
