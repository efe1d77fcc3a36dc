import { Alert, List, Text } from '@mantine/core';
import { ApiError, isEndpointMissing, NetworkError } from '../api/problem';

/** An error answer in an alert: title, detail, and each invalid field with its message. */
export function ProblemAlert({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  if (error instanceof ApiError) {
    // a validation detail usually repeats the field messages listed below it
    const repeated =
      error.errors.length > 0 && error.errors.every((e) => error.detail.includes(e.message));
    return (
      <Alert role="alert" color="red" variant="light" title={title ?? error.title}>
        {error.detail && !repeated && <Text size="sm">{error.detail}</Text>}
        {error.errors.length > 0 && (
          <List size="sm" mt="xs">
            {error.errors.map((e, i) => (
              <List.Item key={`${e.field}-${i}`}>
                {e.field ? <strong>{e.field}</strong> : <strong>request</strong>}: {e.message}
              </List.Item>
            ))}
          </List>
        )}
        {error.traceId && (
          <Text size="xs" c="dimmed" mt="xs">
            Trace id {error.traceId}
          </Text>
        )}
      </Alert>
    );
  }
  const message =
    error instanceof NetworkError || error instanceof Error ? error.message : String(error);
  return (
    <Alert role="alert" color="red" variant="light" title={title ?? 'Something went wrong'}>
      <Text size="sm">{message}</Text>
    </Alert>
  );
}

/** An endpoint this api-gateway does not have yet: say so instead of failing. */
export function NotAvailable({ what }: { what: string }) {
  return (
    <Alert role="status" color="gray" variant="light" title="Not available">
      <Text size="sm">
        This server does not offer {what} yet. Upgrade the api-gateway to see it here.
      </Text>
    </Alert>
  );
}

/** Loading, missing-endpoint and error states of a query, or nothing when it has data. */
export function QueryProblem({ error, what }: { error: unknown; what: string }) {
  if (!error) return null;
  if (isEndpointMissing(error)) return <NotAvailable what={what} />;
  return <ProblemAlert error={error} />;
}
