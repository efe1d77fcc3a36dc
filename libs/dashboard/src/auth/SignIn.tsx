// The sign-in form: the API key is checked with one authenticated read before it is kept (in
// sessionStorage, for this tab only). A wrong key shows an alert and the form stays.
import { Button, Container, Paper, PasswordInput, Stack, Text, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useSession } from '../api/context';
import { ApiError } from '../api/problem';
import { ProblemAlert } from '../components/ProblemAlert';
import { useTitle } from '../components/hooks';

export function SignIn() {
  useTitle('Sign in');
  const { signIn, expired } = useSession();
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!key.trim()) {
      setError(new Error('Enter the API key of your application.'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await signIn(key.trim());
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };

  const rejected = error instanceof ApiError && error.status === 401;
  return (
    <Container size={420} py="xl">
      <Paper withBorder p="lg" radius="md">
        <form onSubmit={(e) => void submit(e)} noValidate>
          <Stack>
            <Title order={1} size="h2">
              Sign in
            </Title>
            <Text size="sm">
              Enter an API key of your application. It is kept in this browser tab only and sent to
              the API in the X-API-Key header.
            </Text>
            {expired && !error && (
              <Text size="sm" role="status">
                Your key was not accepted any more; sign in again.
              </Text>
            )}
            {rejected ? (
              <ProblemAlert error={error} title="That key was not accepted" />
            ) : (
              <ProblemAlert error={error} title="Could not sign in" />
            )}
            <PasswordInput
              label="API key"
              value={key}
              onChange={(e) => setKey(e.currentTarget.value)}
              autoComplete="off"
              spellCheck={false}
              data-autofocus
              required
            />
            <Button type="submit" loading={busy}>
              Sign in
            </Button>
          </Stack>
        </form>
      </Paper>
    </Container>
  );
}
